"""
Sans-IO splitter of a RabbitMQ Streams byte stream into frames.

Frame structure, quoted from PROTOCOL.adoc::

    Frame => Size (Request | Response | Command)
      Size => uint32 (size without the 4 bytes of the size element)

:py:class:`FrameReader` keeps the received data as a queue of chunks and
never joins the whole buffer: a frame within one chunk is returned as a
view of that chunk, without a copy, and only a frame spanning chunks is
copied, once. This is the design of asyncpg's read buffer; joining the
buffer on every read costs time quadratic in the number of chunks a large
`Deliver` frame arrives in.
"""

import struct
from collections import deque
from collections.abc import Iterator

from ...error import FrameDecodeError
from .constants import DEFAULT_MAX_RECEIVED_FRAME_SIZE

_SIZE = struct.Struct('>I')


class FrameReader:
    """
    Split received bytes into frames.

    Feed data with :py:meth:`feed`, then call :py:meth:`next_frame` until
    it returns `None`, or iterate over the reader. A frame is returned
    without its size prefix, ready for
    :py:func:`~rbfly.streams.protocol.codec.decode`.

    A returned frame is a view of the received chunk and keeps the chunk
    in memory while it is referenced.

    :param max_frame_size: Largest frame size accepted, without the size
        prefix; 0 means no limit, as `frame_max` in `Tune`.
    """

    __slots__ = ('_chunks', '_consumed', '_max_frame_size', '_size')

    def __init__(self, max_frame_size: int = DEFAULT_MAX_RECEIVED_FRAME_SIZE) -> None:
        self._chunks: deque[memoryview] = deque()
        self._size = 0
        self._consumed = 0
        self._max_frame_size = 0
        self.max_frame_size = max_frame_size

    @property
    def max_frame_size(self) -> int:
        """
        Largest frame size accepted; 0 means no limit.

        It can be changed at any time, e.g. once `Tune` is negotiated; the
        new value applies to frames whose size was not read yet.
        """
        return self._max_frame_size

    @max_frame_size.setter
    def max_frame_size(self, value: int) -> None:
        if not 0 <= value <= 0xFFFFFFFF:
            raise ValueError('maximum frame size must be in range 0..2**32 - 1')
        self._max_frame_size = value

    @property
    def buffered(self) -> int:
        """Number of bytes received and not returned as frames yet."""
        return self._size

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """
        Add received data.

        `bytes` are kept as they are; a mutable buffer is copied, because
        its owner may reuse it.
        """
        if not isinstance(data, bytes):
            data = bytes(data)
        if data:
            self._chunks.append(memoryview(data))
            self._size += len(data)

    def next_frame(self) -> memoryview | None:
        """
        Return the next complete frame, without its size prefix, or `None`
        if more data is needed.

        :raises FrameDecodeError: If the declared size of the next frame is
            larger than :py:attr:`max_frame_size`; the error is raised again
            on the next call, as the stream cannot be resynchronized.
        """
        if self._size < 4:
            return None
        head = self._chunks[0]
        if len(head) >= 4:
            size: int = _SIZE.unpack_from(head)[0]
        else:
            size = _SIZE.unpack(self._peek(4))[0]
        limit = self._max_frame_size
        if limit and size > limit:
            raise FrameDecodeError(
                f'frame size {size} exceeds the maximum of {limit} bytes',
                self._consumed,
            )
        if self._size < 4 + size:
            return None
        self._take(4)
        return self._take(size)

    def __iter__(self) -> Iterator[memoryview]:
        """Iterate over the complete frames received so far."""
        while (frame := self.next_frame()) is not None:
            yield frame

    def _peek(self, size: int) -> bytes:
        data = bytearray()
        for chunk in self._chunks:
            data += chunk[:size - len(data)]
            if len(data) == size:
                break
        return bytes(data)

    def _take(self, size: int) -> memoryview:
        chunks = self._chunks
        self._size -= size
        self._consumed += size
        if not size:
            return memoryview(b'')
        head = chunks[0]
        if len(head) > size:
            chunks[0] = head[size:]
            return head[:size]
        if len(head) == size:
            chunks.popleft()
            return head
        # the frame spans chunks: copy it once
        parts = []
        left = size
        while left:
            head = chunks[0]
            if len(head) > left:
                parts.append(head[:left])
                chunks[0] = head[left:]
                break
            parts.append(head)
            chunks.popleft()
            left -= len(head)
        return memoryview(b''.join(parts))


__all__ = ['FrameReader']
