"""
A TCP proxy for tests: forwards connections to a broker, and cuts them or
holds the broker's data back on demand, to test what the client does when
its connection is lost or the broker does not answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl as _ssl
from collections.abc import Callable

class Proxy:
    """
    Forward ``127.0.0.1:<port>`` to ``host:port`` (with ``more`` targets,
    each connection to the next target in turn, as a round-robin load
    balancer); with ``ssl``, a server's TLS context, it ends TLS and
    forwards the plain bytes (https in front of an http server).

    :ivar port: Local port the proxy listens on (after :py:meth:`start`).
    :ivar connections: Number of connections accepted so far.
    :ivar accepted: When each was accepted (the event loop's time).
    """
    def __init__(
            self, host: str, port: int, more: tuple[tuple[str, int], ...] = (),
            ssl: _ssl.SSLContext | None = None,
    ) -> None:
        self._targets = ((host, port), *more)
        self._ssl = ssl
        self._server: asyncio.Server | None = None
        self._pairs: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0
        self.connections = 0
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._hold_key: int | None = None
        self._drop_key: int | None = None
        self.accepted: list[float] = []
        self.mangle: Callable[[bytes], bytes] | None = None
        """Applied to what the broker sends, e.g. to corrupt it (``None``: as is)."""

    @property
    def targets(self) -> tuple[tuple[str, int], ...]:
        """Where the proxy forwards connections to, in turn."""
        return self._targets

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, '127.0.0.1', 0, ssl=self._ssl)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        target = self._targets[self.connections % len(self._targets)]
        self.connections += 1
        self.accepted.append(asyncio.get_running_loop().time())
        try:
            up_reader, up_writer = await asyncio.open_connection(*target)
        except OSError:
            writer.close()
            return
        pair = (writer, up_writer)
        self._pairs.add(pair)
        for src, dst, held in ((reader, up_writer, False), (up_reader, writer, True)):
            task = asyncio.create_task(self._pipe(src, dst, held, pair))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pipe(
            self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, held: bool,
            pair: tuple[asyncio.StreamWriter, asyncio.StreamWriter],
    ) -> None:
        pending = b''  # the client's bytes of an incomplete frame
        dropping = b''  # the same, looked at for the key of drop_on()
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await src.read(65536):
                if held:
                    await self._flowing.wait()
                    if self.mangle is not None:
                        data = self.mangle(data)
                elif self._hold_key is not None:
                    pending = self._watch(pending + data)
                if not held and self._drop_key is not None:
                    dropping, found = self._find(self._drop_key, dropping + data)
                    if found:
                        self._pairs.discard(pair)
                        for writer in pair:
                            writer.transport.abort()
                        break
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

    def hold(self) -> None:
        """
        Keep what the broker sends from the client (the connections stay
        open; the client's data still reaches the broker).
        """
        self._flowing.clear()

    def hold_on(self, key: int) -> None:
        """
        Hold what the broker sends from the moment the client sends a
        command with this key (e.g. 0x0007, Subscribe): its answer, and
        all after it, until :py:meth:`release`.
        """
        self._hold_key = key

    def _watch(self, data: bytes) -> bytes:
        """Look for the key in the client's frames; return the incomplete rest."""
        while len(data) >= 6:
            size = int.from_bytes(data[:4], 'big')
            if int.from_bytes(data[4:6], 'big') & 0x7fff == self._hold_key:
                self._hold_key = None
                self.hold()
                return b''
            if len(data) < 4 + size:
                break
            data = data[4 + size:]
        return data

    @property
    def holding(self) -> bool:
        """
        Whether the broker's data is held now (after :py:meth:`hold`, or
        once the client sent the command :py:meth:`hold_on` waits for).
        """
        return not self._flowing.is_set()

    def drop_on(self, key: int | None) -> None:
        """
        Cut every connection, from now on, when the client sends a command
        with this key (e.g. 0x0001, DeclarePublisher): the broker never
        gets it (as a broker that accepts connections and drops each one
        as the client declares what it had); ``None``: no more.
        """
        self._drop_key = key

    @staticmethod
    def _find(key: int, data: bytes) -> tuple[bytes, bool]:
        """Look for a key in the client's frames: the incomplete rest, and whether found."""
        while len(data) >= 6:
            size = int.from_bytes(data[:4], 'big')
            if int.from_bytes(data[4:6], 'big') & 0x7fff == key:
                return b'', True
            if len(data) < 4 + size:
                break
            data = data[4 + size:]
        return data, False

    def release(self) -> None:
        """Deliver what was held, and forward again."""
        self._flowing.set()

    async def close(self) -> None:
        self.release()
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks)
