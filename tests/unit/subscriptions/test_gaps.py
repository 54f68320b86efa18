"""
The gaps between the chunks a subscription takes
(:py:mod:`rbfly.streams.subscriptions.gaps`), without sockets: the
bookkeeping (gaps found, merged, bounded, counted against the stream's
first offset), and the watch of a subscription with a fake first offset
and clock: a check after the chunk is handed out, at most one per
interval, reported once, raised at the next take, cancelled with the
subscription; the checks a read owes as it ends (``stop_at_end``) or
leaves its place (a seek) answered first.
"""

from __future__ import annotations

import asyncio
import logging
import typing as tp
from collections.abc import Awaitable, Callable

import pytest

from rbfly.streams.error import ConnectionLost, OffsetOutOfRange
from rbfly.streams.offset import Offset
from rbfly.streams.protocol.commands import OffsetSpec
from rbfly.streams.subscriptions.gaps import SETTLE_TIMEOUT, Gap, Gaps, GapWatch
from rbfly.streams.subscriptions.options import ReadOptions
from rbfly.streams.subscriptions.progress import Progress
from rbfly.streams.subscriptions.source import Subscriptions
from rbfly.streams.subscriptions.subscription import Subscription

from ._chunks import chunk

#
# the bookkeeping
#

def test_contiguous() -> None:
    """Chunks one after the other leave no gap."""
    gaps = Gaps(0)
    assert not gaps.taken(0, 5)
    assert not gaps.taken(5, 10)
    assert not gaps.pending and gaps.expected == 10

def test_gap() -> None:
    """A chunk past the offset expected leaves the offsets between."""
    gaps = Gaps(0)
    gaps.taken(0, 5)
    assert gaps.taken(8, 10)
    assert gaps.records == (Gap(5, 8, 3),)
    assert gaps.expected == 10

def test_start_not_known() -> None:
    """Started at ``first``, ``next`` or a time: no gap before the first chunk."""
    gaps = Gaps()
    assert not gaps.taken(100, 110)
    assert gaps.taken(112, 120)
    assert gaps.records == (Gap(110, 112, 2),)

def test_start_offset() -> None:
    """Started at an offset: a first chunk past it leaves a gap; one holding it none."""
    gaps = Gaps(10)
    assert gaps.taken(12, 20)
    assert gaps.records == (Gap(10, 12, 2),)
    gaps = Gaps(10)
    assert not gaps.taken(5, 20)
    assert not gaps.pending

def test_earlier_chunk() -> None:
    """A chunk before the offset expected (received again) moves nothing back."""
    gaps = Gaps(0)
    gaps.taken(0, 15)
    assert not gaps.taken(10, 12)
    assert gaps.expected == 15
    assert not gaps.pending

def test_adjacent_merged() -> None:
    """Gaps that touch (a chunk of no records between) make one record."""
    gaps = Gaps(0)
    gaps.taken(0, 5)
    gaps.taken(7, 7)
    gaps.taken(9, 12)
    assert gaps.records == (Gap(5, 9, 4),)

def test_bounded() -> None:
    """Past the limit, the oldest records merge; their counts add up."""
    gaps = Gaps(0, limit=3)
    for first in range(0, 12, 2):  # chunks of one offset, every other offset
        gaps.taken(first, first + 1)
    assert gaps.records == (Gap(1, 6, 3), Gap(7, 8, 1), Gap(9, 10, 1))
    assert sum(g.skipped for g in gaps.records) == 5

def test_bad_limit() -> None:
    with pytest.raises(ValueError, match='limit must be 2 or more'):
        Gaps(0, limit=1)

@pytest.mark.parametrize(('first', 'lost'), [
    (0, (0, 0, 0)),  # the stream's start: nothing removed, records without messages
    (10, (0, 0, 0)),  # the first gap starts at the first offset: not removed
    (15, (5, 10, 15)),
    (20, (10, 10, 20)),
    (35, (15, 10, 35)),
    (100, (20, 10, 40)),
])
def test_lost(first: int, lost: tuple[int, int, int]) -> None:
    """The offsets of the gaps below the stream's first offset, and their bounds."""
    gaps = Gaps()
    records = (Gap(10, 20, 10), Gap(30, 40, 10))
    assert gaps.lost(records, first) == lost

def test_lost_merged() -> None:
    """A merged record the first offset falls in: at most its count, at most the span below."""
    gaps = Gaps()
    merged = (Gap(0, 100, 10),)
    assert gaps.lost(merged, 50) == (10, 0, 50)
    assert gaps.lost(merged, 5) == (5, 0, 5)
    assert gaps.lost(merged, 200) == (10, 0, 100)

