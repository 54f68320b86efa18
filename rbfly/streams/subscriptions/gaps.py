"""
Gaps: the offsets a subscription was to read and the broker skipped,
checked against the stream's first offset to tell the offsets retention
removed before the reader got to them from those of records without
messages.

Each chunk covers the offsets from its first to its first plus its number
of records. A chunk taken that starts past the offset after the chunk
taken before leaves a *gap* between them. Two things leave one:

- chunks the broker does not send subscriptions: those of a consumer's
  stored offset (StoreOffset on a stream nobody writes to at that
  moment), a publisher's deduplication state at the start of a segment,
  chunks a filter rules out; their offsets are in the stream;
- retention overtaking the reader: the broker's reader reads on through
  the segment file it has open, deleted meanwhile, and when the segments
  after it were deleted too, goes on at the first segment left; the
  offsets between are not in the stream any more.

A gap alone says nothing, then: a consumer storing its offset every few
messages sees one after each store. A gap is *pending* until the
stream's first offset is asked for (its statistics, RabbitMQ 3.11+; a
subscription on 3.10 is not watched, and asks nothing): offsets of a gap
below the first offset of that moment are taken for lost (they held
messages, or records without any, removed after the reader passed them:
*up to* that many messages, then); those at or after it are in the
stream, records without messages. Retention only moves the first offset
forward, so asking after the gap was seen is enough.

The stream's first offset is asked for at most once per
:py:data:`CHECK_INTERVAL` seconds per subscription, and only while a gap
is pending (the clock is read only then), by a task of the subscription
(:py:class:`GapWatch`), ended with it: the chunks are handed out without
waiting for the answer. Pending gaps are kept in at most
:py:data:`MAX_GAPS` records: beyond, the oldest two are merged into one
that counts the offsets of both (exact when the first offset is past
both, "up to" when it falls between).

A read that ends (its last chunk taken: ``stop_at_end``), and a seek
leaving a place, *settle* the watch first (:py:meth:`GapWatch.settle`):
the gaps pending are asked for at once, not at their due time, and the
answer is waited for; what it reports comes before the end, or the move
(a check cancelled there would leave a loss untold: the read ended
normally, the gap its last chunk left unchecked). The wait is bounded:
at most the client's ``request_timeout`` (:py:data:`SETTLE_TIMEOUT`
seconds when it is ``None``) in all, also while the client's own
connection is lost (its statistics request waits for the connection
back); past it, the gaps are warned of as unchecked and dropped. One
question more at most: gaps seen after the question settle waits for
(another task reading on meanwhile) do not make it ask again.

:py:class:`Gaps` is the bookkeeping alone (no asyncio, no clock: tested
without sockets); :py:class:`GapWatch` asks and reports.
"""

from __future__ import annotations

import asyncio
import logging
import math
import typing as tp
from collections.abc import Awaitable, Callable
from time import monotonic

from ..error import OffsetOutOfRange, StreamsError

logger = logging.getLogger('rbfly.streams.subscriber')

CHECK_INTERVAL = 1.0
"""Least seconds between two questions of a subscription for its stream's first offset."""

MAX_GAPS = 32
"""Pending gap records a subscription keeps (older ones merged beyond)."""

SETTLE_TIMEOUT = 30.0
"""
Seconds :py:meth:`GapWatch.settle` waits for an answer in all when the
client has no request timeout (the default request timeout's).
"""

class Gap(tp.NamedTuple):
    """
    Offsets ``start`` to ``end - 1``, of which the broker skipped
    ``skipped`` (all of them, unless records were merged: the offsets
    read between them are in the span, not in the count).
    """
    start: int
    end: int
    skipped: int

