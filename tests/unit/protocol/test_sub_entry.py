"""
Sub-entry batches: the publish encoder writes them as the broker stores
them, so the chunk decoder reads back what was published; compression
codecs are built in (none, gzip) or registered.
"""

import gzip
import struct
import zlib
from collections.abc import Iterator

import pytest

from rbfly.error import ChunkError, MessageTooLarge
from rbfly.streams import FeatureNotSupported, SubEntryBatch
from rbfly.streams import compression as compression_module
from rbfly.streams.compression import Compression, compression_code, register_codec
from rbfly.streams.protocol._chunk import decode_chunk
from rbfly.streams.protocol._publish import PublishEncoder

from .test_chunk import chunk, entry

def entries(frame: bytes | memoryview) -> list[tuple[int, bytes]]:
    """Split a Publish v1 frame of sub-entry batches into (id, stored entry)."""
    size, key, version, _, count = struct.unpack_from('>IHHBI', frame)
    assert (size, key, version) == (len(frame) - 4, 2, 1)
    out, pos = [], 13
    for _ in range(count):
        (pid,) = struct.unpack_from('>Q', frame, pos)
        _, _, _, length = struct.unpack_from('>BHII', frame, pos + 8)
        end = pos + 8 + 11 + length
        out.append((pid, bytes(frame[pos + 8:end])))
        pos = end
    assert pos == len(frame)
    return out

@pytest.mark.parametrize('compression', ['none', 'gzip', 0, 1])
def test_round_trip(compression: str | int) -> None:
    batch = SubEntryBatch(['m{}'.format(i) for i in range(100)], compression)
    count, frame = PublishEncoder().encode(1, [batch, SubEntryBatch(['x'])], 0, 7)
    assert count == 2
    (pid, stored), (pid2, stored2) = entries(frame)
    assert (pid, pid2) == (7, 8)
    code = compression_code(compression)
    assert stored[0] == 0x80 | (code << 4)
    _, messages = decode_chunk(chunk([stored, stored2], 101, first=50))
    assert [m.body for m in messages] == ['m{}'.format(i) for i in range(100)] + ['x']
    assert [m.stream_offset for m in messages] == list(range(50, 151))

def test_gzip_is_a_gzip_member() -> None:
    """Other clients read gzip sub-entries with GZIP streams."""
    _, frame = PublishEncoder().encode(0, [SubEntryBatch([b'abc', b'de'], 'gzip')], 0, 1,
                                       amqp=False)
    (_, stored), = entries(frame)
    body = gzip.decompress(stored[11:])
    assert body == entry(b'abc') + entry(b'de')
    assert struct.unpack_from('>HI', stored, 1) == (2, len(body))

def test_mixed_with_plain_messages_and_binary() -> None:
    count, frame = PublishEncoder().encode(
        0, [b'a', SubEntryBatch([b'b', b'c']), b'd'], 0, 1, amqp=False,
    )
    assert count == 3
    # plain entries are size-prefixed, the sub-entry has its 0x80 type byte
    stored = [bytes(frame[21:26]), bytes(frame[34:34 + 11 + 10]), bytes(frame[34 + 21 + 8:])]
    _, messages = decode_chunk(chunk(stored, 4), amqp=False)
    assert [m.body for m in messages] == [b'a', b'b', b'c', b'd']

def test_frame_max() -> None:
    """Sub-entries that do not fit go to the next frame; one too big raises."""
    batches = [SubEntryBatch([b'x' * 100] * 10) for _ in range(5)]
    encoder = PublishEncoder(2500)
    count, frame = encoder.encode(0, batches, 0, 1, amqp=False)
    assert count == 2 and len(frame) <= 2500
    with pytest.raises(MessageTooLarge, match='sub-entry batch'):
        PublishEncoder(500).encode(0, batches, 0, 1, amqp=False)