def test_lost_reported() -> None:
    """Offsets a start check reported are not counted again."""
    gaps = Gaps()
    gaps.reported = 15
    assert gaps.lost((Gap(10, 20, 10),), 30) == (5, 15, 20)
    assert gaps.lost((Gap(10, 15, 5),), 30) == (0, 0, 0)

def test_take_and_put_back() -> None:
    """Gaps taken for a check that failed come back before those found since."""
    gaps = Gaps(0)
    gaps.taken(2, 3)
    taken = gaps.take()
    assert taken == (Gap(0, 2, 2),) and not gaps.pending
    gaps.taken(5, 6)
    gaps.put_back(taken)
    assert gaps.records == (Gap(0, 2, 2), Gap(3, 5, 2))

def test_restart() -> None:
    """
    Restarted, the gaps pending are forgotten; the offsets reported lost
    stay so (gone for good: not counted again after an activation).
    """
    gaps = Gaps(0)
    gaps.taken(2, 3)
    gaps.reported = 7
    gaps.restart(40)
    assert (gaps.expected, gaps.reported, gaps.pending) == (40, 7, False)
    gaps.restart()
    assert not gaps.taken(50, 60)

#
# the watch of a subscription
#

class Stats:
    """The stream's first offset, as its statistics say; counts the questions."""
    def __init__(self, first: int | None) -> None:
        self.first = first
        self.asked = 0
        self.error: Exception | None = None
        self.hold: asyncio.Future[None] | None = None

    async def __call__(self, stream: str) -> int | None:
        assert stream == 's'
        self.asked += 1
        if self.hold is not None:
            await self.hold
        if self.error is not None:
            raise self.error
        return self.first

class Clock:
    """A clock the test moves; counts its reads."""
    def __init__(self) -> None:
        self.now = 0.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now

class Told:
    """
    The reports (``on_gap``'s), raising ``error`` when set, and awaiting
    ``during`` first when set (an ``on_gap`` function doing something).
    """
    def __init__(self) -> None:
        self.gaps: list[OffsetOutOfRange] = []
        self.error: Exception | None = None
        self.during: Callable[[], Awaitable[None]] | None = None

    async def __call__(self, gap: OffsetOutOfRange) -> None:
        self.gaps.append(gap)
        if self.during is not None:
            await self.during()
        if self.error is not None:
            raise self.error

def watched(
        first: int | None, start: int = 0, settle_timeout: float = SETTLE_TIMEOUT,
) -> tuple[Subscription, GapWatch, Stats, Clock, Told]:
    stats, clock, told = Stats(first), Clock(), Told()
    watch = GapWatch('s', stats, told, start, settle_timeout=settle_timeout, clock=clock)
    sub = Subscription(
        's', OffsetSpec.offset(start), start, {}, ReadOptions(amqp=False),
        resume_offset=Offset.offset(start), gaps=watch,
    )
    return sub, watch, stats, clock, told

def take(sub: Subscription) -> list[int]:
    """The offsets of the next chunk's messages."""
    taken = sub.poll()
    assert taken is not None
    return [m.stream_offset for m in taken]

def take_over_gap(sub: Subscription) -> None:
    """Take the chunks at 0 and at 40: offsets 5 to 39 between them (a gap of 35)."""
    sub.on_chunk(chunk(0, 5), None)
    sub.on_chunk(chunk(40, 5), None)
    take(sub)
    take(sub)

def fire(watch: GapWatch) -> None:
    """The watch's timer is due (the fake clock moved): run what the loop would run."""
    timer = watch._timer
    assert timer is not None
    timer.cancel()  # (the loop's own clock: not due yet)
    watch._when_due()

async def checked(watch: GapWatch) -> None:
    """Wait for the check under way (one must be)."""
    task = watch.checking
    assert task is not None
    await task

async def test_overtaken() -> None:
    """
    Retention overtook the reader: the chunk past the gap is handed out
    at once; the check that follows reports the offsets below the first.
    """
    sub, watch, stats, _, told = watched(first=40)
    sub.on_chunk(chunk(0, 5), None)
    sub.on_chunk(chunk(40, 5), None)
    assert take(sub) == [0, 1, 2, 3, 4]
    assert watch.checking is None
    assert take(sub) == [40, 41, 42, 43, 44]  # (not held for the check)
    assert stats.asked == 0
    await checked(watch)
    [gap] = told.gaps
    assert (gap.stream, gap.offset, gap.end, gap.first, gap.lost, gap.when) == \
        ('s', 5, 40, 40, 35, 'read')
    assert str(gap) == (
        "stream 's': retention removed up to 35 messages, offsets 5 to 39, before the"
        ' subscription read them (the stream starts at offset 40 now): read faster, or keep'
        " more of the stream (max_length_bytes, max_age); on_gap='warn' goes on, 'raise'"
        ' stops the subscription, a callback decides'
    )
    assert stats.asked == watch.checks == 1
    assert not watch.gaps.pending

