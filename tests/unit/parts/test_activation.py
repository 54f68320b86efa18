"""
A single active consumer's activation (``Subscribing.activate``) whose
subscription leaves its connection while the stored offset is looked up:
the activation is void, and the application's ``consumer_update`` callback
is not told it is active (it was told of the loss already; the subscription
made again may be an inactive member, which the broker never tells so).
An activation at an offset retention removed since is told as the
subscription's ``on_gap`` says, as a resume's, and starts at the first
offset.
"""

import asyncio
import logging
import typing as tp

import pytest

from rbfly.streams import ConsumerUpdateContext, Offset
from rbfly.streams.error import ConnectionLost, OffsetOutOfRange, StreamsError
from rbfly.streams.metrics import Counters
from rbfly.streams.parts import subscribing as subscribing_module
from rbfly.streams.parts.subscribing import Subscribing
from rbfly.streams.protocol.base import OffsetSpec
from rbfly.streams.subscriptions.gaps import GapWatch

class Offsets:
    """Stored offsets, looked up when the test says."""
    def __init__(self) -> None:
        self.answer: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def query(self, stream: str, reference: str) -> int:
        return await self.answer


def subscribing(offsets: Offsets) -> Subscribing:
    none = tp.cast(tp.Any, None)  # (the parts an activation lost meanwhile does not use)
    return Subscribing(none, none, none, tp.cast(tp.Any, offsets), none, none)


async def test_activation_lost_meanwhile_not_told() -> None:
    """The connection is lost during the offset's lookup: ConnectionLost, no callback."""
    offsets = Offsets()
    told: list[ConsumerUpdateContext] = []
    on = [True]
    task = asyncio.ensure_future(subscribing(offsets).activate(
        'orders-1', 'group', Offset.FIRST, told.append, True, lambda: on[0],
    ))
    await asyncio.sleep(0)
    on[0] = False  # the subscription's connection lost
    offsets.answer.set_result(41)
    with pytest.raises(ConnectionLost, match="activating on stream 'orders-1'"):
        await task
    assert told == []


async def test_step_down_told_when_lost() -> None:
    """Stepping down is told whatever happened to the connection (nothing to void)."""
    offsets = Offsets()
    offsets.answer.set_result(41)
    told: list[ConsumerUpdateContext] = []
    spec = await subscribing(offsets).activate(
        'orders-1', 'group', Offset.FIRST, told.append, False, lambda: False,
    )
    assert spec == OffsetSpec.none()
    assert told == [ConsumerUpdateContext('orders-1', 'group', False, 41, Offset.offset(42))]


class Stored:
    """An offset stored; the parts an activation asks, answering at once."""
    def __init__(self, stored: int) -> None:
        self.stored = stored

    async def query(self, stream: str, reference: str) -> int:
        return self.stored

    async def get(self) -> None:
        pass

    async def resolve(self, stream: str, offset: Offset) -> Offset:
        return offset

    async def spec(self, stream: str, offset: Offset) -> tuple[OffsetSpec, int]:
        value = tp.cast(int, offset.value)
        return OffsetSpec.offset(value), value

def activating(stored: int, counters: Counters | None = None) -> Subscribing:
    parts = tp.cast(tp.Any, Stored(stored))
    none = tp.cast(tp.Any, None)
    return Subscribing(none, parts, none, parts, parts, counters or Counters())

class First:
    """The stream's first offset (or the error asking it raises)."""
    def __init__(self, first: int | Exception) -> None:
        self.first = first

    async def __call__(self, stream: str) -> int:
        if isinstance(self.first, Exception):
            raise self.first
        return self.first

def watch(first: int | Exception, told: list[OffsetOutOfRange], raises: bool = False) -> GapWatch:
    async def report(gap: OffsetOutOfRange) -> None:
        told.append(gap)
        if raises:
            raise gap
    return GapWatch('orders-1', First(first), report)

