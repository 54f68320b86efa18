"""
Compression of sub-entry batches.

A sub-entry batch packs many messages into one entry of a Publish frame,
under one publishing id, optionally compressed; the broker stores it as it
is and consumers unpack it. The compression codes are those of the stream
format (osiris): 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.

``none`` and ``gzip`` (standard library) are built in; ``zstd``, ``lz4``
and ``snappy`` too when their libraries are installed (``pip install
rbfly[compression]``: zstandard, lz4 and cramjam, bindings of the C and
Rust libraries), in the formats the Java and Go clients write: a zstd
frame, an LZ4 frame, the snappy framing format. Decompression reads at most
the size the sub-entry declares (itself at most 64 MiB), whatever the
frame claims: a small batch cannot expand into gigabytes. Other codecs are
registered by the application with :py:func:`register_codec`, for
publishing and consuming alike (replacing a built-in one, too).
"""

from __future__ import annotations

import enum
import importlib
import io
import typing as tp
import zlib
from collections.abc import Callable

from ..error import FeatureNotSupported

class Compression(enum.IntEnum):
    """Compression code of a sub-entry batch."""
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

Compress = Callable[[bytes], bytes]
Decompress = Callable[[bytes, int], bytes]
"""Decompress data; the second argument is the declared uncompressed size
(checked against a limit before the call), not to be exceeded."""

def _gzip_compress(data: bytes) -> bytes:
    c = zlib.compressobj(wbits=31)  # gzip container, as GZIPOutputStream writes
    return c.compress(data) + c.flush()

def _gzip_decompress(data: bytes, size: int) -> bytes:
    return zlib.decompressobj(wbits=31).decompress(data, size + 1)

_CODECS: dict[int, tuple[Compress, Decompress]] = {
    Compression.GZIP: (_gzip_compress, _gzip_decompress),
}

_PACKAGES: dict[int, str] = {
    Compression.ZSTD: 'zstandard', Compression.LZ4: 'lz4', Compression.SNAPPY: 'cramjam',
}
"""The package of each optional codec (the ``rbfly[compression]`` extra)."""

def missing_codec(code: int) -> str:
    """
    Why a compression has no codec, and what to install (or register).
    """
    package = _PACKAGES.get(code)
    if package is None:
        return 'no codec registered for compression {}: register one with' \
            ' rbfly.streams.compression.register_codec'.format(code)
    return 'compression {} ({}) needs the {} package, which is not installed: install' \
        ' rbfly[compression] (pip install "rbfly[compression]"), or register a codec with' \
        ' rbfly.streams.compression.register_codec'.format(
            code, Compression(code).name.lower(), package)

def _optional_codecs() -> None:
    """Register zstd and lz4 when their libraries are installed."""
    try:
        import zstandard
    except ImportError:
        pass
    else:
        # (the results named as bytes: typed where zstandard's stubs are
        # installed, Any where the package is not, CPython 3.15 for now)
        def zstd_compress(data: bytes) -> bytes:
            compressed: bytes = zstandard.ZstdCompressor().compress(data)
            return compressed

        def zstd_decompress(data: bytes, size: int) -> bytes:
            # a stream reader stops at the size asked for, whatever the
            # frame header claims (decompress() would trust it)
            reader = zstandard.ZstdDecompressor().stream_reader(
                io.BytesIO(data), read_across_frames=True,
            )
            decompressed: bytes = reader.read(size + 1)
            return decompressed

        _CODECS[Compression.ZSTD] = (zstd_compress, zstd_decompress)
    try:
        # imported by name: lz4 has no type information
        lz4_frame: tp.Any = importlib.import_module('lz4.frame')
    except ImportError:
        pass
    else:
        def lz4_compress(data: bytes) -> bytes:
            return tp.cast(bytes, lz4_frame.compress(data))

        def lz4_decompress(data: bytes, size: int) -> bytes:
            d = lz4_frame.LZ4FrameDecompressor()
            out = tp.cast(bytes, d.decompress(data, max_length=size + 1))
            if len(out) <= size and not d.eof:  # it waits for more data
                raise ValueError('truncated or invalid LZ4 frame')
            return out

        _CODECS[Compression.LZ4] = (lz4_compress, lz4_decompress)
    try:
        snappy: tp.Any = importlib.import_module('cramjam').snappy
    except ImportError:
        pass
    else:
        def snappy_compress(data: bytes) -> bytes:
            return bytes(snappy.compress(data))

        def snappy_decompress(data: bytes, size: int) -> bytes:
            if snappy_framed_size(data) > size:
                raise ValueError('snappy frames hold more than the declared size')
            return bytes(snappy.decompress(data))

        _CODECS[Compression.SNAPPY] = (snappy_compress, snappy_decompress)