async def test_records_without_messages() -> None:
    """Gaps at or after the first offset (stored offsets): checked, nothing reported."""
    sub, watch, stats, _, told = watched(first=0)
    for first in (0, 6, 12):  # a stored offset after each chunk of 5
        sub.on_chunk(chunk(first, 5), None)
        take(sub)
    await checked(watch)
    assert told.gaps == [] and stats.asked == 1  # (both gaps: found before it ran)
    assert not watch.gaps.pending

async def test_one_check_a_second() -> None:
    """
    Gaps found within the interval wait for the next check, which a timer
    starts when it is due, whether or not a chunk is taken then; the
    clock is read only while a gap is pending.
    """
    sub, watch, stats, clock, told = watched(first=0)
    sub.on_chunk(chunk(0, 5), None)
    take(sub)
    assert clock.reads == 0  # (no gap: no clock)
    sub.on_chunk(chunk(6, 5), None)
    take(sub)
    await checked(watch)
    assert stats.asked == 1
    clock.now = 0.5
    sub.on_chunk(chunk(12, 5), None)
    take(sub)
    assert watch.checking is None and watch.gaps.pending  # (due at 1.0)
    assert watch._timer is not None  # (the check when due)
    reads = clock.reads
    sub.on_chunk(chunk(17, 5), None)
    take(sub)  # no gap, a check pending: no clock, no second timer
    assert clock.reads == reads and watch.checking is None
    clock.now = 1.0
    stats.first = 13  # retention removed the offset of the second gap
    fire(watch)  # (as the loop runs the timer at 1.0)
    await checked(watch)
    assert stats.asked == 2
    [gap] = told.gaps
    assert (gap.offset, gap.end, gap.lost) == (11, 12, 1)  # (16 is after the first)
    assert watch._timer is None and not watch.gaps.pending
    sub.on_chunk(chunk(22, 5), None)
    reads = clock.reads
    take(sub)
    assert clock.reads == reads and watch.checking is None


async def test_pending_gap_checked_without_a_take() -> None:
    """
    A gap put back by a failed check is asked for again when due, with
    no chunk taken after it (a quiet stream); a closed watch asks nothing.
    """
    sub, watch, stats, clock, told = watched(first=40)
    stats.error = ConnectionLost('lost')
    take_over_gap(sub)
    await checked(watch)
    assert watch.gaps.pending and watch._timer is not None
    stats.error = None
    clock.now = 1.0
    fire(watch)
    await checked(watch)
    [gap] = told.gaps
    assert gap.lost == 35
    sub.on_chunk(chunk(50, 5), None)
    watch.close()
    take(sub)  # a gap after the close: not asked for
    assert watch.checking is None and watch._timer is None

async def test_raise() -> None:
    """
    ``on_gap='raise'``: the next take raises the error, before the chunks
    buffered, and every take after; a wait returns at once.
    """
    sub, watch, _, _, told = watched(first=40)
    told.error = OffsetOutOfRange('s', 5, 40, lost=35, end=40, when='read')
    take_over_gap(sub)
    sub.on_chunk(chunk(45, 5), None)
    await checked(watch)
    with pytest.raises(OffsetOutOfRange) as info:
        sub.poll()
    assert info.value is told.error
    with pytest.raises(OffsetOutOfRange):
        sub.poll()
    async with asyncio.timeout(1):  # (a bound: it returns without waiting)
        await sub.wait()

async def test_callback_wakes_a_waiting_take() -> None:
    """A report raising while the application waits for a chunk: the wait ends, the take raises."""
    sub, watch, _, _, told = watched(first=40)
    told.error = ValueError('stop')
    take_over_gap(sub)
    waiting = asyncio.ensure_future(sub.wait())
    await checked(watch)
    await waiting
    with pytest.raises(ValueError, match='stop'):
        sub.poll()