@pytest.mark.parametrize(('first', 'spec', 'lost'), [
    (100, OffsetSpec.offset(100), [89]),  # 11 to 99 removed: told, started at the first
    (5, OffsetSpec.offset(11), []),  # in the stream: as stored
])
async def test_activated_at_removed_offset(first: int, spec: OffsetSpec, lost: list[int]) -> None:
    """The offset after the one stored (10), retention past it or not."""
    told: list[OffsetOutOfRange] = []
    gaps = watch(first, told)
    got = await activating(10).activate(
        'orders-1', 'group', Offset.FIRST, None, True, lambda: True, gaps=gaps,
    )
    assert got == spec
    assert gaps.reporting == ()  # ('warn': told at once)
    assert [(g.offset, g.first, g.lost, g.when) for g in told] == \
        [(11, first, n, 'resume') for n in lost]

async def test_activated_at_removed_offset_raises() -> None:
    """``on_gap='raise'``: the activation fails with the error (the read raises it)."""
    told: list[OffsetOutOfRange] = []
    with pytest.raises(OffsetOutOfRange) as info:
        await activating(10).activate(
            'orders-1', 'group', Offset.FIRST, None, True, lambda: True,
            gaps=watch(100, told, raises=True), on_gap='raise',
        )
    assert told == [info.value]

async def test_activated_function_raises_after() -> None:
    """
    ``on_gap`` a function raising: the broker is answered (at the first
    offset), and the read ends with what the function raised.
    """
    told: list[OffsetOutOfRange] = []
    stopped: list[Exception] = []
    counters = Counters()

    def on_gap(gap: OffsetOutOfRange) -> None:
        told.append(gap)
        raise gap

    gaps = watch(100, [])
    gaps.stop = stopped.append
    got = await activating(10, counters).activate(
        'orders-1', 'group', Offset.FIRST, None, True, lambda: True, gaps=gaps,
        on_gap=on_gap,
    )
    # (counted at once; the function called once the broker is answered)
    assert got == OffsetSpec.offset(100) and told == [] and counters.messages_lost == 89
    await asyncio.gather(*gaps.reporting)
    assert stopped == told and len(told) == 1

async def test_activated_function_closed_before_it_starts(
        caplog: pytest.LogCaptureFixture,
) -> None:
    """
    The subscription ends before its ``on_gap`` function's task starts:
    the offsets were counted, the function is called all the same (not
    cancelled), and what it raises, with nothing to read it, is logged
    at ERROR.
    """
    told: list[OffsetOutOfRange] = []
    stopped: list[Exception] = []
    counters = Counters()

    def on_gap(gap: OffsetOutOfRange) -> None:
        told.append(gap)
        raise gap

    gaps = watch(100, [])
    gaps.stop = stopped.append
    await activating(10, counters).activate(
        'orders-1', 'group', Offset.FIRST, None, True, lambda: True, gaps=gaps,
        on_gap=on_gap,
    )
    reporting = gaps.reporting
    gaps.close()  # (the subscription ended)
    assert counters.messages_lost == 89 and len(reporting) == 1
    with caplog.at_level(logging.ERROR, 'rbfly.streams.subscriber'):
        await asyncio.gather(*reporting)
    assert len(told) == 1 and stopped == []
    assert [r.exc_info[1] for r in caplog.records if r.exc_info] == told

async def test_settle_waits_for_function() -> None:
    """
    A read that ends settles its watch: an ``on_gap`` function called
    after an activation is waited for (its error ends the read).
    """
    told: list[OffsetOutOfRange] = []
    stopped: list[Exception] = []

    async def on_gap(gap: OffsetOutOfRange) -> None:
        await asyncio.sleep(0)
        told.append(gap)
        raise gap

    gaps = watch(100, [])
    gaps.stop = stopped.append
    await activating(10).activate(
        'orders-1', 'group', Offset.FIRST, None, True, lambda: True, gaps=gaps,
        on_gap=on_gap,
    )
    await gaps.settle()
    assert stopped == told and len(told) == 1

@pytest.mark.parametrize(('first', 'spec', 'lost'), [
    (100, OffsetSpec.offset(100), [(60, 40)]),  # removed past its read: 60 to 99 told
    (50, OffsetSpec.offset(11), []),  # removed below its read only: nothing told
])
async def test_activated_again(
        first: int, spec: OffsetSpec, lost: list[tuple[int, int]],
) -> None:
    """
    A consumer active before, which read to offset 59 (stored 10): its
    check starts at its read, and the offsets below it, read or told
    already, are not counted by the gaps of the chunks read again.
    """
    told: list[OffsetOutOfRange] = []
    gaps = watch(first, told)
    gaps.active_before = True
    gaps.gaps.expected = 60
    got = await activating(10).activate(
        'orders-1', 'group', Offset.FIRST, None, True, lambda: True, gaps=gaps,
    )
    await asyncio.gather(*gaps.reporting)
    assert got == spec
    assert [(g.offset, g.lost) for g in told] == lost
    gaps.restart(tp.cast(int, got.value))  # (activated there)
    gaps.gaps.taken(first, first + 10)  # (the broker's first chunk: at the first offset)
    assert gaps.gaps.lost(gaps.gaps.take(), first) == (0, 0, 0)