SNAPPY_STREAM_ID = b'\xff\x06\x00\x00sNaPpY'

def snappy_framed_size(data: bytes) -> int:
    """
    Uncompressed size of snappy framed data, from its chunks' headers (a
    compressed chunk's block starts with its length, a varint), without
    decompressing anything.

    :raises ValueError: When the data is not in the snappy framing format.
    """
    if not data.startswith(SNAPPY_STREAM_ID):
        raise ValueError('not snappy framed data (no stream identifier)')
    total = 0
    at = len(SNAPPY_STREAM_ID)
    end = len(data)
    while at < end:
        if at + 4 > end:
            raise ValueError('truncated snappy chunk header')
        kind = data[at]
        length = int.from_bytes(data[at + 1:at + 4], 'little')
        body = at + 4
        at = body + length
        if at > end:
            raise ValueError('truncated snappy chunk')
        if kind == 0x00:  # compressed: CRC, then the block's length as a varint
            n = shift = 0
            for i in range(body + 4, min(body + 9, at)):
                n |= (data[i] & 0x7f) << shift
                shift += 7
                if data[i] < 0x80:
                    break
            else:
                raise ValueError('bad snappy block length')
            total += n
        elif kind == 0x01:  # uncompressed: CRC, then the data
            total += length - 4
        elif kind <= 0x7f:
            raise ValueError('unknown snappy chunk type 0x{:02x}'.format(kind))
        # 0x80-0xfe: skippable (padding, stream identifiers)
    return total

_optional_codecs()

def compression_code(compression: int | str) -> int:
    """
    Code of a compression given by name (``'gzip'``) or code, checked to
    have a codec.

    :raises ValueError: For an unknown name or code.
    :raises rbfly.streams.FeatureNotSupported: When no codec is registered
        for it.
    """
    code: int
    if isinstance(compression, str):
        try:
            code = Compression[compression.upper()]
        except KeyError:
            raise ValueError('unknown compression {!r} (none, gzip, snappy, lz4, zstd)'.format(
                compression,
            )) from None
    elif isinstance(compression, int) and 0 <= compression <= 7:
        code = compression
    else:
        raise ValueError('compression must be a name or a code 0..7, got {!r}'.format(
            compression,
        ))
    if code != Compression.NONE and code not in _CODECS:
        raise FeatureNotSupported(missing_codec(code))
    return int(code)

def register_codec(compression: int | str, compress: Compress, decompress: Decompress) -> None:
    """
    Register the codec of a compression code, e.g. zstd::

        import zstandard
        register_codec(
            'zstd',
            zstandard.ZstdCompressor().compress,
            lambda data, size: zstandard.ZstdDecompressor().decompress(
                data, max_output_size=size),
        )
    """
    if isinstance(compression, str):
        code = int(Compression[compression.upper()])
    else:
        code = int(compression)
    if not 1 <= code <= 7:
        raise ValueError('compression code must be 1..7, got {}'.format(code))
    _CODECS[code] = (compress, decompress)

def compress(code: int, data: bytes) -> bytes:
    """Compress data with the codec of a code."""
    return _CODECS[code][0](data)

def decompress(code: int, data: bytes, size: int) -> bytes:
    """
    Decompress data with the codec of a code.

    :raises KeyError: When no codec is registered for the code.
    """
    return _CODECS[code][1](data, size)

__all__ = [
    'Compression',
    'compress',
    'compression_code',
    'decompress',
    'missing_codec',
    'register_codec',
]
