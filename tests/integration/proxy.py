"""
A TCP proxy for tests: forwards connections to a broker and cuts them on
demand, to test what the client does when its connection is lost.
"""

from __future__ import annotations

import asyncio
import contextlib

class Proxy:
    """
    Forward ``127.0.0.1:<port>`` to ``host:port``.

    :ivar port: Local port the proxy listens on (after :py:meth:`start`).
    :ivar connections: Number of connections accepted so far.
    """
    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._server: asyncio.Server | None = None
        self._pairs: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0
        self.connections = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, '127.0.0.1', 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.close()
            return
        pair = (writer, up_writer)
        self._pairs.add(pair)
        for src, dst in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(self._pipe(src, dst))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pipe(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
        dst.close()

    def cut(self) -> int:
        """
        Abort every open connection (like a network failure); return how
        many were cut. New connections are still accepted.
        """
        pairs = list(self._pairs)
        self._pairs.clear()
        for a, b in pairs:
            a.transport.abort()
            b.transport.abort()
        return len(pairs)

    async def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks)
