"""
Compression codecs of sub-entry batches: ``none``, ``gzip`` built in,
``zstd``, ``lz4`` and ``snappy`` when their packages are installed, and
any codec registered with :py:func:`register_codec`.

The codecs live in the protocol layer
(:py:mod:`rbfly.streams.protocol.compression`), where Publish frames are
encoded and chunks decoded; this module is their public name.
"""

from .protocol import compression as _impl
from .protocol.compression import (
    Compress,
    Compression,
    Decompress,
    compress,
    compression_code,
    decompress,
    register_codec,
    snappy_framed_size,
)

_CODECS = _impl._CODECS  # the registry (tests restore it)

__all__ = [
    'Compress', 'Compression', 'Decompress', 'compress', 'compression_code', 'decompress',
    'register_codec', 'snappy_framed_size',
]