def test_bad_batches() -> None:
    with pytest.raises(ValueError, match=r'1\.\.65535'):
        SubEntryBatch([])
    with pytest.raises(ValueError, match=r'1\.\.65535'):
        SubEntryBatch([b''] * 65536)
    with pytest.raises(ValueError, match='unknown compression'):
        SubEntryBatch(['a'], 'brotli')
    with pytest.raises(FeatureNotSupported, match='no codec registered for compression 5'):
        SubEntryBatch(['a'], 5)
    with pytest.raises(ValueError, match='filter value'):
        PublishEncoder().encode(0, [SubEntryBatch(['a'])], 0, 1, filter_values=[None])
    with pytest.raises(TypeError, match='binary publisher needs bytes'):
        PublishEncoder().encode(0, [SubEntryBatch(['a'])], 0, 1, amqp=False)
    assert repr(SubEntryBatch(['a'], 'gzip')) == 'SubEntryBatch(1 messages, compression=1)'
    assert len(SubEntryBatch(['a', 'b'])) == 2

@pytest.fixture(autouse=True)
def codecs() -> Iterator[None]:
    """Codecs registered by a test are gone after it."""
    saved = dict(compression_module._CODECS)
    yield
    compression_module._CODECS.clear()
    compression_module._CODECS.update(saved)

def test_registered_codec() -> None:
    """An application's codec (here zlib under code 6) both ways."""
    def decompress(data: bytes, size: int) -> bytes:
        return zlib.decompressobj().decompress(data, size + 1)

    register_codec(6, zlib.compress, decompress)
    _, frame = PublishEncoder().encode(0, [SubEntryBatch(['a', 'b'], 6)], 0, 1)
    (_, stored), = entries(frame)
    assert stored[0] == 0x80 | (6 << 4)
    _, messages = decode_chunk(chunk([stored], 2))
    assert [m.body for m in messages] == ['a', 'b']

def test_unregistered_codec_in_chunk() -> None:
    body = entry(b'x')
    stored = struct.pack('>BHII', 0x80 | (7 << 4), 1, len(body), len(body)) + body
    with pytest.raises(ChunkError, match='no codec registered'):
        decode_chunk(chunk([stored], 1))

def test_failing_codec_in_chunk() -> None:
    def broken(data: bytes, size: int) -> bytes:
        raise OSError('corrupt')

    register_codec('snappy', lambda d: d, broken)
    body = entry(b'x')
    stored = struct.pack('>BHII', 0x80 | (2 << 4), 1, len(body), len(body)) + body
    with pytest.raises(ChunkError, match='invalid sub-batch of compression 2: corrupt'):
        decode_chunk(chunk([stored], 1))


@pytest.mark.parametrize('name', ['zstd', 'lz4', 'snappy'])
def test_built_in_when_installed(name: str) -> None:
    """zstd, lz4 and snappy both ways, with their libraries installed (the tests' extras)."""
    batch = SubEntryBatch(['m{}'.format(i) for i in range(500)], name)
    _, frame = PublishEncoder().encode(0, [batch], 0, 1)
    (_, stored), = entries(frame)
    assert stored[0] == 0x80 | (Compression[name.upper()] << 4)
    _, messages = decode_chunk(chunk([stored], 500))
    assert [m.body for m in messages] == ['m{}'.format(i) for i in range(500)]

def _foreign(name: str, records: list[bytes], declared: int | None = None) -> bytes:
    """A sub-entry as another implementation (cramjam, in Rust) compresses it."""
    import cramjam
    body = b''.join(entry(r) for r in records)
    payload = bytes(getattr(cramjam, name).compress(body))
    size = len(body) if declared is None else declared
    code = Compression[name.upper()]
    return struct.pack('>BHII', 0x80 | (code << 4), len(records), size, len(payload)) + payload

@pytest.mark.parametrize('name', ['zstd', 'lz4'])
def test_reads_other_implementations(name: str) -> None:
    """A zstd frame and an LZ4 frame written by another implementation."""
    records = [b'r%d' % i for i in range(300)]
    _, messages = decode_chunk(chunk([_foreign(name, records)], 300), amqp=False)
    assert [m.body for m in messages] == records

