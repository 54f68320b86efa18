"""
Reading a ``Publish`` frame as the fake broker stores it: its messages may
be sub-entry batches, which the broker keeps as they are, so the fake
broker reads the frame itself instead of with rbfly's codec.
"""

from __future__ import annotations

import struct

from ..error import FrameDecodeError
from .store import Entry

_U8 = struct.Struct('>B')
_U16 = struct.Struct('>H')
_I16 = struct.Struct('>h')
_U32 = struct.Struct('>I')
_U64 = struct.Struct('>Q')
_SUB_BATCH = struct.Struct('>BHII')

def read_publish(frame: memoryview) -> tuple[int, list[tuple[int, Entry]]]:
    """
    Read a ``Publish`` frame (version 1 or 2, key and version included):
    the publisher id and, for each message, its publishing id and the entry
    to store. A message is a size-prefixed record or a sub-entry batch
    (its first bit set), kept as it is.

    :raises FrameDecodeError: When the frame is truncated or has bytes left.
    """
    size = len(frame)
    pos = 0

    def take(n: int, what: str) -> int:
        nonlocal pos
        if pos + n > size:
            raise FrameDecodeError('Publish frame truncated at {}'.format(what), pos)
        start = pos
        pos += n
        return start

    version = _U16.unpack_from(frame, take(4, 'key and version') + 2)[0]
    publisher_id = _U8.unpack_from(frame, take(1, 'publisher id'))[0]
    count = _U32.unpack_from(frame, take(4, 'message count'))[0]
    messages = []
    for _ in range(count):
        pid = _U64.unpack_from(frame, take(8, 'publishing id'))[0]
        filter_value = None
        if version == 2:
            n = _I16.unpack_from(frame, take(2, 'filter value'))[0]
            if n >= 0:
                raw = bytes(frame[take(n, 'filter value'):pos])
                try:
                    filter_value = raw.decode()
                except UnicodeDecodeError as ex:
                    raise FrameDecodeError('filter value is not UTF-8: {!r}'.format(raw), pos) \
                        from ex
        if pos < size and frame[pos] & 0x80:
            start = take(_SUB_BATCH.size, 'sub-entry batch')
            _, records, _, length = _SUB_BATCH.unpack_from(frame, start)
            take(length, 'sub-entry batch')
            entry = Entry(bytes(frame[start:pos]), records, filter_value)
        else:
            start = take(4, 'message size')
            length = _U32.unpack_from(frame, start)[0]
            take(length, 'message')
            entry = Entry(bytes(frame[start:pos]), 1, filter_value)
        messages.append((pid, entry))
    if pos != size:
        raise FrameDecodeError('{} bytes left after the Publish messages'.format(size - pos), pos)
    return publisher_id, messages
