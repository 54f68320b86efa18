"""
Concurrent handlers: an async handler run over a subscription's messages
with up to ``concurrency`` of them in flight, in order per key or
unordered, with exact commits; a view over the reader's progress
(:py:mod:`rbfly.streams.subscriptions.progress`).

An application awaiting I/O per message (an HTTP call, a database write)
reads at 1/latency with ``async for``; with handlers, ``concurrency``
messages wait at once. What is committed stays exact: a message counts as
processed when its handler returned, and the offset stored under the
subscription's name (automatic tracking) is the one before the lowest
message of its stream not done yet (the progress's in-flight record), as
confluent's parallel consumer commits for Kafka. After a crash, at most
the messages in flight and those of the tracking interval are read again.

Order: with a ``key`` (a function of the message, e.g. an order id from
its application properties), the messages of a key are handled one after
the other, in stream order, by the worker the key hashes to; without one,
by any free worker.

Memory is bounded: ``concurrency`` workers, each with a queue of at most
two messages, and the subscription's credit for the chunks buffered.

A hand-off (a single active consumer stepping down) waits for the
messages of its stream in flight (at most
:py:data:`~rbfly.streams.subscriptions.handoff.HANDOFF_TIMEOUT` seconds),
then commits. The end of the iteration (the subscription ends, the
application cancels :py:meth:`Handlers.run`) drains the messages in
flight for up to ``drain_timeout`` seconds, commits and unsubscribes.

A handler raising is the error policy's (:py:class:`~rbfly.streams.subscriptions.errors.OnError`):
retried with a backoff, then by default it ends the run with its error
once the messages in flight are done (the failed message and those after
it are not committed: read again after a restart); or the message is
skipped, or published to a dead-letter stream, exactly once (see
:py:mod:`rbfly.streams.subscriptions.errors`); each counted
(``Handlers.retried``, ``skipped``, ``dead_lettered``).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import typing as tp
from collections.abc import Awaitable, Callable

from ...amqp import MessageCtx
from ...error import MessageDecodeError
from ..metrics import Counters
from ..offset import Offset
from .errors import STOP, DeadLetters, OnError
from .progress import Progress

logger = logging.getLogger('rbfly.streams.subscriber')

Handler: tp.TypeAlias = Callable[[MessageCtx], Awaitable[None]]
"""An async function of a message (its body, sections, stream and offset)."""

Key: tp.TypeAlias = Callable[[MessageCtx], object]
"""The key of a message (hashable): messages of a key are handled in order."""

Item: tp.TypeAlias = tuple[MessageCtx, MessageDecodeError | None]
"""A message to handle, with its decoding error when it is not AMQP 1.0."""

DRAIN_TIMEOUT = 30.0
"""Seconds the end of a run waits for the handlers in flight."""

def check_handlers(handler: object, concurrency: object, key: object, drain: object) -> None:
    """The arguments of a run of concurrent handlers."""
    if not callable(handler):
        raise TypeError('handler must be an async function of a message, got {!r}'.format(
            handler))
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) \
            or not 1 <= concurrency <= 65535:
        raise ValueError('concurrency must be 1..65535, got {!r}'.format(concurrency))
    if key is not None and not callable(key):
        raise TypeError('key must be a function of a message or None, got {!r}'.format(key))
    if isinstance(drain, bool) or not isinstance(drain, int | float) or not drain > 0:
        raise ValueError('drain_timeout must be positive seconds, got {!r}'.format(drain))

class Handlers:
    """
    A run of an async handler over a subscription's messages.

    :param progress: The reader's progress.
    :param handler: Called with each message (awaited).
    :param concurrency: Messages in flight at most.
    :param key: Messages of a key are handled in order (``None``: any
        order).
    :param drain_timeout: Seconds the end waits for the messages in flight.
    :param on_error: What a handler's error does (default: stop the run).
    :param dead_letters: The dead-letter publishers, with
        ``then='dead-letter'``.
    :param counters: The client's metrics, which count what the run does.

    :ivar handled: Messages handled.
    :ivar retried: Attempts made again after a handler's error.
    :ivar skipped: Messages skipped by the error policy.
    :ivar dead_lettered: Messages published to the dead-letter stream.
    """
    def __init__(
            self, progress: Progress, handler: Handler, concurrency: int = 32,
            key: Key | None = None, drain_timeout: float = DRAIN_TIMEOUT,
            on_error: OnError = STOP, dead_letters: DeadLetters | None = None,
            counters: Counters | None = None,
    ) -> None:
        check_handlers(handler, concurrency, key, drain_timeout)
        if not isinstance(on_error, OnError):
            raise TypeError('on_error must be an OnError, got {!r}'.format(on_error))
        if (on_error.then == 'dead-letter') != (dead_letters is not None):
            raise ValueError('dead-letter publishers go with a dead-letter policy')
        self._progress = progress
        self._handler = handler
        self._concurrency = concurrency
        self._key = key
        self._drain = drain_timeout
        self._on_error = on_error
        self._dead_letters = dead_letters
        self._error: BaseException | None = None
        self.handled = 0
        self.retried = 0
        self.skipped = 0
        self.dead_lettered = 0
        # (the client's, also counting these: client.metrics())
        self._counters = Counters() if counters is None else counters
        # the dispatcher taking messages; set when the run ends with an error
        self._dispatcher: asyncio.Future[None] | None = None
        self._errored = asyncio.Event()
        self._stopping = False
        # messages in a handler now, and set when none is
        self._busy = 0
        self._idle = asyncio.Event()
        self._idle.set()

    async def run(self) -> int:
        """
        Handle the messages until the subscription ends (e.g.
        ``stop_at_end``), a handler raises, or the run is cancelled; the
        count of messages handled.

        :raises Exception: The first error a handler raised.
        """
        n = self._concurrency
        ordered = self._key is not None
        # (a keyed message goes to its worker's queue: two a worker, so a
        # slow key does not stall the others; unordered, one shared queue)
        queues = [asyncio.Queue[Item | None](2) for _ in range(n if ordered else 1)]
        workers = [
            asyncio.ensure_future(self._work(queues[i if ordered else 0])) for i in range(n)
        ]
        for w in workers:
            w.add_done_callback(self._worker_done)
        progress = self._progress
        dispatcher = self._dispatcher = asyncio.ensure_future(self._dispatch(queues))
        try:
            try:
                await dispatcher
            except asyncio.CancelledError:
                # (a handler's error stops the dispatcher where it waits;
                # the run itself cancelled: raised)
                if self._error is None or _cancelling():
                    raise
            if self._error is None:
                for q in queues:
                    for _ in range(n if not ordered else 1):
                        await q.put(None)
                await asyncio.wait(workers)
            else:
                await self._stop(workers)
        except BaseException:
            await self._stop(workers)
            raise
        finally:
            try:
                await progress.close()
            finally:
                if self._dead_letters is not None:
                    await self._dead_letters.close()
        if self._error is not None:
            raise self._error
        return self.handled

    #
    # pausing and seeking, while the run goes on
    #

    def pause(self, *streams: str) -> None:
        """
        Hand no more messages of ``streams`` (the stream, or partitions of
        a super stream) to the handlers until :py:meth:`resume`; those in
        flight finish, the others go on (see ``Progress.pause``).
        """
        self._progress.pause(*streams)

    def resume(self, *streams: str) -> None:
        """Hand the messages of paused ``streams`` to the handlers again."""
        self._progress.resume(*streams)

    def paused(self) -> frozenset[str]:
        """The streams paused."""
        return frozenset(self._progress.paused.streams)

    async def seek(self, stream: str, offset: Offset | int) -> None:
        """
        Handle ``stream`` from ``offset`` on: its messages stop going to
        the handlers, those in flight finish (``drain_timeout`` seconds at
        most), then the subscription moves (see ``Progress.seek``: the
        offset stored becomes the one before ``offset``).

        :raises TimeoutError: When messages of the stream are still in
            flight after ``drain_timeout`` (nothing moved; the stream is
            paused as it was before).
        """
        progress = self._progress
        was_paused = stream in progress.paused
        progress.pause(stream)
        try:
            if not await progress.released(stream, self._drain):
                raise TimeoutError('{} messages of stream {!r} still in flight after {}s:'
                                   ' not moved'.format(progress.in_flight(stream), stream,
                                                       self._drain))
            await progress.seek(stream, offset)
        finally:
            if not was_paused and not progress.closed:
                progress.resume(stream)

    def _set_error(self, error: BaseException) -> None:
        """The run ends with ``error`` (the first one): the dispatcher stops taking."""
        if self._error is not None:
            return
        self._error = error
        self._errored.set()
        dispatcher = self._dispatcher
        if dispatcher is not None and not dispatcher.done():
            dispatcher.cancel()  # (its take is safe to cancel)

    def _worker_done(self, task: asyncio.Future[None]) -> None:
        """A worker ended: by the run's end, or unexpectedly (then the run ends with an error)."""
        if self._stopping:
            return
        if task.cancelled():
            self._set_error(RuntimeError('a handler worker was cancelled'))
        elif (error := task.exception()) is not None:
            self._set_error(error)

    async def _dispatch(self, queues: list[asyncio.Queue[Item | None]]) -> None:
        progress = self._progress
        key = self._key
        n = len(queues)
        while self._error is None:
            item = progress.next_message()
            if item is None:
                try:
                    chunk = await progress.take()
                except StopAsyncIteration:
                    return
                assert chunk is not None  # (no deadline)
                progress.queue(chunk)
                continue
            msg = item[0]
            q = queues[hash(key(msg)) % n] if key is not None and item[1] is None else queues[0]
            await q.put(item)

    async def _work(self, queue: asyncio.Queue[Item | None]) -> None:
        handler = self._handler
        finished = self._progress.finished
        idle = self._idle
        while (item := await queue.get()) is not None:
            if self._error is not None:
                continue  # (not handled: read again after a restart)
            msg, bad = item
            self._busy += 1
            idle.clear()
            try:
                # (a message that is not AMQP 1.0 goes to the policy at
                # once: no retry decodes it)
                done = await (self._handle(handler, msg) if bad is None
                              else self._failed(msg, bad))
                if done:
                    finished(tp.cast(str, msg.stream), msg.stream_offset)
            finally:
                self._busy -= 1
                if not self._busy:
                    idle.set()

    async def _handle(self, handler: Handler, msg: MessageCtx) -> bool:
        """
        Handle a message as the error policy says; whether it counts as
        processed (handled, skipped, or dead-lettered).
        """
        policy = self._on_error
        attempt = 0
        while True:
            try:
                result = handler(msg)
                if inspect.isawaitable(result):
                    await result
            except asyncio.CancelledError:
                if _cancelling():
                    raise  # the run stops
                # (the handler's own: e.g. it awaited a future cancelled elsewhere)
                return await self._failed(msg, RuntimeError(
                    'the handler was cancelled, not by the run'))
            except Exception as ex:  # noqa: BLE001 - the policy's: retried, skipped, dead-lettered or raised by run()
                if attempt < policy.retries and self._error is None:
                    attempt += 1
                    self.retried += 1
                    self._counters.handler_retries += 1
                    logger.info('handler failed on the message at offset %d of stream %r'
                                ' (retry %d of %d): %s', msg.stream_offset, msg.stream,
                                attempt, policy.retries, ex)
                    await asyncio.sleep(policy.delay(attempt))
                    continue
                return await self._failed(msg, ex)
            self.handled += 1
            self._counters.handled += 1
            return True

    async def _failed(self, msg: MessageCtx, error: Exception) -> bool:
        """A message whose handler failed, retries done: stop, skip or dead-letter."""
        policy = self._on_error
        if policy.then == 'skip':
            logger.warning('message at offset %d of stream %r skipped: %s',
                           msg.stream_offset, msg.stream, error)
            self.skipped += 1
            self._counters.handler_skipped += 1
            return True
        if policy.then == 'dead-letter' and self._dead_letters is not None:
            stream = tp.cast(str, msg.stream)
            try:
                # (in stream order: the dead letters' publishing ids grow;
                # not when the run ends meanwhile: a message before it may
                # never be done)
                if not await self._first_in_flight(stream, msg.stream_offset):
                    return False
                await self._dead_letters.send(msg, error)
            except asyncio.CancelledError:
                raise
            except Exception as ex:  # noqa: BLE001 - not dead-lettered: the run stops
                logger.error('message at offset %d of stream %r not dead-lettered: %s',
                             msg.stream_offset, stream, ex)
                error = ex
            else:
                self.dead_lettered += 1
                self._counters.dead_lettered += 1
                return True
        if self._error is None:
            logger.error('message at offset %d of stream %r not handled: %s',
                         msg.stream_offset, msg.stream, error)
            self._set_error(error)
        return False

    async def _first_in_flight(self, stream: str, offset: int) -> bool:
        """
        Wait until the message at ``offset`` is the first of its stream in
        flight; false when the run ends with an error first.
        """
        first = asyncio.ensure_future(self._progress.first_in_flight(stream, offset))
        errored = asyncio.ensure_future(self._errored.wait())
        try:
            await asyncio.wait([first, errored], return_when=asyncio.FIRST_COMPLETED)
        finally:
            errored.cancel()
            if not first.done():
                first.cancel()
            await asyncio.wait([first, errored])
        return not first.cancelled() and first.exception() is None

    async def _stop(self, workers: tp.Sequence[asyncio.Future[None]]) -> None:
        """
        The run ends early (cancelled, or the subscription failed): the
        messages in flight get ``drain_timeout`` seconds, then are
        cancelled (not committed: read again after a restart).
        """
        self._stopping = True
        self._error = self._error or asyncio.CancelledError()
        dispatcher = self._dispatcher
        if dispatcher is not None and not dispatcher.done():
            dispatcher.cancel()
            await asyncio.wait([dispatcher])
        try:
            async with asyncio.timeout(self._drain):
                await self._idle.wait()
        except TimeoutError:
            logger.warning('%d handlers still running after %ss: cancelled, their messages'
                           ' are read again after a restart', self._busy, self._drain)
        finally:
            for w in workers:
                w.cancel()
            await asyncio.wait(workers)

def _cancelling() -> bool:
    """Whether the current task is being cancelled (not merely raising CancelledError)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0

__all__ = ['DRAIN_TIMEOUT', 'Handler', 'Handlers', 'Key', 'OnError', 'check_handlers']
