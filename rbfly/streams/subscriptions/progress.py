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

- *taken*: the chunk at hand of a message iterator (the cursor), the
  chunks a window iterator or handlers took and did not hand out yet (a
  queue), and what is held back of paused streams;
- *handed out*: the message at the cursor, or the segments of chunks of
  the window or chunk handed out last: what the application holds, per
  stream;
- *cut*: a single active consumer stepping down on a stream (or losing
  its connection) drops what was taken of it and not handed out
  (:py:meth:`Progress.cut`; the next member processes those messages) and
  waits until the application holds nothing of it
  (:py:meth:`Progress.released`);
- *committed*: the tracker's offsets, committed at a hand-off and at the
  end (:py:meth:`Progress.close`);
- *paused* streams, whose messages it holds back, and *seeks*, which
  drop what was taken of a stream (:py:meth:`Progress.pause`,
  :py:meth:`Progress.seek`).

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

from ...amqp import MessageCtx
from ...error import MessageDecodeError
from ..error import ProcessingStuck, StreamsError
from ..offset import Offset
from ._cursor import Cursor
from .arguments import check_streams, seek_offset
from .flight import Flight
from .handed import Handed, release_cut
from .handoff import HANDOFF_TIMEOUT, HandOff
from .pausing import Paused
from .queued import Queued, Segment
from .source import Source
from .stuck import Watchdog
from .subscription import Chunk

if tp.TYPE_CHECKING:
    from .tracking import OffsetTracker

