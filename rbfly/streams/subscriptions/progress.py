"""
A reader's progress through its subscriptions: the one owner of what was
taken from them, handed out to the application, processed, cut at a
hand-off and committed.

Every way of reading a stream is a thin view over a
:py:class:`Progress`: the message iterator of ``subscribe()``
(``_bodies``, with the progress's ``Cursor`` of ``_cursor``, in C),
windows (:py:mod:`rbfly.streams.subscriptions.windows`), chunks
(``subscriptions/chunks.py``), concurrent handlers
(:py:mod:`rbfly.streams.subscriptions.handlers`) and the blocking facade
over them. A view takes chunks (:py:meth:`Progress.take`), tells the
progress what it hands out, and calls :py:meth:`Progress.moved` when the
application asks for more: what was handed out before is processed then
(a message, a window or a chunk, as the Java client and Kafka count the
last record dispatched), reported to automatic offset tracking
(:py:mod:`rbfly.streams.subscriptions.tracking`), and a flow strategy's
credit goes back.

What the progress knows, and nothing else writes:

- *taken*: the chunk at hand of a message iterator (the cursor), and the
  chunks a window iterator took and did not hand out yet (a queue);
- *handed out*: the message at the cursor, or the segments of chunks of
  the window or chunk handed out last: what the application holds, per
  stream;
- *cut*: a single active consumer stepping down on a stream (or losing
  its connection) drops what was taken of it and not handed out
  (:py:meth:`Progress.cut`; the next member processes those messages) and
  waits until the application holds nothing of it
  (:py:meth:`Progress.released`);
- *committed*: the tracker's offsets, committed at a hand-off and at the
  end (:py:meth:`Progress.close`).

Taking is safe to cancel: the progress waits for a chunk without taking
one (``Source.wait`` of ``subscriptions/source.py``), and a
chunk taken is the progress's until handed out; a ``getmany`` or an
``__anext__`` cancelled leaves everything as it was. A window's deadline
is a parameter of the take, which returns ``None`` when it passes.
"""

from __future__ import annotations

import asyncio
import logging
import typing as tp
from collections import deque

from ...amqp import MessageCtx
from ..error import ProcessingStuck, StreamsError
from ._cursor import Cursor
from .handoff import HANDOFF_TIMEOUT, HandOff
from .source import Source
from .subscription import Chunk

if tp.TYPE_CHECKING:
    from .tracking import OffsetTracker

logger = logging.getLogger('rbfly.streams.subscriber')

Segment: tp.TypeAlias = tuple[Chunk, int, int]
"""Messages ``start:end`` of a chunk."""