async def test_check_fails() -> None:
    """The first offset not known (a lost connection): the gaps wait for the next check."""
    sub, watch, stats, clock, told = watched(first=40)
    stats.error = ConnectionLost('lost')
    take_over_gap(sub)
    await checked(watch)
    assert watch.gaps.records == (Gap(5, 40, 35),) and told.gaps == []
    stats.error = None
    clock.now = 1.0
    sub.on_chunk(chunk(45, 5), None)
    take(sub)
    fire(watch)  # (the gap put back: asked for when due, chunk or not)
    await checked(watch)
    assert [g.lost for g in told.gaps] == [35]
    assert stats.asked == watch.checks == 2

async def test_first_not_known() -> None:
    """A stream without chunks now (``None``): the gaps taken say nothing."""
    sub, watch, _, _, told = watched(first=None)
    take_over_gap(sub)
    await checked(watch)
    assert told.gaps == [] and not watch.gaps.pending

async def test_cancelled_with_subscription() -> None:
    """The subscription ends during a check: the check is cancelled, and stays so."""
    sub, watch, stats, _, told = watched(first=40)
    stats.hold = asyncio.get_running_loop().create_future()
    take_over_gap(sub)
    task = watch.checking
    assert task is not None
    await asyncio.sleep(0)  # (the check asks)
    assert stats.asked == 1
    sub.close()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled() and told.gaps == [] and watch.checking is None

async def test_restart_forgets() -> None:
    """Subscribed again elsewhere (a resume callback's offset): the gaps before do not count."""
    sub, watch, _, _, _ = watched(first=0)
    sub.on_chunk(chunk(0, 5), None)
    take(sub)
    sub.restart(OffsetSpec.offset(100), 100, Offset.offset(100))
    assert watch.gaps.expected == 100
    sub.restart(OffsetSpec.first(), 0, Offset.FIRST)
    assert watch.gaps.expected == -1

#
# a start, and a start again
#

async def test_check_start() -> None:
    """An offset older than the first: reported, and not counted again by a gap."""
    sub, watch, stats, _, told = watched(first=50, start=10)
    assert await watch.check_start(10, 'resume') is None
    [gap] = told.gaps
    assert (gap.offset, gap.first, gap.lost, gap.when) == (10, 50, 40, 'resume')
    assert str(gap).startswith(
        "stream 's' starts at offset 50 now, the subscription was to resume at 10: 40 offsets")
    # the broker starts at the first chunk left, at 60 by then
    stats.first = 60
    sub.on_chunk(chunk(60, 5), None)
    take(sub)
    await checked(watch)
    assert [g.lost for g in told.gaps] == [40, 10]  # (50 to 59: after the start's report)
    # resumed after the chunk received, retention past it again
    stats.first = 70
    assert await watch.check_start(65, 'resume') is None
    assert [(g.offset, g.lost) for g in told.gaps[2:]] == [(65, 5)]
    # asked again at that offset: what was reported is not again
    assert await watch.check_start(65, 'resume') is None
    assert len(told.gaps) == 3

async def test_check_start_in_range() -> None:
    _, watch, stats, _, told = watched(first=5, start=10)
    assert await watch.check_start(10) is None
    stats.first = None
    assert await watch.check_start(10) is None
    assert told.gaps == [] and watch.gaps.reported == 0

async def test_check_start_keeps_reported() -> None:
    """
    Offsets reported lost meanwhile past the stream's first (a check while
    reading, as the start check waited for its answer): not lowered.
    """
    _, watch, stats, _, _ = watched(first=50, start=10)
    stats.hold = asyncio.get_running_loop().create_future()
    checking = asyncio.ensure_future(watch.start_gap(10))
    await asyncio.sleep(0)  # (the start check asks)
    assert stats.asked == 1
    watch.gaps.reported = 80  # (reported meanwhile)
    stats.hold.set_result(None)
    gap = await checking
    assert gap is not None and watch.gaps.reported == 80

async def test_check_start_raises() -> None:
    """What the report raised is returned: the caller ends the read with it."""
    _, watch, _, _, told = watched(first=50, start=10)
    told.error = OffsetOutOfRange('s', 10, 50)
    assert await watch.check_start(10) is told.error

async def test_check_start_cannot_ask() -> None:
    """The first offset not known: the caller's error (the recovery asks again)."""
    _, watch, stats, _, _ = watched(first=50, start=10)
    stats.error = ConnectionLost('lost')
    with pytest.raises(ConnectionLost):
        await watch.check_start(10, 'resume')

async def test_restart_cancels_the_check() -> None:
    """
    The subscription goes on elsewhere while a check is under way: the
    check, about the old place's gaps, is cancelled; nothing is told.
    """
    sub, watch, _, _, told = watched(first=40)
    take_over_gap(sub)
    task = watch.checking
    assert task is not None
    watch.restart(100)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert told.gaps == [] and not watch.gaps.pending and watch.checking is None
    assert watch.gaps.expected == 100

