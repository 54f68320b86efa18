"""
The event loop of a blocking client: an asyncio loop running in a daemon
thread of its own (one per client), and the one way blocking code hands
it work (``LoopThread.submit``, ``LoopThread.run``).

A blocking call from a thread running an event loop would block that
loop (and, from the client's own loop thread, wait for itself forever):
it raises :py:class:`BlockingCallInLoop` at once instead.

Loops still running at interpreter exit are closed by an :py:mod:`atexit`
handler (their clients disconnected, within a bound), before the daemon
threads are stopped: no hang, no unclosed transport.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import threading
import typing as tp
import weakref
from collections.abc import Awaitable, Callable, Coroutine

from ..error import ClientClosed as StreamsClientClosed
from ..error import RequestTimeout

logger = logging.getLogger('rbfly.streams.blocking')

T = tp.TypeVar('T')

EXIT_TIMEOUT = 5.0
"""Seconds the atexit handler gives each client still open to close."""

class BlockingCallInLoop(RuntimeError):
    """
    A blocking call was made from a thread running an asyncio event loop:
    use the async API (:py:func:`rbfly.streams.streams_client`) there.
    """

class ClientClosed(StreamsClientClosed):
    """
    The blocking client is closed: a
    :py:class:`rbfly.streams.ClientClosed` (a ``RuntimeError``), so that
    one ``except`` clause catches the async client's and this one.
    """

def check_no_loop(what: str) -> None:
    """
    Raise :py:class:`BlockingCallInLoop` when the calling thread runs an
    event loop.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise BlockingCallInLoop(
        '{} blocks, and was called from a running event loop (thread {!r});'
        ' in async code, use the async API: rbfly.streams.streams_client'.format(
            what, threading.current_thread().name,
        ),
    )

class LoopThread:
    """
    An event loop run by a daemon thread until :py:meth:`close`.

    :param name: The thread's name.
    :param closing: A coroutine function run on the loop by
        :py:meth:`close` (and at interpreter exit) before it stops: the
        client's disconnection.
    """
    def __init__(self, name: str, closing: Callable[[], Awaitable[None]]) -> None:
        self._closing = closing
        self._lock = threading.Lock()
        self._closed = False
        self.loop = asyncio.new_event_loop()
        started = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(started,), name=name, daemon=True,
        )
        self._thread.start()
        started.wait()
        _open.add(self)

    def _run(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(started.set)
        self.loop.run_forever()

    @property
    def closed(self) -> bool:
        """Whether :py:meth:`close` was called."""
        return self._closed

    def in_thread(self) -> bool:
        """Whether the calling thread is the loop's."""
        return threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[tp.Any, tp.Any, T]) -> concurrent.futures.Future[T]:
        """
        Run a coroutine on the loop; its future (cancel it to cancel the
        coroutine's task).

        :raises ClientClosed: When the loop is closed.
        """
        if self._closed:
            coro.close()
            raise ClientClosed('the blocking client is closed')
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, callback: Callable[..., object], *args: object) -> None:
        """
        Call a function on the loop, soon (from any thread).

        :raises ClientClosed: When the loop is closed.
        """
        if self._closed:
            raise ClientClosed('the blocking client is closed')
        self.loop.call_soon_threadsafe(callback, *args)

    def run(self, coro: Coroutine[tp.Any, tp.Any, T], timeout: float | None, what: str) -> T:
        """
        Run a coroutine on the loop and wait for its result.

        :param timeout: Seconds to wait at most (``None``: as long as it
            takes); then the coroutine is cancelled and
            :py:class:`~rbfly.streams.RequestTimeout` (a ``TimeoutError``)
            raised. The client's own deadlines (``connect_timeout``,
            ``request_timeout``, a publisher's ``confirm_timeout``) come
            first, with their own errors.
        :param what: What the call does, for the errors.
        :raises BlockingCallInLoop: When called from a running loop.
        """
        try:
            check_no_loop(what)
        except BlockingCallInLoop:
            coro.close()
            raise
        return wait(self.submit(coro), timeout, what)

    def close(self, timeout: float | None = None) -> None:
        """
        Run the closing coroutine (``timeout`` seconds at most), then stop
        the loop and close it. Idempotent; from the loop's own thread it
        only stops the loop (the thread closes it).
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
        _open.discard(self)
        if self.in_thread():
            self.loop.stop()
            return
        future = asyncio.run_coroutine_threadsafe(self._shutdown(), self.loop)
        try:
            future.result(timeout)
        except concurrent.futures.TimeoutError:
            logger.warning('blocking client: closing took over %ss; stopping its loop', timeout)
            future.cancel()
        except Exception:
            logger.exception('blocking client: closing failed')
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self.loop.close()

    async def _shutdown(self) -> None:
        try:
            await self._closing()
        finally:
            # the tasks left (a subscription's pending take, a publisher's
            # holder): cancelled and awaited, so that nothing is destroyed pending
            current = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not current]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.loop.shutdown_asyncgens()

def wait(future: concurrent.futures.Future[T], timeout: float | None, what: str) -> T:
    """
    Wait for the future of a coroutine run on a client's loop; past
    ``timeout`` seconds cancel it and raise
    :py:class:`~rbfly.streams.RequestTimeout`.
    """
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        if not future.done():
            future.cancel()
            raise RequestTimeout('{} did not complete in {}s'.format(what, timeout)) from None
        raise  # the coroutine's own TimeoutError

_open: weakref.WeakSet[LoopThread] = weakref.WeakSet()

@atexit.register
def _close_all() -> None:
    """Close the loops of the clients left open at interpreter exit."""
    for runner in list(_open):
        runner.close(EXIT_TIMEOUT)

__all__ = ['BlockingCallInLoop', 'ClientClosed', 'LoopThread', 'check_no_loop', 'wait']
