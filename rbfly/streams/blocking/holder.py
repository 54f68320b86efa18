"""
Holding an async context (a publisher's) open on a client's loop for
blocking code: one task enters it, waits for the release and leaves it, so
that the context is entered and left by the same task, as the async API
expects.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import typing as tp

from ..error import RequestTimeout
from .loop import ClientClosed, LoopThread, wait

T = tp.TypeVar('T')

class _Abandon(Exception):
    """Raised in the held context to leave it as on an error (sends without waiting)."""

class Held(tp.Generic[T]):
    """
    An async context manager held open on a loop.

    :param runner: The client's loop.
    :param manager: The context manager (made on the loop).
    :param timeout: Seconds to wait for it to open, and to close.
    :param what: What it is, for the errors.
    """
    def __init__(
            self, runner: LoopThread,
            manager: tp.Callable[[], contextlib.AbstractAsyncContextManager[T]],
            timeout: float | None, what: str,
    ) -> None:
        self._runner = runner
        self._timeout = timeout
        self._what = what
        self._opened: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._release: asyncio.Event | None = None
        self._holder: asyncio.Task[tp.Any] | None = None
        self._failed = False
        self._task = runner.submit(self._hold(manager))
        either: list[concurrent.futures.Future[tp.Any]] = [self._opened, self._task]
        concurrent.futures.wait(
            either, timeout, concurrent.futures.FIRST_COMPLETED,
        )
        if self._opened.done():
            self.value = self._opened.result()
            return
        if self._task.done():
            self._task.result()  # its error
        self._task.cancel()  # the context, opening, is left by the cancellation
        raise RequestTimeout('{} did not open in {}s'.format(what, timeout))

    async def _hold(self, manager: tp.Callable[[], contextlib.AbstractAsyncContextManager[T]],
                    ) -> None:
        self._release = release = asyncio.Event()
        self._holder = asyncio.current_task()
        try:
            async with manager() as value:
                self._opened.set_result(value)
                await release.wait()
                if self._failed:
                    raise _Abandon
        except _Abandon:
            pass

    async def aclose(self) -> None:
        """Leave the context, on the loop (the client closing)."""
        if self._release is not None:
            self._release.set()
        task = self._holder
        if task is not None and task is not asyncio.current_task():
            await asyncio.wait([task])

    def close(self, failed: bool = False) -> None:
        """
        Leave the context (``failed``: as on an error, not waiting for
        what it would wait for), and wait until it is left.
        """
        if self._task.done():  # left already (the client closed)
            if not self._task.cancelled():
                self._task.result()
            return
        self._failed = failed
        release = self._release
        assert release is not None
        try:
            self._runner.call(release.set)
        except ClientClosed:
            return  # the client's closing left it

        wait(self._task, self._timeout, 'closing ' + self._what)

__all__ = ['Held']