@pytest.mark.parametrize('name', ['zstd', 'lz4'])
def test_decompression_bounded_by_declared_size(name: str) -> None:
    """
    A batch expanding beyond its declared size is refused after reading
    just past that size (100 MB of records declared as 1 kB).
    """
    records = [bytes(1_000_000)] * 100
    stored = _foreign(name, records, declared=1000)
    assert len(stored) < 1_000_000
    with pytest.raises(ChunkError, match='does not match declared 1000'):
        decode_chunk(chunk([stored], 100), amqp=False)


def _crc32c_masked(data: bytes) -> int:
    """The snappy framing format's checksum (CRC-32C, masked), bit by bit."""
    crc = 0xffffffff
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82f63b78 if crc & 1 else 0)
    crc ^= 0xffffffff
    return (((crc >> 15) | (crc << 17)) + 0xa282ead8) & 0xffffffff

def _snappy_framed(blocks: list[bytes]) -> bytes:
    """Snappy framed data of uncompressed chunks, written by hand (the spec)."""
    out = [b'\xff\x06\x00\x00sNaPpY', b'\xfe\x02\x00\x00\x00\x00']  # + padding
    for block in blocks:
        body = struct.pack('<I', _crc32c_masked(block)) + block
        out.append(b'\x01' + len(body).to_bytes(3, 'little') + body)
    return b''.join(out)

def test_snappy_reads_the_framing_format() -> None:
    """Snappy framed data written by hand: uncompressed chunks, padding."""
    records = [b'r%d' % i for i in range(300)]
    body = b''.join(entry(r) for r in records)
    payload = _snappy_framed([body[:1000], body[1000:]])
    assert compression_module.snappy_framed_size(payload) == len(body)
    stored = struct.pack('>BHII', 0x80 | (2 << 4), 300, len(body), len(payload)) + payload
    _, messages = decode_chunk(chunk([stored], 300), amqp=False)
    assert [m.body for m in messages] == records

def test_snappy_writes_the_framing_format() -> None:
    """What rbfly writes starts with the stream identifier, as Java and Go read it."""
    _, frame = PublishEncoder().encode(0, [SubEntryBatch(['a'] * 100, 'snappy')], 0, 1)
    (_, stored), = entries(frame)
    assert stored[11:21] == b'\xff\x06\x00\x00sNaPpY'

@pytest.mark.parametrize('data, message', [
    (b'\x00\x00\x00', 'no stream identifier'),
    (b'\xff\x06\x00\x00sNaPpY\x01\x10\x00', 'truncated snappy chunk header'),
    (b'\xff\x06\x00\x00sNaPpY\x01\x10\x00\x00abc', 'truncated snappy chunk'),
    (b'\xff\x06\x00\x00sNaPpY\x02\x01\x00\x00x', 'unknown snappy chunk type 0x02'),
])
def test_snappy_bad_frames(data: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        compression_module.snappy_framed_size(data)

def test_snappy_bounded_by_declared_size() -> None:
    """100 MB of records declared as 1 kB: refused before decompressing."""
    records = [bytes(1_000_000)] * 100
    stored = _foreign('snappy', records, declared=1000)
    assert len(stored) < 10_000_000
    with pytest.raises(ChunkError, match='more than the declared size'):
        decode_chunk(chunk([stored], 100), amqp=False)

@pytest.mark.parametrize('name, code, package', [
    ('zstd', 4, 'zstandard'), ('lz4', 3, 'lz4'), ('snappy', 2, 'cramjam'),
])
def test_missing_optional_codec_names_the_extra(name: str, code: int, package: str) -> None:
    """Without its package, an optional codec's error names the package and the extra."""
    compression_module._CODECS.pop(code, None)
    with pytest.raises(FeatureNotSupported) as info:
        SubEntryBatch(['a'], name)
    text = str(info.value)
    assert 'compression {} ({})'.format(code, name) in text
    assert package in text and 'rbfly[compression]' in text
    body = entry(b'x')
    stored = struct.pack('>BHII', 0x80 | (code << 4), 1, len(body), len(body)) + body
    with pytest.raises(ChunkError, match=r'rbfly\[compression\]'):
        decode_chunk(chunk([stored], 1))