class Progress:
    """
    One reader's progress through its subscriptions (see the module).

    :param source: The subscriptions, subscribed on the first take.
    :param tracker: Automatic offset tracking, if on.
    :param timeout: Seconds without a chunk after which a take raises
        ``TimeoutError`` (``None``: none): the subscription's idle timeout.
    :param group: The consumer name, when the subscriptions are single
        active consumers: the progress takes part in their hand-offs.
    :param handoff_timeout: Seconds a hand-off waits for the application
        to finish what it holds of the stream.
    :param processing_timeout: Seconds the application may hold what it
        was handed without moving on (``None``: no limit); after them the
        progress commits what was processed and ends the subscriptions (a
        single active consumer steps down), and the next step raises
        :py:class:`~rbfly.streams.error.ProcessingStuck`.
    """
    def __init__(
            self, source: Source, tracker: OffsetTracker | None = None, *,
            timeout: float | None = None, group: str | None = None,
            handoff_timeout: float = HANDOFF_TIMEOUT,
            processing_timeout: float | None = None,
    ) -> None:
        self._source = source
        self.tracker = tracker
        self._timeout = timeout
        # the watchdog of a stuck application: what it last saw, since when
        self._processing_timeout = processing_timeout
        self._watch: asyncio.TimerHandle | None = None
        self._seen: tuple[object, ...] = ()
        self._seen_at = 0.0
        self._moves = 0
        self._stuck: ProcessingStuck | None = None
        self._giving_up: asyncio.Future[None] | None = None
        self.cursor = Cursor(self._report if tracker is not None else None)
        # taken and not handed out by a window iterator (from _pos of the
        # first), and how many messages that is
        self._queue: deque[Chunk] = deque()
        self._pos = 0
        self._queued = 0
        # handed out as windows or chunks, not processed yet
        self._out: list[Segment] = []
        # handed out to concurrent handlers, per stream: the offsets in
        # flight in the order handed out, and those done out of order; a
        # handler waiting to be the first in flight of its stream
        self._flight: dict[str, tuple[deque[int], set[int]]] = {}
        self._advanced: asyncio.Future[None] | None = None
        # a hand-off waiting for the application to move on
        self._moved: asyncio.Future[None] | None = None
        # when a take waiting with an idle timeout times out (the clock
        # starts with the first wait after a chunk was taken)
        self._idle_at: float | None = None
        self.group = None if group is None else HandOff(group, self, tracker, handoff_timeout)
        self._opened = False
        self.closed = False
        if tracker is not None:
            tracker.attach(self.cursor.pull)

    #
    # taking
    #

    async def take(self, deadline: float | None = None) -> Chunk | None:
        """
        The next chunk of messages, taken from the subscriptions
        (subscribed on the first take); ``None`` when ``deadline`` (loop
        time) passes first. Safe to cancel: nothing is taken while
        waiting.

        :raises StopAsyncIteration: The reading ended (closed, or every
            subscription reached its end).
        :raises TimeoutError: No chunk came within the idle timeout.
        :raises Exception: The error that ended a subscription.
        """
        if not self._opened:
            await self._open()
        source = self._source
        loop = asyncio.get_running_loop()
        while True:
            if self._stuck is not None:
                raise self._stuck
            if self.closed:
                raise StopAsyncIteration
            chunk = source.poll()
            if chunk is not None:
                if chunk:
                    self._idle_at = None
                    return chunk
                continue  # emptied by the end or a filter
            if source.finished:
                raise StopAsyncIteration
            now = loop.time()
            wait, by_idle = self._wait(now, deadline)
            try:
                await source.wait(wait)
            except TimeoutError:
                # (the bound decided before waiting: a timer may fire
                # before the loop's clock reads its time)
                if by_idle:
                    raise
                return None

    def _wait(self, now: float, deadline: float | None) -> tuple[float | None, bool]:
        """
        Seconds to wait for a chunk, and whether the wait ends at the idle
        timeout (raised), not at the deadline (``None`` returned).
        """
        wait: float | None = None
        by_idle = False
        if self._timeout is not None:
            if self._idle_at is None:
                self._idle_at = now + self._timeout
            wait = max(0.0, self._idle_at - now)
            by_idle = True
        if deadline is not None:
            left = max(0.0, deadline - now)
            if wait is None or left < wait:
                wait, by_idle = left, False
        return wait, by_idle

    async def _open(self) -> None:
        """Subscribe; a failure (or a cancelled open) ends what was made."""
        if self.closed:
            raise StopAsyncIteration
        await self._source.open(self.group)
        self._opened = True
        if self._processing_timeout is not None:
            self._schedule_watch()

    #
    # what the views hand out
    #

    def hand_out(self, chunk: Chunk) -> None:
        """A chunk is handed out whole (the chunk iterator)."""
        self._out.append((chunk, 0, len(chunk)))

    def queue(self, chunk: Chunk) -> None:
        """A chunk taken by a window iterator, to cut windows from."""
        self._queue.append(chunk)
        self._queued += len(chunk)

    @property
    def queued(self) -> int:
        """Messages taken by a window iterator and not handed out yet."""
        return self._queued - self._pos

    def window(self, max_messages: int) -> list[MessageCtx]:
        """
        Hand out a window of at most ``max_messages`` messages of the
        chunks queued (small chunks merged, a big one split).
        """
        queue = self._queue
        window: list[MessageCtx] = []
        out = self._out
        count = 0
        while queue and count < max_messages:
            chunk = queue[0]
            start = self._pos
            end = min(len(chunk), start + max_messages - count)
            window.extend(chunk if start == 0 and end == len(chunk) else chunk[start:end])
            out.append((chunk, start, end))
            count += end - start
            if end == len(chunk):
                queue.popleft()
                self._queued -= len(chunk)
                self._pos = 0
            else:
                self._pos = end
        return window

    def next_message(self) -> MessageCtx | None:
        """
        Hand out the next message of the chunks queued (concurrent
        handlers), in flight until :py:meth:`finished`; ``None`` when none
        is queued.
        """
        queue = self._queue
        while queue:
            chunk = queue[0]
            pos = self._pos
            if pos < len(chunk):
                msg = chunk[pos]
                self._pos = pos + 1
                flight = self._flight.get(chunk.stream)
                if flight is None:
                    flight = self._flight[chunk.stream] = (deque(), set())
                flight[0].append(msg.stream_offset)
                if pos + 1 == len(chunk):
                    queue.popleft()
                    self._queued -= len(chunk)
                    self._pos = 0
                    _release(chunk, 0, len(chunk), cut=True)  # (taken whole: its credit back)
                return msg
            queue.popleft()
            self._queued -= len(chunk)
            self._pos = 0
        return None

    def finished(self, stream: str, offset: int) -> None:
        """
        A concurrent handler is done with the message at ``offset``: the
        messages of the stream done without a gap before the first one
        still in flight are processed (the offset committed is the one
        before the lowest message not done).
        """
        self._moves += 1
        offsets, done = self._flight[stream]
        if not offsets or offsets[0] != offset:
            done.add(offset)
            return
        offsets.popleft()
        last, count = offset, 1
        while offsets and offsets[0] in done:
            last = offsets.popleft()
            done.remove(last)
            count += 1
        if self.tracker is not None:
            self.tracker.processed(stream, last, count)
        advanced, self._advanced = self._advanced, None
        if advanced is not None and not advanced.done():
            advanced.set_result(None)
        if not offsets:
            self._wake()

    async def first_in_flight(self, stream: str, offset: int) -> None:
        """
        Wait until the message at ``offset`` is the first of its stream in
        flight: every message before it is done (a message dead-lettered
        in stream order, so that its publishing id only grows).
        """
        offsets = self._flight[stream][0]
        while offsets and offsets[0] != offset:
            if self._advanced is None:
                self._advanced = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._advanced)

    def in_flight(self, stream: str | None = None) -> int:
        """Messages handed out to concurrent handlers and not done (of ``stream``, or all)."""
        if stream is not None:
            flight = self._flight.get(stream)
            return 0 if flight is None else len(flight[0])
        return sum(len(offsets) for offsets, _ in self._flight.values())

    def moved(self) -> None:
        """
        The application asked for more (or the iteration ends): what was
        handed out is processed: reported to the tracker, credit given back.
        """
        self._moves += 1
        self.cursor.finish()
        out = self._out
        if out:
            self._out = []
            tracker = self.tracker
            for chunk, start, stop in out:
                end = min(stop, len(chunk))  # (a chunk the application emptied)
                if start >= end:
                    continue
                if tracker is not None:
                    tracker.processed(chunk.stream, chunk[end - 1].stream_offset, end - start)
                _release(chunk, start, end)
        self._wake()

    def drop(self) -> None:
        """
        What was handed out is not processed (its processing raised): not
        reported; its credit goes back, and a hand-off waits no more.
        """
        self.cursor.clear()
        out, self._out = self._out, []
        for chunk, start, end in out:
            _release(chunk, start, end, cut=True)
        self._wake()

    def _report(self, stream: str, offset: int, count: int) -> int:
        """The cursor's report of processed messages; how many it may hold back next."""
        tracker = self.tracker
        assert tracker is not None
        tracker.processed(stream, offset, count)
        return tracker.batch_limit()

    def _wake(self) -> None:
        moved = self._moved
        if moved is not None:
            self._moved = None
            if not moved.done():
                moved.set_result(None)

    #
    # hand-offs
    #

    def holds(self, stream: str) -> bool:
        """Whether the application holds a message of ``stream`` not processed yet."""
        cursor = self.cursor
        if cursor.holding and cursor.stream == stream:
            return True
        if self.in_flight(stream):
            return True
        return any(chunk.stream == stream for chunk, _, _ in self._out)

    def cut(self, stream: str) -> None:
        """
        Hand out nothing more of ``stream`` taken so far (a hand-off, or a
        lost connection): the next consumer of it processes those
        messages. What the application holds stays its own.
        """
        self.cursor.cut(stream)
        queue = self._queue
        if not any(c.stream == stream for c in queue):
            return
        kept: deque[Chunk] = deque()
        for i, chunk in enumerate(queue):
            start = self._pos if i == 0 else 0
            if chunk.stream == stream:
                _release(chunk, start, len(chunk), cut=True)
            else:
                kept.append(chunk)
        if queue[0].stream == stream:
            self._pos = 0
        self._queue = kept
        self._queued = sum(len(c) for c in kept)

    async def released(self, stream: str, timeout: float) -> bool:
        """
        Wait until the application holds nothing of ``stream``; false when
        it still does after ``timeout`` seconds.
        """
        while self.holds(stream):
            if self._moved is None:
                self._moved = asyncio.get_running_loop().create_future()
            try:
                async with asyncio.timeout(timeout):
                    await asyncio.shield(self._moved)
            except TimeoutError:
                return False
        return True

    #
    # a stuck application
    #

    def _held(self) -> list[str]:
        """The streams the application holds something of."""
        streams = {chunk.stream for chunk, _, _ in self._out}
        streams.update(s for s, (offsets, _) in self._flight.items() if offsets)
        cursor = self.cursor
        if cursor.holding and cursor.stream is not None:
            streams.add(cursor.stream)
        return sorted(streams)

    def _schedule_watch(self) -> None:
        timeout = self._processing_timeout
        assert timeout is not None
        loop = asyncio.get_running_loop()
        self._seen_at = loop.time()
        self._watch = loop.call_later(timeout / 4, self._check_stuck)

    def _check_stuck(self) -> None:
        """
        The watchdog, every quarter of ``processing_timeout``: no move and
        no message of the cursor handed out since the last change, for the
        whole timeout, while the application holds something: stuck.
        """
        self._watch = None
        if self.closed or self._stuck is not None:
            return
        timeout = self._processing_timeout
        assert timeout is not None
        loop = asyncio.get_running_loop()
        cursor = self.cursor
        seen = (self._moves, cursor.next, id(cursor.messages))
        held = self._held()
        if seen != self._seen or not held:
            self._seen = seen
            self._seen_at = loop.time()
        elif loop.time() - self._seen_at >= timeout:
            self._give_up(held, timeout)
            return
        self._watch = loop.call_later(timeout / 4, self._check_stuck)

    def _give_up(self, held: list[str], timeout: float) -> None:
        """
        Stuck: commit what was processed, forget the streams held (what the
        application finishes later is not stored: another consumer takes
        them over), end the subscriptions, and raise at the next step.
        """
        logger.warning('no progress processing %s for %ss (processing_timeout): committing'
                       ' what was processed and ending the subscription', held, timeout)
        self._stuck = ProcessingStuck(held, timeout)
        self._giving_up = asyncio.ensure_future(self._step_down())

    async def _step_down(self) -> None:
        tracker = self.tracker
        try:
            if tracker is not None:
                try:
                    await tracker.commit()
                except StreamsError as ex:
                    logger.warning('offsets under %r not committed on giving up: %s',
                                   tracker.reference, ex)
                for stream in {*self._held(), *self._flight}:
                    tracker.release(stream)
        finally:
            self.closed = True
            self._end()

    #
    # commits and the end
    #

    async def commit(self) -> None:
        """
        Commit the offsets of what is being processed (handed out last)
        and of what was processed before: store them, and return once the
        broker has them (automatic offset tracking only).

        :raises TypeError: Without automatic offset tracking.
        :raises rbfly.streams.error.OffsetCommitTimeout: When the broker
            does not report an offset in time.
        """
        tracker = self.tracker
        if tracker is None:
            raise TypeError('commit() needs automatic offset tracking: subscribe with a name'
                            ' and store_every, or call client.commit_offset()')
        # (counted again when the application moves on)
        if (mark := self.cursor.mark()) is not None:
            tracker.processed(mark[0], mark[1], 0)
        for chunk, start, stop in self._out:
            end = min(stop, len(chunk))
            if start < end:
                tracker.processed(chunk.stream, chunk[end - 1].stream_offset, 0)
        await tracker.commit()

    async def close(self) -> None:
        """
        End the reading: what was handed out is processed, the offsets of
        what was processed are committed (the next consumer of the name
        starts after them), and the subscriptions end. A failed commit is
        logged: the messages since the offset stored before are read again,
        and an error here would hide the one that ended the reading.
        """
        giving_up = self._giving_up
        if giving_up is not None:
            await asyncio.shield(giving_up)  # (it ends the subscriptions)
        if self.closed:
            return
        self.closed = True
        try:
            self.moved()
            tracker = self.tracker
            if tracker is not None:
                tracker.close()
                if self._opened:
                    try:
                        await tracker.commit()
                    except StreamsError as ex:
                        logger.warning('offsets under %r not committed at the end of the'
                                       ' subscription: %s', tracker.reference, ex)
        finally:
            self._end()

    def abandon(self) -> None:
        """
        The view was dropped without being closed (a ``break`` out of its
        loop): closed by a task, as an async generator's finalizer closes
        it; without a running loop, at once, storing without waiting.
        """
        if self.closed:
            return
        # what was processed is stored at once (the commit, waiting for
        # the broker, is the task's)
        self.moved()
        if self.tracker is not None:
            self.tracker.store()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None or not self._opened:
            self.closed = True
            try:
                if self.tracker is not None:
                    self.tracker.close()
            finally:
                self._end()
            return
        loop.create_task(self.close())

    def _end(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        self.cursor.clear()
        self._queue.clear()
        self._queued = self._pos = 0
        self._out = []
        self._wake()
        if self._opened:
            self._source.end()

def _release(chunk: Chunk, start: int, end: int, cut: bool = False) -> None:
    """
    Give back the credit a chunk holds under a flow strategy, when its
    messages ``start:end`` cover the one it waits for (the message
    iterator gives it back as message ``release_at`` is asked for, i.e.
    ``release_at`` messages are processed); a cut gives it back at once,
    also a chunk the application was to release itself (``ManualCredit``)
    when none of its messages was handed out (it never sees the chunk).
    A chunk releases once.
    """
    release = chunk.release
    if release is None:
        return
    release_at = chunk.release_at
    if release_at < 0:
        if not (cut and start == 0):
            return
    elif not cut and not start < release_at <= end:
        return
    chunk.release = None
    chunk.release_at = -1
    release()

__all__ = ['Progress', 'Segment']