class Gaps:
    """
    The gaps between the chunks a subscription took, pending a check.

    :param start: The offset the first chunk is expected at (an offset
        the subscription was made at), or ``-1``: not known (``first``,
        ``next``, a timestamp), no gap before the first chunk.
    :param limit: Pending records kept (see :py:data:`MAX_GAPS`).

    :ivar expected: The offset the next chunk is expected at (``-1``: not known).
    :ivar reported: Offsets below it were reported lost already (by a
        start check, :py:meth:`GapWatch.check_start`, or a check of gaps
        while reading): not counted again. Retention only moves the first
        offset forward, so they can never be read again: kept by
        :py:meth:`restart`.
    """
    __slots__ = ('_gaps', '_limit', 'expected', 'reported')

    def __init__(self, start: int = -1, limit: int = MAX_GAPS) -> None:
        if limit < 2:
            raise ValueError('limit must be 2 or more, got {}'.format(limit))
        self.expected = start
        self.reported = 0
        self._limit = limit
        self._gaps: list[Gap] = []

    @property
    def pending(self) -> bool:
        """Whether a gap waits for a check."""
        return bool(self._gaps)

    @property
    def records(self) -> tuple[Gap, ...]:
        """The pending gaps, oldest first."""
        return tuple(self._gaps)

    def restart(self, start: int = -1) -> None:
        """
        The subscription goes on elsewhere (``start`` as for the
        constructor); the offsets reported lost stay so (a single active
        consumer made active again does not count them twice).
        """
        self.expected = start
        self._gaps.clear()

    def taken(self, first: int, end: int) -> bool:
        """
        A chunk of offsets ``first`` to ``end - 1`` was taken; true when it
        left a gap after the chunk before (pending now).
        """
        expected = self.expected
        found = first > expected >= 0
        if found:
            self._add(Gap(expected, first, first - expected))
        if end > expected:
            self.expected = end
        return found

    def _add(self, gap: Gap) -> None:
        gaps = self._gaps
        if gaps and gaps[-1].end == gap.start:  # adjacent: one record
            last = gaps[-1]
            gaps[-1] = Gap(last.start, gap.end, last.skipped + gap.skipped)
        else:
            gaps.append(gap)
        while len(gaps) > self._limit:
            a, b = gaps[0], gaps[1]
            gaps[0:2] = [Gap(a.start, b.end, a.skipped + b.skipped)]

    def take(self) -> tuple[Gap, ...]:
        """The pending gaps, to check now: none is pending after."""
        gaps = tuple(self._gaps)
        self._gaps.clear()
        return gaps

    def put_back(self, gaps: tp.Sequence[Gap]) -> None:
        """Gaps taken whose check failed: pending again, before those seen since."""
        pending = self._gaps
        self._gaps = []
        for gap in (*gaps, *pending):
            self._add(gap)

    def lost(self, gaps: tp.Sequence[Gap], first: int) -> tuple[int, int, int]:
        """
        The offsets of ``gaps`` lost, at most, when the stream's first
        offset is ``first``: those below it, and not reported before;
        with the first and the last of them plus one (``0, 0, 0``: none
        lost).
        """
        total = 0
        low = high = 0
        for start, end, skipped in gaps:
            lo = max(start, self.reported)
            hi = min(end, first)
            if lo >= hi:
                continue
            # (a merged record's offsets, spread over its span: at most
            # the count, at most the span covered)
            n = skipped if (lo, hi) == (start, end) else min(skipped, hi - lo)
            if not total:
                low = lo
            total += n
            high = hi
        return total, low, high

First: tp.TypeAlias = Callable[[str], Awaitable[int | None]]
"""The stream's first offset now (its statistics); ``None``: not known."""

Report: tp.TypeAlias = Callable[[OffsetOutOfRange], Awaitable[None]]
"""
Reports offsets lost as the subscription's ``on_gap`` says (counted,
warned of, called back); raises what is to end the read.
"""

