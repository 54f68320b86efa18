"""
What a subscription learns from a chunk's header as it arrives (read by the
core's header reader): where the next chunk starts, for subscribing again
after a lost connection.
"""

import pytest

from rbfly.error import ChunkError
from rbfly.streams.offset import Offset
from rbfly.streams.protocol.commands import OffsetSpec
from rbfly.streams.subscriptions.options import ReadOptions
from rbfly.streams.subscriptions.subscription import Subscription

from ._chunks import chunk

def subscription() -> Subscription:
    return Subscription(
        's', OffsetSpec.first(), 0, {}, ReadOptions(amqp=False), resume_offset=Offset.FIRST,
    )

def test_received_offset() -> None:
    """After a user chunk: its last offset + 1; a tracking chunk does not move it."""
    sub = subscription()
    assert sub.received_offset is None
    sub.on_chunk(chunk(10, 5), None)
    assert sub.received_offset == 15
    sub.on_chunk(chunk(15, 2, chunk_type=1), None)
    assert sub.received_offset == 15
    assert sub.resume_spec() == OffsetSpec.offset(15)

@pytest.mark.parametrize('data', [b'', b'\x50' + bytes(30), b'\x51' + chunk(10, 1)[1:]])
def test_malformed_chunk(data: bytes) -> None:
    """
    A chunk without a valid header moves nothing as it arrives; taking it
    raises the error.
    """
    sub = subscription()
    sub.on_chunk(chunk(0, 3), None)
    sub.on_chunk(data, None)
    assert sub.received_offset == 3
    assert sub.buffered_chunks == 2
    assert [m.body for m in sub.poll() or []] == [b'x'] * 3
    with pytest.raises(ChunkError):
        sub.poll()