#
# a read that ends, or leaves its place: the checks it owes answered first
#

async def test_settle_asks_at_once() -> None:
    """
    A gap waiting for its second (a timer): settling asks now, waits
    for the answer, and reports before it returns.
    """
    sub, watch, stats, clock, told = watched(first=0)
    sub.on_chunk(chunk(0, 5), None)
    sub.on_chunk(chunk(6, 5), None)
    take(sub)
    take(sub)
    await checked(watch)
    clock.now = 0.5
    stats.first = 40
    sub.on_chunk(chunk(40, 5), None)
    take(sub)
    assert watch._timer is not None and watch.checking is None  # (due at 1.0)
    await watch.settle()
    assert stats.asked == 2 and watch._timer is None and watch.checking is None
    assert [(g.offset, g.end, g.lost) for g in told.gaps] == [(11, 40, 29)]
    assert not watch.gaps.pending

async def test_settle_waits_for_the_check() -> None:
    """
    A check under way as the read ends: waited for; a gap found after it
    began is asked for once more.
    """
    sub, watch, stats, _, told = watched(first=40)
    stats.hold = asyncio.get_running_loop().create_future()
    take_over_gap(sub)
    await asyncio.sleep(0)  # (the question asks)
    assert stats.asked == 1
    sub.on_chunk(chunk(50, 5), None)
    take(sub)  # (a gap of 45 to 49, after the question)
    settling = asyncio.ensure_future(watch.settle())
    stats.first = 50
    stats.hold.set_result(None)
    await settling
    assert [(g.offset, g.end, g.lost) for g in told.gaps] == [(5, 40, 35), (45, 50, 5)]
    assert stats.asked == watch.checks == 2

async def test_settle_nothing_owed() -> None:
    """No gap pending: nothing asked."""
    sub, watch, stats, clock, _ = watched(first=0)
    sub.on_chunk(chunk(0, 5), None)
    take(sub)
    await watch.settle()
    assert stats.asked == 0 and clock.reads == 0

async def test_settle_without_an_answer(caplog: pytest.LogCaptureFixture) -> None:
    """
    The first offset not known as the read ends: one question, then the
    gaps are warned of as unchecked and dropped (nothing reported).
    """
    sub, watch, stats, _, told = watched(first=40)
    stats.error = ConnectionLost('lost')
    take_over_gap(sub)
    with caplog.at_level(logging.WARNING, logger='rbfly.streams.subscriber'):
        await watch.settle()
    assert stats.asked == 1 and told.gaps == []
    assert not watch.gaps.pending and watch._timer is None and watch.checking is None
    [record] = caplog.records
    assert record.getMessage() == (
        "stream 's': up to 35 offsets skipped (5 to 39) and not checked for retention, its"
        ' first offset not known'
    )

async def test_settle_after_a_failed_check() -> None:
    """A check failed during the read (its gaps put back): settling asks again, once."""
    sub, watch, stats, _, told = watched(first=40)
    stats.error = ConnectionLost('lost')
    take_over_gap(sub)
    await checked(watch)
    assert watch.gaps.pending and watch._timer is not None
    stats.error = None
    await watch.settle()
    assert [g.lost for g in told.gaps] == [35] and stats.asked == 2

async def test_settle_raises() -> None:
    """``on_gap='raise'``: the subscription's settle raises what the report raised."""
    sub, _, _, _, told = watched(first=40)
    told.error = OffsetOutOfRange('s', 5, 40, lost=35, end=40, when='read')
    take_over_gap(sub)
    with pytest.raises(OffsetOutOfRange) as info:
        await sub.settle()
    assert info.value is told.error

async def test_settle_closed() -> None:
    """
    A watch closed (the subscription ended) asks nothing more: settle
    returns with the question asked before unanswered, nothing reported.
    """
    sub, watch, stats, _, told = watched(first=40)
    stats.hold = asyncio.get_running_loop().create_future()
    take_over_gap(sub)
    await asyncio.sleep(0)  # (the question asks)
    assert stats.asked == 1
    sub.close()
    await watch.settle()
    assert watch.checking is None and stats.hold.cancelled()  # (no answer: cancelled by close)
    assert stats.asked == 1 and told.gaps == []

