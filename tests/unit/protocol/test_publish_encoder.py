"""
The Cython Publish frame encoder, checked against the protocol codec.
"""

import pytest

from rbfly.amqp import MessageCtx, decode_amqp
from rbfly.error import MessageTooLarge
from rbfly.streams.protocol import Publish, PublishV2, decode
from rbfly.streams.protocol._publish import POOLED_FRAME, PublishEncoder

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

def test_big_frames_from_a_pool() -> None:
    """
    A frame of at least POOLED_FRAME bytes is a view of a pooled buffer:
    the encoder never writes into a buffer a frame still refers to (the
    transport holds it until written), and reuses one once let go.
    """
    encoder = PublishEncoder(POOLED_FRAME * 3)
    big = [b'%03d' % i + b'x' * (POOLED_FRAME * 2) for i in range(20)]
    held = []
    for i in range(3):
        count, frame = encoder.encode(1, big, i, 1 + i, amqp=False)
        assert count == 1 and isinstance(frame, memoryview)
        held.append((frame, bytes(frame)))
    for frame, copy in held:  # each kept its content
        assert frame == copy
    owners = {id(frame.obj) for frame, _ in held}
    assert len(owners) == 3
    released = id(held.pop()[0].obj)
    del frame  # the loop's last: the one popped
    # the next frame is written in the buffer the encoder was using, the
    # one after it in the buffer let go of
    _, f4 = encoder.encode(1, big, 4, 5, amqp=False)
    _, f5 = encoder.encode(1, big, 5, 6, amqp=False)
    assert isinstance(f5, memoryview) and id(f5.obj) == released
    for pid, frame in ((5, f4), (6, f5)):
        cmd = decode(frame[4:])
        assert isinstance(cmd, Publish)
        assert [(p, bytes(m)) for p, m in cmd.messages] == [(pid, big[pid - 1])]
    for frame, copy in held:
        assert frame == copy

def test_pool_exhausted_gives_bytes() -> None:
    """With every pooled buffer still referred to, frames are bytes again."""
    encoder = PublishEncoder(POOLED_FRAME + 100)
    big = [b'x' * POOLED_FRAME] * 20
    frames = [encoder.encode(1, big, i, 1 + i, amqp=False)[1] for i in range(20)]
    kinds = [type(f) for f in frames]
    assert memoryview in kinds and kinds[-1] is bytes
    assert all(bytes(f)[13 + 8 + 4:] == big[0] for f in frames)

def test_small_frames_are_bytes() -> None:
    """A frame under POOLED_FRAME bytes is a bytes object of its own."""
    _, frame = PublishEncoder(1 << 20).encode(1, [b'x' * (POOLED_FRAME - 100)], 0, 1, False)
    assert type(frame) is bytes

def test_big_body_not_fitting_is_not_copied_in() -> None:
    """
    A big body that cannot fit after other messages ends the frame before
    it; alone in the next frame it fits (the frame limit is kept either
    way).
    """
    encoder = PublishEncoder(100_000)
    messages = [b'a' * 60_000, b'b' * 60_000]
    count, first = encoder.encode(1, messages, 0, 1, amqp=False)
    assert count == 1 and len(first) <= 100_000
    count, second = encoder.encode(1, messages, 1, 2, amqp=False)
    assert count == 1
    cmd = decode(second[4:])
    assert isinstance(cmd, Publish)
    assert [(pid, bytes(m)) for pid, m in cmd.messages] == [(2, messages[1])]

def test_too_large_refused_before_copying() -> None:
    """
    A body bigger than a frame is refused before it is copied in: the error
    names its size, and the encoder's buffers stay small.
    """
    encoder = PublishEncoder(1 << 20)
    with pytest.raises(MessageTooLarge, match='message of 100000000 bytes'):
        encoder.encode(0, [b'x' * 100_000_000], 0, 1, amqp=False)
    frames = [encoder.encode(0, [b'y' * POOLED_FRAME], 0, 1, amqp=False)[1] for _ in range(3)]
    assert all(len(f.obj) <= 4 * POOLED_FRAME for f in frames)  # type: ignore[union-attr,arg-type]

class Text(str):
    """A str subclass: not the fast path of a short ASCII str body."""

@pytest.mark.parametrize('body', [
    '', 'a', '0123456789', 'x' * 255,  # short ASCII: written at once
    'x' * 256, 'żółw', 'ż' * 200, '\U0001f600', Text('abc'),  # the general way
])
def test_str_bodies_golden(body: str) -> None:
    """
    A bare str body is an amqp-value section holding an AMQP string (str8
    up to 255 UTF-8 bytes, str32 above), whichever way the encoder takes.
    """
    data = body.encode('utf-8')
    header = b'\xa1' + bytes([len(data)]) if len(data) <= 255 \
        else b'\xb1' + len(data).to_bytes(4, 'big')
    count, frame = PublishEncoder().encode(0, [body], 0, 1)
    cmd = decode(frame[4:])
    assert count == 1 and isinstance(cmd, Publish)
    [(pid, message)] = cmd.messages
    assert pid == 1
    assert bytes(message) == b'\x00\x53\x77' + header + data
    assert decode_amqp(bytes(message)).body == body

def test_str_body_with_a_surrogate() -> None:
    """A str not encodable as UTF-8 is refused, as before the fast path."""
    from rbfly.error import AMQPEncodeError
    with pytest.raises(AMQPEncodeError, match='not encodable as UTF-8'):
        PublishEncoder().encode(0, ['\ud800'], 0, 1)
