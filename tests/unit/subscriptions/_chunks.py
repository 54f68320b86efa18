"""
Chunks as the broker sends them, for the tests that hand them to a
subscription as its connection would (no sockets).
"""

from __future__ import annotations

import struct
import zlib

def chunk(first: int, records: int, chunk_type: int = 0) -> bytes:
    """
    A chunk of ``records`` one-byte messages from offset ``first`` (not
    AMQP), of ``chunk_type`` (0: user data; 1, 2: the broker's tracking,
    a delta and a snapshot).
    """
    data = b''.join(struct.pack('>I', 1) + b'x' for _ in range(records))
    return struct.pack(
        '>BBHIqQQIIIB3x', 0x50, chunk_type, records, records, 1_700_000_000_000, 1, first,
        zlib.crc32(data), len(data), 0, 0,
    ) + data
