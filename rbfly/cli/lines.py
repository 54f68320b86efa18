"""
The lines of stdin (or a file) for ``rbfly publish``, as they arrive.

A thread reads blocks (whatever the pipe holds, up to 64 KiB) and hands
them to the event loop through a bounded queue; the command takes the lines
of each block as soon as it comes, so a line of ``tail -f app.log | rbfly
publish logs`` is published at once, while a big file piped in still comes
in blocks of thousands of lines. The event loop never blocks on a read.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import io
import os
import threading
import typing as tp
from types import TracebackType

BLOCK = 64 * 1024
"""Bytes asked of one read: what a Linux pipe holds."""

QUEUED = 16
"""Blocks read ahead at most (1 MiB): a big file is not read into memory."""

_EOF: tp.Final = b''

class LineReader:
    """
    Lines of a binary source, without their line ends (``\\n``, ``\\r\\n``),
    read in a thread (an async context manager).

    :param source: A binary file: ``sys.stdin.buffer`` or a file opened
        with ``'rb'``, read through its file descriptor (``os.read`` gives
        what is ready), not through the file object: a thread blocked in
        a read of the object holds its lock, and the interpreter aborts at
        its exit ("could not acquire lock for <_io.BufferedReader
        name='<stdin>'>") on Ctrl-C under ``tail -f``. A source without a
        descriptor (``io.BytesIO``) is read with ``read1``.
    """
    def __init__(self, source: tp.BinaryIO, block: int = BLOCK, queued: int = QUEUED) -> None:
        self._source = source  # its descriptor is read: keep it open
        self._read: tp.Callable[[int], bytes]
        try:
            self._read = functools.partial(os.read, source.fileno())
        except (AttributeError, io.UnsupportedOperation):
            self._read = getattr(source, 'read1', source.read)
        self._block = block
        self._queue: asyncio.Queue[bytes | OSError | ValueError] = asyncio.Queue(queued)
        self._loop = asyncio.get_running_loop()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name='rbfly-lines', daemon=True)
        self._get: asyncio.Future[bytes | OSError | ValueError] | None = None
        self._rest = b''
        self._eof = False

    async def __aenter__(self) -> tp.Self:
        self._thread.start()
        return self

    async def __aexit__(
            self, kind: type[BaseException] | None, error: BaseException | None,
            tb: TracebackType | None,
    ) -> None:
        # a thread blocked on a read of a pipe that stays open (tail -f) is
        # left to the process's exit (a daemon); one waiting to queue ends
        self._stop.set()
        if self._get is not None:
            self._get.cancel()

    async def read(self, timeout: float | None = None) -> list[bytes] | None:
        """
        The lines of the next block read, waiting at most ``timeout``
        seconds (``None``: until one comes).

        :return: The lines (an empty list when none came in time), or
            ``None`` at the end of the input.
        :raises OSError: When the source cannot be read.
        """
        if self._eof:
            return None
        if self._get is None:
            self._get = asyncio.ensure_future(self._queue.get())
        # asyncio.wait leaves the get running on a timeout: no block is lost
        done, _ = await asyncio.wait((self._get,), timeout=timeout)
        if not done:
            return []
        item = self._get.result()
        self._get = None
        if isinstance(item, OSError | ValueError):
            raise item
        if item is _EOF:
            self._eof = True
            rest, self._rest = self._rest, b''
            return [rest.rstrip(b'\r')] if rest else None
        lines = (self._rest + item).split(b'\n')
        self._rest = lines.pop()
        return [line[:-1] if line.endswith(b'\r') else line for line in lines]

    def _run(self) -> None:
        """Read blocks until the end of the input, in the thread."""
        read = self._read
        try:
            while not self._stop.is_set():
                data = read(self._block)
                if not self._put(bytes(data)) or not data:
                    return
        except (OSError, ValueError) as ex:  # ValueError: a closed file
            self._put(ex)

    def _put(self, item: bytes | OSError | ValueError) -> bool:
        """Queue an item, waiting while the queue is full; false once stopped."""
        try:
            future = asyncio.run_coroutine_threadsafe(self._queue.put(item), self._loop)
        except RuntimeError:  # the loop is closed
            return False
        while True:
            try:
                future.result(0.2)
            except concurrent.futures.TimeoutError:
                if self._stop.is_set():
                    future.cancel()
                    return False
            except concurrent.futures.CancelledError:
                return False
            else:
                return True

__all__ = ['BLOCK', 'LineReader']