class GapWatch:
    """
    Watches the gaps of a subscription (see the module): counts them as
    chunks are taken, asks for the stream's first offset in a task of its
    own while one is pending, and reports what retention removed.

    :param stream: The stream.
    :param first: Asks the stream's first offset.
    :param report: Reports the offsets lost.
    :param start: The offset the first chunk is expected at, ``-1`` for
        none (see :py:class:`Gaps`).
    :param interval: Least seconds between two questions.
    :param settle_timeout: Most seconds :py:meth:`settle` waits (the
        client's request timeout, see :py:data:`SETTLE_TIMEOUT`).
    :param clock: Seconds of a monotonic clock.

    :ivar gaps: The pending gaps.
    :ivar checks: The questions asked (the stream's statistics).
    :ivar active_before: A single active consumer was made active before
        (its read position, ``gaps.expected``, is where a new
        activation's check starts, at the earliest).
    :ivar stop: Ends the read with an error (set by the subscription):
        what ``report`` raised, or why the first offset could not be
        asked for.
    """
    def __init__(
            self, stream: str, first: First, report: Report, start: int = -1, *,
            interval: float = CHECK_INTERVAL, settle_timeout: float = SETTLE_TIMEOUT,
            clock: Callable[[], float] = monotonic,
    ) -> None:
        self.stream = stream
        self.gaps = Gaps(start)
        self.checks = 0
        self.active_before = False
        self.stop: Callable[[Exception], None] = _unbound
        self._first = first
        self._report = report
        self._interval = interval
        self._settle_timeout = settle_timeout
        self._clock = clock
        self._due = -math.inf  # when the next question may be asked
        self._task: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None  # the next question, when due
        self._later: set[asyncio.Task[None]] = set()  # reports made after (see later)
        # checks answered, reporting (the application's on_gap function):
        # not cancelled, and settle's bound no longer applies
        self._reporting: set[asyncio.Task[object]] = set()
        self._closed = False
        self._handed = False  # (stop ends a successor's read: see hand_over)
        # the questions begun, the last of them left without an answer,
        # the last one answered (its report made), the last one whose gaps
        # a settle dropped (its answer reports nothing)
        self._begun = self._failed = self._answered = self._dropped = 0
        self._asking: tuple[Gap, ...] = ()  # the gaps of the question under way

    @property
    def checking(self) -> asyncio.Task[None] | None:
        """The question under way, if any."""
        return self._task

    def taken(self, first: int, end: int) -> None:
        """
        A chunk was taken (in the application's task, see
        :py:meth:`Gaps.taken`); ask for the stream's first offset when a
        gap is pending and the last question is old enough.
        """
        gaps = self.gaps
        expected = gaps.expected
        if first <= expected or expected < 0:  # no gap: the common case, kept cheap
            if end > expected:
                gaps.expected = end
            return
        gaps.taken(first, end)
        self._ask()

    def _ask(self) -> None:
        """
        Ask for the stream's first offset now, or when the last question
        is old enough (a timer: a gap pending is checked even when no
        chunk is taken after it), unless a question is under way or the
        watch is closed.
        """
        if self._closed or self._task is not None or self._timer is not None \
                or not self.gaps.pending:
            return
        loop = asyncio.get_running_loop()
        wait = self._due - self._clock()
        if wait > 0:
            self._timer = loop.call_later(wait, self._when_due)
        else:
            self._task = loop.create_task(self._check())

    def _when_due(self) -> None:
        self._timer = None
        self._ask()

    async def _check(self) -> None:
        gaps = self.gaps
        taken = self._asking = gaps.take()
        self._begun += 1
        begun = self._begun
        try:
            try:
                first = await self._first(self.stream)
            except StreamsError as ex:  # (a lost connection: asked again later)
                logger.debug('stream %r: its first offset not known, %d gaps pending: %s',
                             self.stream, len(taken), ex)
                if begun > self._dropped:  # (else warned of as unchecked)
                    gaps.put_back(taken)
                self._failed = begun
                return
            finally:
                self.checks += 1
                self._due = self._clock() + self._interval
                if self._asking is taken:
                    self._asking = ()
            if begun <= self._dropped:  # (a settle gave up on it, and told so)
                return
            lost, low, high = (0, 0, 0) if first is None else gaps.lost(taken, first)
            logger.debug('stream %r: %d gaps checked against its first offset %s: %d'
                         ' offsets lost', self.stream, len(taken), first, lost)
            if lost and first is not None:
                # (counted now: a later start check does not count them again)
                gaps.reported = max(gaps.reported, high)
                current = asyncio.current_task()
                assert current is not None
                self._reporting.add(current)
                try:
                    await self._report(OffsetOutOfRange(
                        self.stream, low, first, lost=lost, end=high, when='read',
                    ))
                finally:
                    self._reporting.discard(current)
                    self._answered = begun
            else:
                self._answered = begun
        except Exception as ex:  # noqa: BLE001 - the read raises it
            self._fail(ex)
        finally:
            if self._task is asyncio.current_task():  # (not one after a close)
                self._task = None
                self._ask()  # gaps put back, or found meanwhile: at the next due time

    async def settle(self) -> None:
        """
        The read ends, or leaves this place (its last chunk taken, a
        seek): the gaps pending are checked now, not at their due time,
        and the answer is waited for, so that what retention removed is
        reported before the read ends, as ``on_gap`` says (``stop``
        called).

        The wait for the answer is bounded: at most the watch's
        ``settle_timeout`` seconds in all (the client's request timeout),
        the client's own connection lost or not; once answered, its report
        (an ``on_gap`` function) is waited for to its end. Gaps whose check failed (no answer), or
        got none in time, are warned of as unchecked, and dropped; a
        question still under way is left to :py:meth:`close` (its answer
        reports nothing). One question more at most: once the question
        owed as it began answered, settle returns, even when another
        task reading on meanwhile left new gaps (checked as usual).

        Reports in tasks of their own (see :py:meth:`later`) are waited
        for too, within the same bound.

        Called from the watch's own check (an ``on_gap`` function seeking
        the stream), it returns at once: the check is the caller; the gaps
        pending (taken meanwhile) are warned of as unchecked, not dropped
        silently.
        """
        current = asyncio.current_task()
        task = self._task
        if task is not None and task is current:
            self._unchecked(self.gaps.take())
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._settle_timeout
        await self._settle(deadline)
        if later := [t for t in self._later if t is not current]:
            # (a wait cancelled, or timed out, leaves them to their end)
            await asyncio.wait(later, timeout=max(0.0, deadline - loop.time()))

    async def _settle(self, deadline: float) -> None:
        """The question owed answered, or given up on at ``deadline`` (see :py:meth:`settle`)."""
        gaps = self.gaps
        # the first question that takes every gap pending now: a question
        # under way that began before the last gaps were seen does not
        # (its failure, or one before, does not end the wait)
        owed = self._begun + int(gaps.pending)
        loop = asyncio.get_running_loop()
        while not self._closed and self._answered < owed:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            task = self._task
            if task is None:
                if not gaps.pending:
                    return
                task = self._task = loop.create_task(self._check())
            # (a wait cancelled leaves the question to close())
            done, _ = await asyncio.wait((task,), timeout=max(0.0, deadline - loop.time()))
            if not done and task in self._reporting:
                # answered: its report (the application's function) is
                # waited for to its end, the bound is the question's only
                await asyncio.wait((task,))
            if self._answered >= owed:
                return
            if self._failed >= owed:
                self._cancel()
                self._unchecked(gaps.take())
                return
            if not done:  # no answer in time: as a question failed
                self._dropped = self._begun
                self._unchecked((*self._asking, *gaps.take()))
                self._asking = ()
                return

    def _unchecked(self, gaps: tp.Sequence[Gap]) -> None:
        """Gaps the read leaves with no answer on the stream's first offset."""
        if gaps:
            logger.warning(
                'stream %r: up to %d offsets skipped (%d to %d) and not checked for'
                ' retention, its first offset not known', self.stream,
                sum(g.skipped for g in gaps), gaps[0].start, gaps[-1].end - 1,
            )

    async def check_start(
            self, start: int, when: tp.Literal['start', 'resume'] = 'start',
    ) -> Exception | None:
        """
        A subscription made at ``start`` (``when``: as it starts, or again
        after a lost connection or its stream moved): the offsets from
        there to the stream's first, if any, are lost; reported, and not
        counted again later (neither by a gap nor by the next start check).
        Returns what the read is to end with (``on_gap='raise'``, or its
        function raised), else ``None``.

        :raises rbfly.streams.error.StreamsError: When the first offset
            could not be asked for (the caller's to handle: the recovery
            asks again).
        """
        gap = await self.start_gap(start, when)
        return None if gap is None else await self.report(gap)

    async def report(self, gap: OffsetOutOfRange) -> Exception | None:
        """
        Report ``gap`` (as ``on_gap`` says); returns what the read is to
        end with, else ``None``.
        """
        try:
            await self._report(gap)
        except Exception as ex:  # noqa: BLE001 - the read raises it
            return ex
        return None

    async def start_gap(
            self, start: int, when: tp.Literal['start', 'resume'] = 'start',
    ) -> OffsetOutOfRange | None:
        """
        The offsets lost from ``start`` to the stream's first (see
        :py:meth:`check_start`), marked reported, and not reported yet:
        the caller reports them (``None``: none lost, or not known).

        :raises rbfly.streams.error.StreamsError: When the first offset
            could not be asked for.
        """
        gaps = self.gaps
        start = max(start, gaps.reported)
        first = await self._first(self.stream)
        if first is None or start >= first:
            return None
        gaps.reported = max(gaps.reported, first)  # (never lowered)
        return OffsetOutOfRange(self.stream, start, first, when=when)

    @property
    def reporting(self) -> tuple[asyncio.Task[None], ...]:
        """The reports under way in tasks of their own (see :py:meth:`later`)."""
        return tuple(self._later)

    def later(self, gap: OffsetOutOfRange, report: Report | None = None) -> None:
        """
        Report ``gap`` in a task of its own, once the caller's step is done
        (a single active consumer's activation: the broker is answered
        first, not after the application's ``on_gap`` function), with
        ``report`` (the watch's when ``None``; the caller counted the
        offsets, and warned of them, already); what it raises ends the
        read (``stop``), or, the watch closed, is logged at ERROR.

        Not cancelled by :py:meth:`close` (the application's function is
        not ended half-way, nor left untold): the watch keeps the task until
        it ends, and :py:meth:`settle` waits for it.
        """
        tell = self._report if report is None else report

        async def told() -> None:
            try:
                await tell(gap)
            except Exception as ex:  # noqa: BLE001 - the read raises it
                self._fail(ex)

        task = asyncio.get_running_loop().create_task(told())
        self._later.add(task)
        task.add_done_callback(self._later.discard)

    def hand_over(self, stop: Callable[[Exception], None]) -> None:
        """
        The read goes on in a successor (a seek replaces the subscription):
        what the reports still under way raise (an ``on_gap`` function
        that seeks, and raises after) ends it with ``stop``, this watch
        closed or not.
        """
        self.stop = stop
        self._handed = True

    def _fail(self, error: Exception) -> None:
        """
        End the read with ``error`` (``stop``); the watch closed and not
        handed over (nothing reads any more), logged at ERROR instead.
        """
        if self._closed and not self._handed:
            logger.error('stream %r: a report of its gaps failed after its read ended',
                         self.stream, exc_info=error)
        else:
            self.stop(error)

    def restart(self, start: int = -1) -> None:
        """
        The subscription goes on elsewhere (its offset reset, or a single
        active consumer activated again): a question under way is
        cancelled, as its answer is about gaps of the old place, and the
        gaps start again (see :py:meth:`Gaps.restart`).
        """
        self._cancel()
        self.gaps.restart(start)

    def close(self) -> None:
        """
        The subscription ended: a question under way is cancelled (not one
        answered, whose report goes on to its end), and none is asked any
        more (the chunks it still holds may be taken). Reports
        in tasks of their own (see :py:meth:`later`) go on to their end.
        """
        self._closed = True
        self._cancel()

    def _cancel(self) -> None:
        task, timer = self._task, self._timer
        self._task = self._timer = None
        if timer is not None:
            timer.cancel()
        if task is not None and task is not _current() and task not in self._reporting:
            # (not the check calling: an on_gap function that seeks ends
            # the subscription it is told of, and goes on; nor a check
            # answered, reporting: its function is not ended half-way)
            task.cancel()

def _current() -> asyncio.Task[object] | None:
    """The task running, if any (none: called outside the event loop)."""
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None

def _unbound(error: Exception) -> None:
    raise error

__all__ = [
    'CHECK_INTERVAL', 'MAX_GAPS', 'SETTLE_TIMEOUT', 'First', 'Gap', 'GapWatch', 'Gaps',
    'Report',
]
