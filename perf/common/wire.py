"""
A TCP proxy that counts the publishing frames of every client passing
through it, per stream: how many Publish frames carried how many messages,
and how many PublishConfirm frames confirmed them. ``perf.publish
--frames`` runs each implementation through it, to compare the frame
sizes the clients send, a cost of the broker's per frame (parsing a frame,
handing its messages to the stream's writer, a confirmation to send back).

Written from the protocol specification (PROTOCOL.adoc), as
:py:mod:`perf.common.raw`: every frame is ``uint32 size``, then ``uint16
key``, ``uint16 version`` and the command's fields::

    DeclarePublisherRequest => Key Version CorrelationId PublisherId
                               [PublisherReference] Stream
      PublisherId => uint8, PublisherReference => string, Stream => string
    Publish => Key Version PublisherId PublishedMessages
      PublishedMessages => [PublishedMessage]          (int32 count first)
    PublishConfirm => Key Version PublisherId PublishingIds
      PublishingIds => [int64]                         (int32 count first)

Only the frames' headers are read (no message is decoded); the bytes go
on as they came. The proxy costs a copy of every byte in this process,
and its own latency: the rates of a run through it are lower than
without, and what counts is the shape (messages a frame), not the rate.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses as dtc
import struct
from collections.abc import Callable, Iterator

DECLARE_PUBLISHER = 0x0001
PUBLISH = 0x0002
PUBLISH_CONFIRM = 0x0003

@dtc.dataclass
class StreamFrames:
    """
    The publishing frames of one stream.

    :ivar publish_frames: Publish frames sent by clients.
    :ivar published: Messages (entries) in them.
    :ivar confirm_frames: PublishConfirm frames sent by the broker.
    :ivar confirmed: Publishing ids confirmed by them.
    :ivar max_frame: The most messages one Publish frame carried.
    """
    publish_frames: int = 0
    published: int = 0
    confirm_frames: int = 0
    confirmed: int = 0
    max_frame: int = 0

    def as_json(self) -> dict[str, float]:
        return {
            **dtc.asdict(self),
            'msg_per_frame': self.published / self.publish_frames if self.publish_frames else 0,
            'msg_per_confirm': self.confirmed / self.confirm_frames if self.confirm_frames else 0,
        }

def _string(data: bytes | bytearray, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from('>h', data, pos)
    pos += 2
    if n < 0:
        return '', pos
    return bytes(data[pos:pos + n]).decode(errors='replace'), pos + n

def _frames(buf: bytearray, data: bytes) -> Iterator[tuple[int, int]]:
    """
    Append ``data`` to ``buf`` and yield the key and start (the key's
    position) of each complete frame in it, in order; the frames read
    are dropped from ``buf`` once the caller has read them all (the loop
    over this generator ended), an incomplete frame stays for the next
    data.

    One splitter for both directions of a connection: the client's bytes
    and the broker's are framed alike.
    """
    buf.extend(data)
    pos = 0
    n = len(buf)
    while n - pos >= 4:
        (size,) = struct.unpack_from('>I', buf, pos)
        if n - pos - 4 < size:
            break
        start = pos + 4
        (key,) = struct.unpack_from('>H', buf, start)
        yield key, start
        pos = start + size
    del buf[:pos]

class _Connection:
    """One client connection: its publishers' streams, and its frames split in both ways."""

    def __init__(self, counter: FrameCounter) -> None:
        self.counter = counter
        self.publishers: dict[int, str] = {}
        self.up = bytearray()  # the client's bytes of an incomplete frame
        self.down = bytearray()  # the broker's

    def client_data(self, data: bytes) -> None:
        buf = self.up
        for key, start in _frames(buf, data):
            if key == PUBLISH:
                stats, count = self._counted(buf, start)
                stats.publish_frames += 1
                stats.published += count
                stats.max_frame = max(stats.max_frame, count)
            elif key == DECLARE_PUBLISHER:
                pid = buf[start + 8]
                _, p = _string(buf, start + 9)
                stream, _ = _string(buf, p)
                self.publishers[pid] = stream

    def broker_data(self, data: bytes) -> None:
        buf = self.down
        for key, start in _frames(buf, data):
            if key == PUBLISH_CONFIRM:
                stats, count = self._counted(buf, start)
                stats.confirm_frames += 1
                stats.confirmed += count

    def _counted(self, buf: bytearray, start: int) -> tuple[StreamFrames, int]:
        """
        The figures of the stream a Publish or PublishConfirm frame's
        publisher writes to, and the frame's count (``PublisherId`` then
        an int32 count, after the key and version: messages or ids).
        """
        pid, count = struct.unpack_from('>Bi', buf, start + 4)
        return self.counter.stream(self.publishers.get(pid, '')), count

class FrameCounter:
    """
    Forward ``127.0.0.1:<port>`` to ``host:port``, counting publishing
    frames per stream (see :py:meth:`take`).

    :ivar port: The local port (after :py:meth:`start`).
    """
    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._streams: dict[str, StreamFrames] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    def stream(self, name: str) -> StreamFrames:
        stats = self._streams.get(name)
        if stats is None:
            stats = self._streams[name] = StreamFrames()
        return stats

    def take(self, stream: str) -> StreamFrames:
        """The frames of a stream so far (forgotten here)."""
        return self._streams.pop(stream, StreamFrames())

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, '127.0.0.1', 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for w in list(self._writers):
            w.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        conn = _Connection(self)
        self._writers.update((writer, up_writer))
        for src, dst, parse in (
                (reader, up_writer, conn.client_data), (up_reader, writer, conn.broker_data)):
            task = asyncio.create_task(self._pipe(src, dst, parse))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pipe(
            self, src: asyncio.StreamReader, dst: asyncio.StreamWriter,
            parse: Callable[[bytes], None],
    ) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await src.read(1 << 18):
                parse(data)
                dst.write(data)
                await dst.drain()
        dst.close()
        self._writers.discard(dst)

__all__ = ['FrameCounter', 'StreamFrames']
