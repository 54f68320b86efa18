"""
Limits and integrity of chunks, without a broker: the uncompressed cap per
chunk (decompression bombs), and the CRC failure policy of a subscription.
"""

import pytest

from rbfly.error import ChunkCrcError, ChunkTooLarge
from rbfly.streams.metrics import Counters
from rbfly.streams.offset import Offset
from rbfly.streams.protocol._chunk import DEFAULT_MAX_CHUNK_UNCOMPRESSED, decode_chunk
from rbfly.streams.protocol.commands import OffsetSpec
from rbfly.streams.subscriptions.options import ReadOptions
from rbfly.streams.subscriptions.subscription import Subscription

from .test_chunk import chunk, entry, sub_batch

def test_bomb_refused_before_decompressing() -> None:
    """A gzip sub-batch of a megabyte of zeros, against a 100 KiB cap."""
    bomb = sub_batch([b'\x00' * 2**20], compression=1)
    assert len(bomb) < 2**12  # a kilobyte or so on the wire
    with pytest.raises(ChunkTooLarge, match=r'max_chunk_uncompressed \(102400 bytes\)') as info:
        decode_chunk(chunk([bomb], 1), amqp=False, max_uncompressed=100 * 1024)
    assert info.value.limit == 100 * 1024
    _, messages = decode_chunk(chunk([bomb], 1), amqp=False)  # within the default
    assert len(messages) == 1 and messages[0].body == b'\x00' * 2**20

def test_cap_counts_every_sub_batch() -> None:
    """Sub-batches each under the cap, past it together."""
    batches = [sub_batch([b'x' * 40_000], compression=1) for _ in range(3)]
    data = chunk(batches, 3)
    assert len(decode_chunk(data, amqp=False, max_uncompressed=120_100)[1]) == 3
    with pytest.raises(ChunkTooLarge):
        decode_chunk(data, amqp=False, max_uncompressed=100_000)

def test_default_cap() -> None:
    assert DEFAULT_MAX_CHUNK_UNCOMPRESSED == 256 * 2**20

def subscription(skip: bool) -> Subscription:
    return Subscription(
        's', OffsetSpec.first(), 0, {}, ReadOptions(amqp=False, credit=2, skip_bad_crc=skip),
        Counters(), resume_offset=Offset.FIRST,
    )

def test_crc_failure_fails() -> None:
    """By default a chunk failing its CRC ends the subscription with ChunkCrcError."""
    sub = subscription(skip=False)
    sub.on_chunk(chunk([entry(b'a')], 1, crc=1), None)
    with pytest.raises(ChunkCrcError, match='CRC mismatch'):
        sub.poll()

def test_crc_failure_skips() -> None:
    """With skip, the chunk's messages never come; later chunks do; it is counted."""
    sub = subscription(skip=True)
    counters = sub._counters
    sub.on_chunk(chunk([entry(b'a'), entry(b'b')], 2, first=0, crc=1), None)
    sub.on_chunk(chunk([entry(b'c')], 1, first=2), None)
    skipped = sub.poll()
    assert skipped is not None and list(skipped) == [] and skipped.first_offset == 0
    assert counters.chunks_skipped == 1
    assert sub.next_offset == 2
    good = sub.poll()
    assert good is not None and [m.body for m in good] == [b'c']