async def test_settle_bounded(caplog: pytest.LogCaptureFixture) -> None:
    """
    No answer within the settle timeout (the client's own connection
    lost, a silent one): the gaps are warned of as unchecked and dropped,
    as for a failed check; a late answer reports nothing.
    """
    sub, watch, stats, _, told = watched(first=40, settle_timeout=0)
    stats.hold = asyncio.get_running_loop().create_future()
    take_over_gap(sub)
    await asyncio.sleep(0)  # (the question asks)
    question = watch.checking
    assert question is not None and stats.asked == 1
    with caplog.at_level(logging.WARNING, logger='rbfly.streams.subscriber'):
        await watch.settle()
    [record] = caplog.records
    assert record.getMessage() == (
        "stream 's': up to 35 offsets skipped (5 to 39) and not checked for retention, its"
        ' first offset not known'
    )
    assert not watch.gaps.pending and told.gaps == []
    stats.hold.set_result(None)  # (answered late: 5 to 39 removed)
    await question
    assert told.gaps == [] and stats.asked == 1 and not watch.gaps.pending

async def test_settle_waits_for_the_report(caplog: pytest.LogCaptureFixture) -> None:
    """
    The question answered within the settle timeout, its report (an
    ``on_gap`` function) slower: settle waits for the report to its end,
    the bound is the question's only (nothing warned of as unchecked).
    """
    sub, watch, _, _, told = watched(first=40, settle_timeout=0)
    entered = asyncio.Event()
    released: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    done: list[str] = []

    async def slow() -> None:
        entered.set()
        await released
        for _ in range(10):  # (the function awaits more, past the timeout)
            await asyncio.sleep(0)
        done.append('reported')

    told.during = slow
    take_over_gap(sub)
    await entered.wait()  # (answered: the report under way)
    settling = asyncio.ensure_future(watch.settle())
    released.set_result(None)
    with caplog.at_level(logging.WARNING, logger='rbfly.streams.subscriber'):
        await settling
    done.append('settled')
    assert done == ['reported', 'settled'] and caplog.records == []
    assert [g.lost for g in told.gaps] == [35]

async def test_close_leaves_the_report() -> None:
    """
    The subscription ends while a check answered reports (an ``on_gap``
    function under way): the report is not cancelled, it goes on to its
    end.
    """
    sub, watch, _, _, told = watched(first=40)
    entered = asyncio.Event()
    released: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    done: list[int] = []

    async def slow() -> None:
        entered.set()
        await released
        done.append(1)

    told.during = slow
    take_over_gap(sub)
    question = watch.checking
    assert question is not None
    await entered.wait()
    sub.close()
    released.set_result(None)
    await question
    assert done == [1] and not question.cancelled() and watch.checking is None

async def test_settle_one_question_more() -> None:
    """
    Another task reads on while settle waits (the old subscription of a
    seek): its new gap does not make settle ask again; it returns once
    the question it owes answered, the new gap checked at its due time.
    """
    sub, watch, stats, _, told = watched(first=40)
    stats.hold = asyncio.get_running_loop().create_future()
    take_over_gap(sub)
    settling = asyncio.ensure_future(watch.settle())
    await asyncio.sleep(0)  # (the question asks, settle waits for it)
    assert stats.asked == 1
    sub.on_chunk(chunk(50, 5), None)
    take(sub)  # (read on: a gap of 45 to 49)
    stats.hold.set_result(None)
    await settling
    assert stats.asked == 1 and [g.lost for g in told.gaps] == [35]
    assert watch.gaps.pending and watch._timer is not None and watch.checking is None

async def test_settle_from_its_check() -> None:
    """
    An ``on_gap`` function seeking the stream (settling the watch whose
    check calls it): settle returns at once, the seek ends, and the
    function goes on (the check calling it is not cancelled as the old
    subscription ends).
    """
    sub, watch, _, _, told = watched(first=40)
    progress, source = reading(sub)
    after: list[int] = []

    async def seek() -> None:
        await progress.seek('s', 100)
        await asyncio.sleep(0)  # (the function awaits something more)
        after.append(1)

    told.during = seek
    sub.on_chunk(chunk(0, 5), None)
    sub.on_chunk(chunk(40, 5), None)
    await progress.take()
    await progress.take()
    question = watch.checking
    assert question is not None
    await question
    assert [g.lost for g in told.gaps] == [35] and after == [1]
    assert source.subs[0] is not sub and sub.closed