logger = logging.getLogger('rbfly.streams.subscriber')

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
        # the watchdog of a stuck application, and the moves it watches
        self._watch = None if processing_timeout is None else Watchdog(
            processing_timeout, self._seen, self._held, self._give_up,
            lambda: self.closed or self._stuck is not None,
        )
        self._moves = 0
        self._stuck: ProcessingStuck | None = None
        self._giving_up: asyncio.Future[None] | None = None
        self.cursor = Cursor(self._report if tracker is not None else None)
        # taken and not handed out by a window iterator or handlers
        self._queue = Queued()
        # handed out as windows or chunks, not processed yet
        self._handed = Handed()
        # handed out to concurrent handlers, not done yet
        self._flight = Flight()
        # a hand-off waiting for the application to move on
        self._moved: asyncio.Future[None] | None = None
        # when a take waiting with an idle timeout times out (the clock
        # starts with the first wait after a chunk was taken)
        self._idle_at: float | None = None
        # streams the application paused, and what is held back of them
        self.paused = Paused(release_cut)
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
            chunk = self.paused.take()  # (of a stream resumed)
            if chunk is None:
                chunk = source.poll()
            if chunk is not None:
                if chunk:
                    self._idle_at = None
                    return chunk
                continue  # emptied by the end or a filter
            if source.finished and not self.paused.holding:
                await source.settle()  # (a loss the last chunks left told first)
                raise StopAsyncIteration  # (what is held of a paused stream waits for its resume)
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
        # (a stream paused before it started: named now that they are known)
        if self.paused.streams:
            self._check_streams(tuple(self.paused.streams))
        if self._watch is not None:
            self._watch.start()

    #
    # what the views hand out
    #

    def hand_out(self, chunk: Chunk) -> None:
        """A chunk is handed out whole (the chunk iterator)."""
        self._handed.add(chunk)

    def queue(self, chunk: Chunk) -> None:
        """A chunk taken by a window iterator or handlers, to hand out from."""
        self._queue.append(chunk)

    @property
    def queued(self) -> int:
        """Messages taken by a window iterator or handlers and not handed out yet."""
        return len(self._queue)

    def window(self, max_messages: int) -> list[MessageCtx]:
        """
        Hand out a window of at most ``max_messages`` messages of the
        chunks queued (small chunks merged, a big one split).
        """
        window, segments = self._queue.window(max_messages)
        self._handed.extend(segments)
        return window

    def next_message(self) -> tuple[MessageCtx, MessageDecodeError | None] | None:
        """
        Hand out the next message of the chunks queued (concurrent
        handlers), in flight until :py:meth:`finished`, with its decoding
        error when it is not AMQP 1.0 (its bytes are its body); ``None``
        when none is queued.
        """
        item = self._queue.next()
        if item is None:
            return None
        msg, chunk, whole = item
        self._flight.add(chunk.stream, msg.stream_offset)
        if whole:
            release_cut(chunk)  # (taken whole: its credit back)
        bad = chunk.undecodable
        return msg, None if bad is None else bad.get(msg.stream_offset)

    def finished(self, stream: str, offset: int) -> None:
        """
        A concurrent handler is done with the message at ``offset``: the
        messages of the stream done without a gap before the first one
        still in flight are processed (see
        :py:mod:`rbfly.streams.subscriptions.flight`).
        """
        self._moves += 1
        done = self._flight.done(stream, offset)
        if done is None:
            return
        if self.tracker is not None:
            self.tracker.processed(stream, done[0], done[1])
        if not self._flight.count(stream):
            self._wake()

    async def first_in_flight(self, stream: str, offset: int) -> None:
        """
        Wait until the message at ``offset`` is the first of its stream in
        flight: every message before it is done (a message dead-lettered
        in stream order, so that its publishing id only grows).
        """
        await self._flight.first(stream, offset)

    def in_flight(self, stream: str | None = None) -> int:
        """Messages handed out to concurrent handlers and not done (of ``stream``, or all)."""
        return self._flight.count(stream)

    def moved(self) -> None:
        """
        The application asked for more (or the iteration ends): what was
        handed out is processed: reported to the tracker, credit given back.
        """
        self._moves += 1
        self.cursor.finish()
        handed = self._handed
        if handed.segments:
            handed.processed(self.tracker)
        self._wake()

    def drop(self) -> None:
        """
        What was handed out is not processed (its processing raised): not
        reported; its credit goes back, and a hand-off waits no more.
        """
        self.cursor.clear()
        self._handed.drop()
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
        return self._handed.holds(stream)

    def cut(self, stream: str) -> None:
        """
        Hand out nothing more of ``stream`` taken so far (a hand-off, or a
        lost connection): the next consumer of it processes those
        messages. What the application holds stays its own.
        """
        self.cursor.cut(stream)
        self.paused.drop(stream)
        for chunk in self._queue.take(stream):
            release_cut(chunk)

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
    # pausing and seeking
    #

    def pause(self, *streams: str) -> None:
        """
        Hand out nothing more of ``streams`` until :py:meth:`resume`: what
        was taken of them and not handed out is held back (see
        :py:mod:`rbfly.streams.subscriptions.pausing`); what the
        application holds stays its own.
        """
        self._check_streams(streams)
        for stream in streams:
            self.paused.pause(stream)
            self._source.pause(stream, True)
            if (rest := self.cursor.rest(stream)) is not None:
                self.paused.hold(rest)
            for chunk in self._queue.take(stream):
                self.paused.hold(chunk)

    def resume(self, *streams: str) -> None:
        """Hand out the messages of ``streams`` again, those held back first."""
        self._check_streams(streams)
        for stream in streams:
            self.paused.resume(stream)
            self._source.pause(stream, False)

    async def seek(self, stream: str, offset: Offset | int) -> None:
        """
        Read ``stream`` from ``offset`` on: subscribe to it again there;
        what was taken of it is dropped, the message the application
        holds of it too (it does not count as processed). With automatic
        offset tracking, the offset stored for the stream is the one
        before ``offset`` (at the next store; for an offset known only
        as the first message comes, such as a timestamp's, that
        message's).

        :raises ValueError: For a single active consumer (subscribing
            again would leave its group), a stream not read, or one with
            messages in flight to concurrent handlers.
        :raises rbfly.streams.error.StreamsError: When the subscription
            ended.
        """
        if self.closed:
            raise StreamsError('the subscription ended: nothing to seek')
        if not self._opened:
            raise ValueError('seek() a subscription that started (the first message asked'
                             ' for); to start elsewhere, subscribe with offset=')
        self._check_streams((stream,))
        offset = seek_offset(offset)
        if self.in_flight(stream):
            raise ValueError('stream {!r} has messages in flight to handlers: seek once they'
                             ' are done'.format(stream))

        def moved(start: int | None) -> None:
            self.cursor.forget(stream)
            self._handed.drop(stream)
            for chunk in self._queue.take(stream):
                release_cut(chunk)
            self.paused.drop(stream)
            if self.tracker is not None:
                self.tracker.seek(stream, start)
            self._wake()

        await self._source.seek(stream, offset, moved)

    def _check_streams(self, streams: tp.Sequence[str]) -> None:
        check_streams(streams, self._source.streams if self._opened else None)

    #
    # a stuck application
    #

    def _held(self) -> list[str]:
        """The streams the application holds something of."""
        streams = self._handed.streams()
        streams.update(self._flight.streams())
        cursor = self.cursor
        if cursor.holding and cursor.stream is not None:
            streams.add(cursor.stream)
        return sorted(streams)

    def _seen(self) -> tuple[object, ...]:
        """What the application was last seen at: a move, a message of the cursor."""
        cursor = self.cursor
        return self._moves, cursor.next, id(cursor.messages)

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
                for stream in {*self._held(), *self._flight.streams(busy=False)}:
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
        self._handed.mark(tracker)
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
            self._watch.stop()
        self.cursor.clear()
        self._queue.clear()
        self._handed.clear()
        self.paused.clear()
        self._wake()
        if self._opened:
            self._source.end()

__all__ = ['Progress', 'Segment']