async def test_activated_check_timed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """
    The stream's first offset not answered in time: activated at the
    offset stored, unchecked (the broker's consumer update waits meanwhile).
    """
    monkeypatch.setattr(subscribing_module, 'ACTIVATION_CHECK_TIMEOUT', 0)
    told: list[OffsetOutOfRange] = []
    never: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def first(stream: str) -> int:
        return await never

    async def report(gap: OffsetOutOfRange) -> None:
        told.append(gap)

    got = await activating(10).activate(
        'orders-1', 'group', Offset.FIRST, None, True, lambda: True,
        gaps=GapWatch('orders-1', first, report),
    )
    assert got == OffsetSpec.offset(11) and told == []

async def test_activated_unchecked() -> None:
    """The first offset not known: activated at the offset stored, unchecked."""
    told: list[OffsetOutOfRange] = []
    got = await activating(10).activate(
        'orders-1', 'group', Offset.FIRST, None, True, lambda: True,
        gaps=watch(StreamsError('timed out'), told),
    )
    assert got == OffsetSpec.offset(11) and told == []

async def test_activated_connection_lost() -> None:
    """A lost connection asking the first offset: the activation's (asked again)."""
    with pytest.raises(ConnectionLost):
        await activating(10).activate(
            'orders-1', 'group', Offset.FIRST, None, True, lambda: True,
            gaps=watch(ConnectionLost('lost'), []),
        )

async def test_activation_check_cancelled() -> None:
    """
    The activation cancelled while its check waits for the stream's
    first offset: cancelled (not taken for a timeout, nor swallowed).
    """
    never: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    asked = asyncio.Event()

    async def first(stream: str) -> int:
        asked.set()
        return await never

    async def report(gap: OffsetOutOfRange) -> None:
        raise AssertionError('nothing to report')

    task = asyncio.ensure_future(activating(10).activate(
        'orders-1', 'group', Offset.FIRST, None, True, lambda: True,
        gaps=GapWatch('orders-1', first, report),
    ))
    await asked.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert never.cancelled()

async def test_activated_again_check_timed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """
    A consumer active before, which read to offset 59, its check not
    answered in time: activated at the offset stored (11), unchecked, and
    the offsets it read are not counted lost by the gaps of the chunks
    read again.
    """
    monkeypatch.setattr(subscribing_module, 'ACTIVATION_CHECK_TIMEOUT', 0)
    never: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def first(stream: str) -> int:
        return await never

    async def report(gap: OffsetOutOfRange) -> None:
        raise AssertionError('nothing to report')

    gaps = GapWatch('orders-1', first, report)
    gaps.active_before = True
    gaps.gaps.expected = 60
    got = await activating(10).activate(
        'orders-1', 'group', Offset.FIRST, None, True, lambda: True, gaps=gaps,
    )
    assert got == OffsetSpec.offset(11)
    gaps.restart(11)  # (activated there)
    gaps.gaps.taken(30, 40)  # (a gap of chunks read already: 11 to 29)
    assert gaps.gaps.lost(gaps.gaps.take(), 100) == (0, 0, 0)

async def test_activated_function_closes_read() -> None:
    """
    An ``on_gap`` function called after an activation that ends the read
    (the watch closed from its own task) is not cancelled: it goes on.
    """
    told: list[OffsetOutOfRange] = []
    gaps = watch(100, [])

    async def on_gap(gap: OffsetOutOfRange) -> None:
        gaps.close()  # (the read ended by the function)
        await asyncio.sleep(0)
        told.append(gap)

    await activating(10).activate(
        'orders-1', 'group', Offset.FIRST, None, True, lambda: True, gaps=gaps,
        on_gap=on_gap,
    )
    await asyncio.gather(*gaps.reporting)
    assert len(told) == 1