async def test_raises_after_its_seek() -> None:
    """
    An ``on_gap`` function seeking the stream, then raising: the read
    going on at the new place raises it at its next take (not lost with
    the old subscription).
    """
    sub, watch, _, _, told = watched(first=40)
    progress, source = reading(sub)
    error = ValueError('the function failed after its seek')

    async def seek() -> None:
        await progress.seek('s', 100)
        raise error

    told.during = seek
    sub.on_chunk(chunk(0, 5), None)
    sub.on_chunk(chunk(40, 5), None)
    await progress.take()
    await progress.take()
    question = watch.checking
    assert question is not None
    await question
    [successor] = source.subs
    assert successor is not sub and sub.closed
    with pytest.raises(ValueError) as info:
        successor.poll()  # (what the read's next take raises)
    assert info.value is error

async def test_settle_from_its_check_warns(caplog: pytest.LogCaptureFixture) -> None:
    """
    Settled from its own check (an ``on_gap`` function seeking), with a
    gap taken meanwhile: the gap is warned of as unchecked, not dropped
    silently.
    """
    sub, watch, _, _, told = watched(first=40)

    async def settle() -> None:
        sub.on_chunk(chunk(50, 5), None)
        take(sub)  # (read on meanwhile: 45 to 49 skipped)
        await watch.settle()

    told.during = settle
    take_over_gap(sub)
    question = watch.checking
    assert question is not None
    with caplog.at_level(logging.WARNING, logger='rbfly.streams.subscriber'):
        await question
    [record] = caplog.records
    assert record.getMessage() == (
        "stream 's': up to 5 offsets skipped (45 to 49) and not checked for retention, its"
        ' first offset not known'
    )
    assert not watch.gaps.pending and [g.lost for g in told.gaps] == [35]

async def test_read_report_counted_once() -> None:
    """A gap reported while reading is not told again by a start check (an activation)."""
    sub, watch, _, _, told = watched(first=40)
    take_over_gap(sub)
    await checked(watch)
    assert watch.gaps.reported == 40 and [g.lost for g in told.gaps] == [35]
    assert await watch.check_start(5, 'resume') is None
    assert len(told.gaps) == 1

async def test_settle_all_partitions() -> None:
    """
    A super stream's read ends: every partition settles, the losses of
    all told (and counted) before the first error is raised.
    """
    sub1, _, _, _, told1 = watched(first=40)
    sub2, _, _, _, told2 = watched(first=40)
    told1.error = OffsetOutOfRange('s', 5, 40, lost=35, end=40, when='read')
    _, source = reading(sub1, sub2)
    source.subs = [sub1, sub2]
    take_over_gap(sub1)
    take_over_gap(sub2)
    with pytest.raises(OffsetOutOfRange) as info:
        await source.settle()
    assert info.value is told1.error
    assert [g.lost for g in told1.gaps] == [g.lost for g in told2.gaps] == [35]

async def test_settle_all_cancelled() -> None:
    """A partition's settle cancelled: the cancellation is raised, not an error."""
    class Cancelled:
        async def settle(self) -> None:
            raise asyncio.CancelledError()

    sub, _, _, _, told = watched(first=40)
    told.error = OffsetOutOfRange('s', 5, 40, lost=35, end=40, when='read')
    _, source = reading(sub)
    source.subs = [sub, tp.cast(Subscription, Cancelled())]
    take_over_gap(sub)
    with pytest.raises(asyncio.CancelledError):
        await source.settle()
    assert [g.lost for g in told.gaps] == [35]

def reading(*subs: Subscription) -> tuple[Progress, Subscriptions]:
    """The progress of a read of ``subs`` (placed on no connection), and its source."""
    async def make() -> list[Subscription]:
        return list(subs)

    async def place(sub: Subscription) -> None:
        pass

    async def remake(stream: str, offset: Offset) -> Subscription:
        value = tp.cast(int, offset.value)
        sub, *_ = watched(first=0, start=value)
        return sub

    source = Subscriptions(make, place, Subscription.close, None, remake)
    return Progress(source), source

@pytest.mark.parametrize('raises', [False, True])
async def test_bounded_read_last_chunk(raises: bool) -> None:
    """
    A read to the end whose last chunk leaves a gap: it ends once the
    check answered; with a report raising (``on_gap='raise'``) it raises
    instead of ending.
    """
    sub, _, stats, _, told = watched(first=40)
    sub.stop_at(40, 45, finished=False)  # (the last chunk to read: at 40)
    if raises:
        told.error = OffsetOutOfRange('s', 5, 40, lost=35, end=40, when='read')
    progress, _ = reading(sub)
    sub.on_chunk(chunk(0, 5), None)
    sub.on_chunk(chunk(40, 10), None)
    assert (await progress.take()) is not None
    last = await progress.take()
    assert last is not None and [m.stream_offset for m in last] == [40, 41, 42, 43, 44]
    assert sub.finished
    if raises:
        with pytest.raises(OffsetOutOfRange) as info:
            await progress.take()
        assert info.value is told.error
    else:
        with pytest.raises(StopAsyncIteration):
            await progress.take()
    assert [g.lost for g in told.gaps] == [35] and stats.asked == 1

