"""
Blocking publishers: a :py:class:`BlockingPublisher` over the async API's
:py:class:`~rbfly.streams.PublisherPipelined`, and a
:py:class:`BlockingSuperStreamPublisher` over its super stream publisher.

A message handed over from any thread joins a queue; the first of a
burst wakes the client's loop once, and a task there sends the queue's
messages through the pipelined publisher (its window bounds what waits for
confirmation). The publisher's listeners settle each message's
:py:class:`concurrent.futures.Future` with its publishing id, or its error.
:py:meth:`BlockingPublisher.send` waits for that future;
:py:meth:`BlockingPublisher.send_async` returns it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import typing as tp
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence

from ..error import PublisherError, RequestTimeout
from ..lifecycle import ResourceState, StateChange
from ..publishers.pipelined import PublisherPipelined
from ..publishers.superstream import SuperStreamPublisher
from .holder import Held
from .loop import ClientClosed, LoopThread, check_no_loop

Callback: tp.TypeAlias = Callable[[concurrent.futures.Future[int]], object]
"""Called with a message's future once it is settled (on the client's loop thread)."""

class BlockingPublisher:
    """
    A publisher of a stream for blocking code, safe to use from several
    threads (see :py:meth:`BlockingClient.publisher
    <rbfly.streams.blocking.BlockingClient.publisher>`).

    :ivar stream: The stream it sends to.
    :ivar name: Its name (for deduplication; ``''``: anonymous).
    """
    def __init__(
            self, runner: LoopThread, held: Held[PublisherPipelined], timeout: float | None,
            forget: Callable[[], None] = lambda: None,
    ) -> None:
        self._runner = runner
        self._forget = forget
        self._held = held
        publisher = self._publisher = held.value
        self.stream = publisher.stream
        self.name = publisher.name
        self._timeout = timeout
        self._lock = threading.Lock()
        # under the lock: the messages not handed to the publisher yet,
        # whether the loop was woken for them, the futures not settled
        # and the errors of send_async's futures since the last flush
        self._queue: deque[tuple[object, concurrent.futures.Future[int]]] = deque()
        self._scheduled = False
        self._closed = False
        self._outstanding: set[concurrent.futures.Future[int]] = set()
        self._errors: list[BaseException] = []
        # the loop's only: the futures of the messages the publisher has
        self._futures: dict[int, concurrent.futures.Future[int]] = {}
        self._pump: asyncio.Task[None] | None = None
        self._delivered: list[BaseException] = []
        runner.run(self._listen(), timeout, 'a publisher of stream {!r}'.format(self.stream))

    def __repr__(self) -> str:
        return 'BlockingPublisher(stream={!r}, name={!r})'.format(self.stream, self.name)

    async def _listen(self) -> None:
        self._publisher.add_listener(on_confirm=self._confirmed, on_error=self._rejected)
        self._publisher.add_state_listener(self._state)

    # -- sending (any thread) --

    def send(self, message: object, *, timeout: float | None = None) -> int:
        """
        Send a message and wait until the broker confirmed it; return its
        publishing id.

        :param timeout: Seconds to wait at most, the client's ``timeout``
            unless given (the publisher's ``confirm_timeout`` fails the
            message with :py:class:`~rbfly.streams.ConfirmTimeout` first).
        :raises MessageRejected: When the broker rejected it.
        :raises RequestTimeout: When not confirmed within ``timeout``: the
            message is not taken back (it may still be stored). Each call
            waits for its own messages' futures, whatever other threads
            send meanwhile.
        """
        check_no_loop('BlockingPublisher.send')
        future = self._submit([message], False)[0]
        return self._wait(future, timeout)

    def send_async(
            self, message: object, callback: Callback | None = None,
    ) -> concurrent.futures.Future[int]:
        """
        Send a message without waiting (pipelined); return its future,
        settled with its publishing id once the broker confirmed it, or
        with its error. An error also makes the next :py:meth:`flush`
        raise.

        :param callback: Called with the future once settled; it runs on
            the client's loop thread: it should return quickly, and must
            not call the blocking API (that raises
            :py:class:`~rbfly.streams.blocking.BlockingCallInLoop`).
        """
        future = self._submit([message], True)[0]
        if callback is not None:
            future.add_done_callback(callback)
        return future

    def send_batch(self, messages: Iterable[object], *, timeout: float | None = None,
                   ) -> list[int]:
        """
        Send messages (pipelined, the loop woken once) and wait until the
        broker confirmed all of them; return their publishing ids.

        :raises MessageRejected: For the first message rejected (the
            others are sent anyway).
        """
        check_no_loop('BlockingPublisher.send_batch')
        futures = self._submit(list(messages), False)
        return [self._wait(f, timeout) for f in futures]

    def flush(self, *, timeout: float | None = None) -> None:
        """
        Wait until every message sent so far with :py:meth:`send_async`
        (from any thread) is settled.

        :raises MessageRejected: The first error of a message sent with
            :py:meth:`send_async` since the last flush (e.g.
            :py:class:`~rbfly.streams.MessageRejected`).
        """
        check_no_loop('BlockingPublisher.flush')
        with self._lock:
            pending = list(self._outstanding)
        bound = self._bound(timeout)
        _, not_done = concurrent.futures.wait(pending, bound)
        if not_done:
            raise RequestTimeout('{} messages to stream {!r} not confirmed in {}s'.format(
                len(not_done), self.stream, bound,
            ))
        with self._lock:
            errors, self._errors = self._errors, []
        if errors:
            raise errors[0]

    def close(self, *, failed: bool = False) -> None:
        """
        Close the publisher: wait for the confirmation of what was sent
        (``failed``: send it, without waiting), then delete it on the
        broker. Idempotent.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            if not self._runner.closed:
                # what was accepted before is handed to the publisher first
                self._runner.run(self._drained(), self._bound(None), 'closing ' + repr(self))
            self._held.close(failed)
        except Exception as ex:
            # a rejection the listener delivered to a message's future
            # already is not raised again
            if not any(ex is e for e in self._delivered):
                raise
        finally:
            self._forget()

    def __enter__(self) -> tp.Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close(failed=exc_info[0] is not None)

    def _bound(self, timeout: float | None) -> float | None:
        """
        The bound of a wait: ``timeout``, or twice the client's (its own
        deadlines, at the client's timeout, come first with their errors).
        """
        if timeout is not None:
            return timeout
        return None if self._timeout is None else 2 * self._timeout

    def _wait(self, future: concurrent.futures.Future[int], timeout: float | None) -> int:
        bound = self._bound(timeout)
        try:
            return future.result(bound)
        except concurrent.futures.TimeoutError:
            if future.done():
                raise
            raise RequestTimeout('message to stream {!r} not confirmed in {}s'.format(
                self.stream, bound,
            )) from None

    def _submit(
            self, messages: Sequence[object], record: bool,
    ) -> list[concurrent.futures.Future[int]]:
        futures: list[concurrent.futures.Future[int]] = [
            concurrent.futures.Future() for _ in messages
        ]
        with self._lock:
            if self._runner.closed:
                raise ClientClosed('the blocking client is closed')
            if self._closed:
                raise PublisherError('publisher for stream {!r} is closed'.format(self.stream))
            self._queue.extend(zip(messages, futures, strict=True))
            self._outstanding.update(futures)
            wake = not self._scheduled
            self._scheduled = True
        done = self._recorded if record else self._settled
        for f in futures:
            f.add_done_callback(done)
        if wake:
            self._runner.call(self._wake)
        return futures

    def _settled(self, future: concurrent.futures.Future[int]) -> None:
        with self._lock:
            self._outstanding.discard(future)

    def _recorded(self, future: concurrent.futures.Future[int]) -> None:
        error = None if future.cancelled() else future.exception()
        with self._lock:
            self._outstanding.discard(future)
            if error is not None:
                self._errors.append(error)

    # -- the loop's side --

    async def _drained(self) -> None:
        """Wait until the queue is handed to the publisher (no more comes: closed)."""
        pump = self._pump
        if pump is not None and not pump.done():
            await asyncio.wait([pump])

    async def aclose(self) -> None:
        """Close, on the loop (the client closing)."""
        with self._lock:
            self._closed = True
        await self._drained()
        await self._held.aclose()

    def _wake(self) -> None:
        if self._pump is None or self._pump.done():
            self._pump = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        """Hand the queued messages to the pipelined publisher, in order."""
        queue = self._queue
        # a message, or an object its serializer encodes (the publisher is
        # then of the class's serializing subclass, whose send takes any)
        send = tp.cast(Callable[[object], Awaitable[int]], self._publisher.send)
        futures = self._futures
        while True:
            with self._lock:
                if not queue:
                    self._scheduled = False
                    return
                items = list(queue)
                queue.clear()
            for i, (message, future) in enumerate(items):
                if not future.set_running_or_notify_cancel():
                    continue  # cancelled by the application
                try:
                    pid = await send(message)
                except asyncio.CancelledError:
                    # the client closes: this message and those behind it fail
                    self._abandon(future, items[i + 1:])
                    raise
                except Exception as ex:  # noqa: BLE001 - the message's, to its future
                    future.set_exception(ex)
                else:
                    futures[pid] = future

    def _abandon(
            self, future: concurrent.futures.Future[int],
            items: list[tuple[object, concurrent.futures.Future[int]]],
    ) -> None:
        error = PublisherError('publisher for stream {!r} is closed'.format(self.stream))
        future.set_exception(error)
        with self._lock:
            items = items + list(self._queue)
            self._queue.clear()
        for _, f in items:
            if f.set_running_or_notify_cancel():
                f.set_exception(error)

    def _confirmed(self, publishing_ids: Sequence[int]) -> None:
        futures = self._futures
        for pid in publishing_ids:
            future = futures.pop(pid, None)
            if future is not None:
                future.set_result(pid)

    def _rejected(self, publishing_id: int, error: Exception) -> None:
        future = self._futures.pop(publishing_id, None)
        if future is not None:
            self._delivered = [*self._delivered[-15:], error]
            future.set_exception(error)

    def _state(self, change: StateChange) -> None:
        if change.state is not ResourceState.CLOSED or not self._futures:
            return
        # a publisher failed for good (its stream deleted) forgets its
        # messages without rejecting them one by one
        error = change.error if isinstance(change.error, Exception) else PublisherError(
            'publisher for stream {!r} closed: {}'.format(self.stream, change.reason),
        )
        futures, self._futures = self._futures, {}
        for future in futures.values():
            future.set_exception(error)

