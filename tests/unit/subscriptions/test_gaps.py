"""
The gaps between the chunks a subscription takes
(:py:mod:`rbfly.streams.subscriptions.gaps`), without sockets: the
bookkeeping (gaps found, merged, bounded, counted against the stream's
first offset), and the watch of a subscription with a fake first offset
and clock: a check after the chunk is handed out, at most one per
interval, reported once, raised at the next take, cancelled with the
subscription, a start checked (the checks a read owes as it ends or
leaves its place, and an activation's: ``test_gaps_settle``).
"""

from __future__ import annotations

import asyncio

import pytest

from rbfly.streams.error import ConnectionLost, OffsetOutOfRange
from rbfly.streams.offset import Offset
from rbfly.streams.protocol.commands import OffsetSpec
from rbfly.streams.subscriptions.gaps import Gap, Gaps

from ._chunks import chunk
from ._watch import checked, fire, take, take_over_gap, watched

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
