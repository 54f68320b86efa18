"""
The Cython Osiris chunk decoder.
"""

import gzip
import struct
import zlib

import pytest

from rbfly.amqp import MessageCtx, encode_message
from rbfly.error import AMQPDecodeError, ChunkError
from rbfly.streams.protocol._chunk import decode_chunk

def entry(data: bytes) -> bytes:
    return struct.pack('>I', len(data)) + data

def sub_batch(records: list[bytes], compression: int = 0) -> bytes:
    body = b''.join(entry(r) for r in records)
    payload = gzip.compress(body) if compression == 1 else body
    return struct.pack('>BHII', 0x80 | (compression << 4), len(records), len(body),
                       len(payload)) + payload

def chunk(entries: list[bytes], records: int, first: int = 0, *, chunk_type: int = 0,
          timestamp: int = 1_700_000_000_123, crc: int | None = None) -> bytes:
    data = b''.join(entries)
    # the spec's CRC field is an int32; pack the unsigned CRC's bits
    header = struct.pack(
        '>BBHIqQQIIIB3x', 0x50, chunk_type, len(entries), records, timestamp, 1, first,
        zlib.crc32(data) if crc is None else crc, len(data), 0, 0,
    )
    return header + data

AMQP = [encode_message(MessageCtx('m{}'.format(i))) for i in range(5)]

def test_simple_entries() -> None:
    """Each record becomes a message with its offset and the chunk's timestamp."""
    info, messages = decode_chunk(chunk([entry(m) for m in AMQP], 5, first=100))
    assert (info.first_offset, info.num_records, info.next_offset) == (100, 5, 105)
    assert [(m.stream_offset, m.body) for m in messages] == [
        (100 + i, 'm{}'.format(i)) for i in range(5)
    ]
    assert messages[0].stream_timestamp == pytest.approx(1_700_000_000.123)

def test_start_offset_skips_records() -> None:
    """Records before the requested offset are dropped."""
    _, messages = decode_chunk(chunk([entry(m) for m in AMQP], 5, first=100), start_offset=103)
    assert [m.stream_offset for m in messages] == [103, 104]

@pytest.mark.parametrize('compression', [0, 1])
def test_sub_batches(compression: int) -> None:
    """Sub-batch entries (none and gzip) count each record as an offset."""
    data = chunk([entry(AMQP[0]), sub_batch(AMQP[1:4], compression), entry(AMQP[4])], 5)
    _, messages = decode_chunk(data)
    assert [(m.stream_offset, m.body) for m in messages] == [(i, 'm{}'.format(i))
                                                             for i in range(5)]

def test_raw_records() -> None:
    """With amqp=False bodies are the records' bytes."""
    _, messages = decode_chunk(chunk([entry(b'abc'), entry(b'')], 2), amqp=False)
    assert [m.body for m in messages] == [b'abc', b'']

def test_tracking_chunk_has_no_messages() -> None:
    """Non-user chunks are skipped."""
    info, messages = decode_chunk(chunk([entry(b'x')], 1, chunk_type=1))
    assert info.chunk_type == 1 and messages == []

@pytest.mark.parametrize('data, message', [
    (chunk([entry(b'abc')], 1, crc=1), 'CRC mismatch'),
    (b'\x51' + chunk([entry(b'abc')], 1)[1:], 'magic'),
    (chunk([entry(b'abc')], 1)[:40], 'truncated'),
    (chunk([entry(b'abc')], 1)[:-1], 'exceeds'),
    (chunk([entry(b'abc')], 2), 'declares 2 records'),
    (chunk([sub_batch([b'a'], compression=3)], 1), 'compression 3'),
    # offsets past 2**64 - 1 would wrap around to 0 (a fuzzer's finding)
    (chunk([entry(b'abc')], 1, first=2**64 - 1), r'exceed 2\*\*64 - 1'),
    (chunk([entry(b'abc')], 0xffff_ffff, first=2**64 - 2**32 + 1), 'exceed'),
    (chunk([b'\x90' + b'\x00\x01' + struct.pack('>II', 1 << 30, 4) + b'abcd'], 1),
     'uncompressed bytes'),
])
def test_bad_chunks(data: bytes, message: str) -> None:
    """Malformed chunks raise ChunkError naming the problem."""
    with pytest.raises(ChunkError, match=message):
        decode_chunk(data, amqp=False)

def test_bad_amqp_record() -> None:
    """A record that is not AMQP raises AMQPDecodeError."""
    with pytest.raises(AMQPDecodeError):
        decode_chunk(chunk([entry(b'\xff\xff')], 1))

def test_random_bytes_never_crash() -> None:
    """Random chunks raise typed errors only."""
    import random
    rng = random.Random(5)
    valid = chunk([entry(m) for m in AMQP], 5)
    for _ in range(2000):
        data = bytearray(valid)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            decode_chunk(bytes(data), check_crc=rng.random() < 0.5)
        except (ChunkError, AMQPDecodeError):
            pass

def test_stream_name_on_messages() -> None:
    """The stream given is set on every message (None when not given)."""
    data = chunk([entry(AMQP[0]), sub_batch(AMQP[1:3])], 3)
    _, messages = decode_chunk(data, stream='orders-1')
    assert [m.stream for m in messages] == ['orders-1'] * 3
    _, messages = decode_chunk(data, amqp=False, stream='raw')
    assert [m.stream for m in messages] == ['raw'] * 3
    _, messages = decode_chunk(data)
    assert [m.stream for m in messages] == [None] * 3