class BlockingSuperStreamPublisher:
    """
    A publisher of a super stream for blocking code: each message goes to
    the partition of its routing key (see :py:meth:`BlockingClient.super_stream_publisher
    <rbfly.streams.blocking.BlockingClient.super_stream_publisher>`).
    """
    def __init__(
            self, runner: LoopThread, held: Held[SuperStreamPublisher],
            timeout: float | None, forget: Callable[[], None] = lambda: None,
    ) -> None:
        self._runner = runner
        self._forget = forget
        self._held = held
        self._publisher = held.value
        self.super_stream = self._publisher.super_stream
        self._timeout = timeout

    def send(self, message: object) -> None:
        """Send a message to its partition and wait for its confirmation."""
        self.send_batch([message])

    def send_batch(self, messages: Iterable[object]) -> None:
        """
        Send messages to their partitions and wait for all confirmations
        (of this call's messages: calls from several threads each wait for
        their own, and get their own errors).

        :raises RequestTimeout: When not confirmed within the client's
            ``timeout``: the messages may still be stored (they are not
            sent again by a later call).
        """
        self._runner.run(
            self._send_many(list(messages)), self._timeout,
            'publishing to super stream {!r}'.format(self.super_stream),
        )

    async def _send_many(self, messages: list[object]) -> None:
        # each partition's batch publisher takes a call's messages out of
        # its batch at once (send_many: add, then flush), and waits for
        # their confirmation only: not a batch shared with another
        # thread's call, whose flush would take (and fail) them, or leave
        # them behind when cancelled
        await self._publisher.send_many(messages)

    def close(self, *, failed: bool = False) -> None:
        """Close the partitions' publishers."""
        try:
            self._held.close(failed)
        finally:
            self._forget()

    def __enter__(self) -> tp.Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close(failed=exc_info[0] is not None)

__all__ = ['BlockingPublisher', 'BlockingSuperStreamPublisher', 'Callback']
