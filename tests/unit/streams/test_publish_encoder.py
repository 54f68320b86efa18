"""
The Cython Publish frame encoder, checked against the protocol codec.
"""

import pytest

from rbfly.amqp import MessageCtx, decode_amqp
from rbfly.error import MessageTooLarge
from rbfly.streams.protocol import Publish, PublishV2, decode
from rbfly.streams.protocol._publish import PublishEncoder

def test_amqp_messages() -> None:
    """Messages get consecutive publishing ids and AMQP bodies."""
    count, frame = PublishEncoder().encode(3, ['a', MessageCtx(b'b')], 0, 10)
    assert count == 2
    cmd = decode(frame[4:])
    assert isinstance(cmd, Publish)
    assert cmd.publisher_id == 3
    assert [pid for pid, _ in cmd.messages] == [10, 11]
    assert [decode_amqp(bytes(m)).body for _, m in cmd.messages] == ['a', b'b']

def test_binary_messages_and_start() -> None:
    """Raw messages are copied as they are; ``start`` skips earlier ones."""
    count, frame = PublishEncoder().encode(
        0, [b'skip', b'x', bytearray(b'y' * 300), memoryview(b'z')], 1, 5, amqp=False,
    )
    cmd = decode(frame[4:])
    assert count == 3
    assert isinstance(cmd, Publish)
    assert [(pid, bytes(m)) for pid, m in cmd.messages] == [
        (5, b'x'), (6, b'y' * 300), (7, b'z'),
    ]

def test_filter_values_use_version_2() -> None:
    """Filter values switch to Publish v2; None means no value."""
    _, frame = PublishEncoder().encode(1, [b'a', b'b'], 0, 1, False, ['żółty', None])
    cmd = decode(frame[4:])
    assert isinstance(cmd, PublishV2)
    assert [(pid, fv, bytes(m)) for pid, fv, m in cmd.messages] == [
        (1, 'żółty', b'a'), (2, None, b'b'),
    ]

def test_frame_max_splits() -> None:
    """Only as many messages as fit into the frame maximum are encoded."""
    encoder = PublishEncoder(1000)
    messages = [b'x' * 100] * 20
    count, frame = encoder.encode(0, messages, 0, 1, amqp=False)
    assert len(frame) <= 1000
    assert count == (1000 - 13) // 112
    count2, _ = encoder.encode(0, messages, count, 1 + count, amqp=False)
    assert count2 == count

def test_message_too_large() -> None:
    """A message larger than a frame is a typed error."""
    with pytest.raises(MessageTooLarge):
        PublishEncoder(100).encode(0, [b'x' * 200], 0, 1, amqp=False)

def test_wrong_binary_type() -> None:
    """A binary publisher refuses non-bytes."""
    with pytest.raises(TypeError, match='needs bytes'):
        PublishEncoder().encode(0, ['text'], 0, 1, amqp=False)
