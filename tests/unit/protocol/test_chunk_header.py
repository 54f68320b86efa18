"""
The chunk header reader (:py:func:`~rbfly.streams.protocol._chunk.read_header`):
the one place above the decoder that knows the header's layout.
"""

import struct
import zlib

import pytest

from rbfly.error import ChunkError
from rbfly.streams.protocol._chunk import decode_chunk, read_header

def chunk(records: int, first: int, *, chunk_type: int = 0, magic: int = 0x50,
          timestamp: int = 1_700_000_000_123, crc: int | None = None) -> bytes:
    data = b''.join(struct.pack('>I', 3) + b'abc' for _ in range(records))
    header = struct.pack(
        '>BBHIqQQIIIB3x', magic, chunk_type, records, records, timestamp, 7, first,
        zlib.crc32(data) if crc is None else crc, len(data), 0, 0,
    )
    return header + data

@pytest.mark.parametrize('kind', [bytes, bytearray, memoryview])
def test_fields(kind: type) -> None:
    """Type, record count, timestamp and first offset, as decoding reads them."""
    data = chunk(3, 2**63, chunk_type=1)
    info = read_header(kind(data))
    assert (info.chunk_type, info.num_records, info.num_entries) == (1, 3, 3)
    assert (info.first_offset, info.next_offset, info.epoch) == (2**63, 2**63 + 3, 7)
    assert info.timestamp == pytest.approx(1_700_000_000.123)
    decoded, _ = decode_chunk(data, amqp=False)
    assert repr(decoded) == repr(info)

def test_header_only() -> None:
    """Only the header is read: a chunk whose data is cut or corrupt is read."""
    data = chunk(2, 10, crc=1)
    assert read_header(data[:48]).next_offset == 12
    assert read_header(data).next_offset == 12

def test_negative_timestamp() -> None:
    """The timestamp is a signed number of milliseconds."""
    assert read_header(chunk(1, 0, timestamp=-1500)).timestamp == -1.5

@pytest.mark.parametrize('data, message', [
    (b'', 'truncated data: 48 bytes needed, 0 left'),
    (chunk(1, 0)[:47], 'truncated data: 48 bytes needed, 47 left'),
    (chunk(1, 0, magic=0x51), 'magic'),
    (chunk(1, 2**64 - 1), r'exceed 2\*\*64 - 1'),
])
def test_bad_header(data: bytes, message: str) -> None:
    """A short or unknown header raises ChunkError, as decoding the chunk does."""
    with pytest.raises(ChunkError, match=message):
        read_header(data)
    with pytest.raises(ChunkError, match=message):
        decode_chunk(data, amqp=False)
