"""
The checks of retention gaps a read owes as it ends (``stop_at_end``) or
leaves its place (a seek), answered before it does, bounded, told once;
and a single active consumer made active at an offset retention removed
(:py:mod:`rbfly.streams.subscriptions.gaps`), without sockets.
"""

from __future__ import annotations

import asyncio
import logging
import typing as tp

import pytest

from rbfly.streams.error import ConnectionLost, OffsetOutOfRange
from rbfly.streams.offset import Offset
from rbfly.streams.protocol.commands import OffsetSpec
from rbfly.streams.subscriptions.gaps import GapWatch
from rbfly.streams.subscriptions.options import ReadOptions
from rbfly.streams.subscriptions.progress import Progress
from rbfly.streams.subscriptions.source import Subscriptions
from rbfly.streams.subscriptions.subscription import Subscription

from ._chunks import chunk
from ._watch import Clock, Stats, Told, checked, take, take_over_gap, watched

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