async def test_seek_tells_the_old_place() -> None:
    """
    A seek while a gap of the place it leaves is pending: its check
    answers before the old subscription ends; the error it raised
    (``on_gap='raise'``) is raised at the read's next take.
    """
    sub, watch, stats, _, told = watched(first=40)
    told.error = OffsetOutOfRange('s', 5, 40, lost=35, end=40, when='read')
    progress, source = reading(sub)
    sub.on_chunk(chunk(0, 5), None)
    sub.on_chunk(chunk(40, 5), None)
    await progress.take()
    await progress.take()  # (the gap: a check asked for)
    assert watch.checking is not None
    await progress.seek('s', 100)
    assert stats.asked == 1 and [g.lost for g in told.gaps] == [35]
    assert source.subs[0] is not sub and sub.closed
    with pytest.raises(OffsetOutOfRange) as info:
        await progress.take()
    assert info.value is told.error

async def test_seek_counts_the_old_place() -> None:
    """A report that goes on (a warning, a callback): told, and the seek reads on."""
    sub, _, _, _, told = watched(first=40)
    progress, source = reading(sub)
    sub.on_chunk(chunk(0, 5), None)
    sub.on_chunk(chunk(40, 5), None)
    await progress.take()
    await progress.take()
    await progress.seek('s', 100)
    assert [g.lost for g in told.gaps] == [35]
    new = source.subs[0]
    new.on_chunk(chunk(100, 5), None)
    taken = await progress.take()
    assert taken is not None and taken[0].stream_offset == 100

#
# a single active consumer made active
#

class Answering:
    """A connection answering consumer updates (recorded)."""
    def __init__(self) -> None:
        self.is_open = True
        self.answered = asyncio.Event()

    def send(self, command: object) -> None:
        pass

    def answer_consumer_update(self, correlation_id: int, spec: OffsetSpec) -> None:
        self.answered.set()

@pytest.mark.parametrize(('spec', 'lost'), [
    (OffsetSpec.offset(10), [30]),  # after the offset stored: 10 to 39 removed
    (OffsetSpec.first(), []),  # the broker's start: no gap before its first chunk
])
async def test_activated(spec: OffsetSpec, lost: list[int]) -> None:
    """
    Made active at an offset (after the one stored), the first chunk past
    it leaves a gap, checked as any: retention removed the offsets since
    the store.
    """
    async def activation(active: bool, on: tp.Callable[[], bool]) -> OffsetSpec:
        return spec

    stats, told = Stats(40), Told()
    watch = GapWatch('s', stats, told, -1, clock=Clock())
    sub = Subscription(
        's', OffsetSpec.first(), 0, {'name': 'g', 'single-active-consumer': 'true'},
        ReadOptions(amqp=False), activation=activation, resume_offset=Offset.FIRST,
        gaps=watch,
    )
    connection = Answering()
    sub.protocol = tp.cast(tp.Any, connection)
    sub.on_consumer_update(tp.cast(tp.Any, connection), 7, True)
    await connection.answered.wait()
    assert sub.active
    sub.on_chunk(chunk(40, 5), None)
    take(sub)
    if lost:
        await checked(watch)
    assert [g.lost for g in told.gaps] == lost
    assert watch.checking is None and not watch.gaps.pending

async def test_activation_raises_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    """
    An activation failing with ``on_gap='raise'``: the read raises the
    error; it is not also logged as an error.
    """
    error = OffsetOutOfRange('s', 11, 40, when='resume')

    async def activation(active: bool, on: tp.Callable[[], bool]) -> OffsetSpec:
        raise error

    sub = Subscription(
        's', OffsetSpec.first(), 0, {'name': 'g', 'single-active-consumer': 'true'},
        ReadOptions(amqp=False), activation=activation, resume_offset=Offset.FIRST,
    )
    connection = Answering()
    sub.protocol = tp.cast(tp.Any, connection)
    with caplog.at_level(logging.DEBUG, logger='rbfly.streams'):
        sub.on_consumer_update(tp.cast(tp.Any, connection), 7, True)
        await connection.answered.wait()
    assert [r.levelno for r in caplog.records if r.exc_info or 'failed' in r.getMessage()] \
        == [logging.DEBUG]
    with pytest.raises(OffsetOutOfRange) as info:
        sub.poll()
    assert info.value is error
