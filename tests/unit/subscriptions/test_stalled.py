"""
A broker reader stalled by retention
(:py:mod:`rbfly.streams.subscriptions.stalled`): which subscriptions are
suspects, the question asked once per quiet spell, and a subscription
subscribed again only when the stream's first offset is past the offset
it reads next and nothing arrived meanwhile; a read's wait looks for
suspects in steps and still ends at its timeout.

No sockets: chunks are handed to the subscriptions as the connection
would, the first offset is a fake's.
"""

from __future__ import annotations

import asyncio
import math
import types
import typing as tp
from collections.abc import Callable

import pytest

from rbfly.streams.error import ConnectionLost, RequestTimeout
from rbfly.streams.metrics import Counters
from rbfly.streams.offset import Offset
from rbfly.streams.parts.options import ClientOptions
from rbfly.streams.parts.subscribing import SubscribeOptions, Subscribing
from rbfly.streams.protocol.commands import OffsetSpec
from rbfly.streams.subscriptions.options import ReadOptions
from rbfly.streams.subscriptions.source import Subscriptions
from rbfly.streams.subscriptions.stalled import StallCheck, suspect
from rbfly.streams.subscriptions.subscription import Subscription
from rbfly.streams.types import MessageFilter

from ._chunks import chunk
from ._watch import Stats, watched

class Connection:
    """What a subscription uses of its connection (the credit it grants dropped)."""
    is_open = True

    def send(self, command: object) -> None:
        pass

def stalled(first: int | None = 3_000) -> tuple[Subscription, Stats]:
    """
    A subscription that took the chunk at 100 (offsets 100 to 131; the
    next at 132), told by the broker that chunks are committed up to
    3,500, with credit left and nothing buffered: a suspect, once quiet.
    """
    sub, _, stats, _, _ = watched(first, start=100)
    sub.protocol = tp.cast(tp.Any, Connection())
    sub.attached()  # (the Subscribe's credit)
    sub.on_chunk(chunk(100, 32), 3_500)
    assert sub.poll() is not None
    assert sub.inflight > 0
    return sub, stats

def unchanged(sub: Subscription) -> None:
    pass

def no_commit_known(sub: Subscription) -> None:
    sub.committed_chunk_id = None

def all_received(sub: Subscription) -> None:
    sub.committed_chunk_id = 100  # (the last chunk committed is the one received)

def buffered(sub: Subscription) -> None:
    sub.on_chunk(chunk(132, 1), 3_500)

def no_credit(sub: Subscription) -> None:
    sub._policy.inflight = 0

def paused(sub: Subscription) -> None:
    sub.paused = True

def closed(sub: Subscription) -> None:
    sub.close()

def finished(sub: Subscription) -> None:
    sub.finished = True

def seeking(sub: Subscription) -> None:
    sub.seeking = True

def disconnected(sub: Subscription) -> None:
    sub.protocol = None

def not_watched(sub: Subscription) -> None:
    sub.gaps = None  # (RabbitMQ 3.10: no first offset to ask)

def single_active(sub: Subscription) -> None:
    sub.activation = tp.cast(tp.Any, object())

@pytest.mark.parametrize('change, expected', [
    (unchanged, True), (no_commit_known, False), (all_received, False), (buffered, False),
    (no_credit, False), (paused, False), (closed, False), (finished, False), (seeking, False),
    (disconnected, False), (not_watched, False), (single_active, False),
])
def test_suspect(change: Callable[[Subscription], None], expected: bool) -> None:
    """
    A suspect: quiet for the time given, credit left, nothing buffered,
    a chunk past it committed.
    """
    sub, _ = stalled()
    change(sub)
    assert suspect(sub, sub.arrived + 5.0, after=5.0) is expected
    assert not suspect(sub, sub.arrived + 4.9, after=5.0)  # (not quiet long enough)

class Again:
    """The subscriptions subscribed again, and their reasons; ``refuse``: it cannot now."""
    def __init__(self, refuse: bool = False) -> None:
        self.subs: list[tuple[Subscription, str]] = []
        self.refuse = refuse

    def __call__(self, sub: Subscription, reason: str) -> bool:
        if self.refuse:
            return False
        self.subs.append((sub, reason))
        return True

async def test_subscribed_again_when_first_offset_past_it(
        caplog: pytest.LogCaptureFixture,
) -> None:
    """The stream's first offset past the offset read next: subscribed again, with a reason."""
    sub, stats = stalled(first=3_000)
    again = Again()
    assert await StallCheck(stats, again).check(sub)
    assert again.subs == [(sub, "its broker reader stopped behind the stream's first offset")]
    assert 'first offset 3000 is past the offset 132 read next' in caplog.text

async def test_refused() -> None:
    """The subscription being recovered: not subscribed again, nothing said."""
    sub, stats = stalled(first=3_000)
    assert not await StallCheck(stats, Again(refuse=True)).check(sub)

@pytest.mark.parametrize('first', [132, 50, None])
async def test_not_subscribed_again_when_offset_in_stream(first: int | None) -> None:
    """
    The offset read next still in the stream (the chunks skipped hold no
    messages), or the stream empty: nothing is done.
    """
    sub, stats = stalled(first=first)
    again = Again()
    assert not await StallCheck(stats, again).check(sub)
    assert not again.subs

def arrives(sub: Subscription) -> None:
    sub.on_chunk(chunk(132, 1), 3_500)  # (still behind the first offset)

def lost(sub: Subscription) -> None:
    sub.protocol = None

def moved(sub: Subscription) -> None:
    sub.protocol = tp.cast(tp.Any, Connection())  # (subscribed again elsewhere)

@pytest.mark.parametrize('change', [arrives, lost, moved, paused, closed, finished, seeking])
async def test_changed_meanwhile(change: Callable[[Subscription], None]) -> None:
    """
    The subscription changed while the question was under way (a chunk
    arrived, its connection was lost, it was subscribed again, paused,
    ended, moved by a seek): nothing is done.
    """
    sub, stats = stalled()
    stats.hold = asyncio.get_running_loop().create_future()
    again = Again()
    task = asyncio.create_task(StallCheck(stats, again).check(sub))
    await asyncio.sleep(0)
    change(sub)
    stats.hold.set_result(None)
    assert not await task
    assert not again.subs

class Clock:
    """
    A clock the test moves, from a subscription's last arrival on (whole
    seconds: the sums of the test's steps are exact).
    """
    def __init__(self, sub: Subscription, after: float) -> None:
        self.now = float(math.ceil(sub.arrived) + after)

    def __call__(self) -> float:
        return self.now

async def poke(check: StallCheck, sub: Subscription) -> None:
    """Poke, and let a question begun run to its end."""
    check.poke([sub])
    for _ in range(3):
        await asyncio.sleep(0)

async def quiet(check: StallCheck, sub: Subscription, clock: Clock) -> None:
    """Poke: the subscription is seen quiet; then once more, ``after`` seconds later."""
    await poke(check, sub)
    clock.now += check.after
    await poke(check, sub)

@pytest.mark.parametrize('error', [ConnectionLost('lost'), RequestTimeout('no answer')])
async def test_question_failed(error: Exception) -> None:
    """No answer: nothing done; asked again once ``after`` seconds passed."""
    sub, stats = stalled()
    stats.error = error
    clock = Clock(sub, 10)
    again = Again()
    check = StallCheck(stats, again, after=5.0, clock=clock)
    await quiet(check, sub, clock)
    assert stats.asked == 1 and not again.subs
    clock.now += 4.0
    await poke(check, sub)
    assert stats.asked == 1
    clock.now += 1.0
    stats.error = None
    await poke(check, sub)
    assert stats.asked == 2 and [s for s, _ in again.subs] == [sub]
    clock.now += 10.0  # (subscribed again: not asked again before its next chunk)
    await poke(check, sub)
    assert stats.asked == 2

async def test_once_per_quiet_spell() -> None:
    """
    A suspect found in the stream is asked about once while quiet; again
    after a chunk arrived, quiet again. Pokes closer than a second look at
    nothing.
    """
    sub, stats = stalled(first=100)  # (in the stream: never subscribed again)
    clock = Clock(sub, 10)
    check = StallCheck(stats, Again(), after=5.0, clock=clock)
    await poke(check, sub)
    for _ in range(3):
        clock.now += 10
        await poke(check, sub)
    assert stats.asked == 1
    sub.on_chunk(chunk(132, 1), 3_500)
    assert sub.poll() is not None
    clock.now += 0.5
    await poke(check, sub)  # (within the second)
    clock.now += 0.5
    await quiet(check, sub, clock)
    assert stats.asked == 2

def credit_granted(sub: Subscription) -> None:
    sub._policy.inflight = 1  # (a chunk taken: credit granted)

def declared_again(sub: Subscription) -> None:
    sub.ident += 1

@pytest.mark.parametrize('before, change', [
    (no_credit, credit_granted), (unchanged, declared_again),
])
async def test_quiet_restarts(
        before: Callable[[Subscription], None], change: Callable[[Subscription], None],
) -> None:
    """
    Quiet counts from the first poke that saw credit with the broker, as
    the subscription is, not from its last chunk: credit granted late, or
    a subscription declared again (another id), leaves the broker's
    reader ``after`` seconds to answer.
    """
    sub, stats = stalled(first=100)
    clock = Clock(sub, 60)  # (its last chunk a minute ago)
    check = StallCheck(stats, Again(), after=5.0, clock=clock)
    before(sub)
    await poke(check, sub)
    clock.now += 4
    change(sub)
    await poke(check, sub)
    clock.now += 4
    await poke(check, sub)
    assert stats.asked == 0
    clock.now += 1
    await poke(check, sub)
    assert stats.asked == 1

async def test_one_question_at_a_time() -> None:
    """
    A question under way: no second one; a seek replacing the
    subscription (``forget``) cancels it.
    """
    sub, stats = stalled()
    stats.hold = asyncio.get_running_loop().create_future()
    clock = Clock(sub, 10)
    again = Again()
    check = StallCheck(stats, again, after=5.0, clock=clock)
    await quiet(check, sub, clock)
    clock.now += 10
    await poke(check, sub)
    assert stats.asked == 1
    check.forget(sub)
    await asyncio.sleep(0)
    assert stats.hold.cancelled() and not again.subs

async def test_closed_cancels_questions() -> None:
    """The read ended: a question under way is cancelled, nothing done after."""
    sub, stats = stalled()
    stats.hold = asyncio.get_running_loop().create_future()
    again = Again()
    clock = Clock(sub, 10)
    check = StallCheck(stats, again, clock=clock)
    await quiet(check, sub, clock)
    assert stats.asked == 1
    check.close()
    await asyncio.sleep(0)
    assert stats.hold.cancelled()  # (the question's wait ended with its task)
    assert not again.subs

class Pokes(StallCheck):
    """The pokes of a read's wait, the subscriptions given."""
    def __init__(self, after: float) -> None:
        super().__init__(Stats(0), Again(), after=after)
        self.pokes: list[list[Subscription]] = []

    def poke(self, subs: tp.Iterable[Subscription]) -> None:
        self.pokes.append(list(subs))

async def waited(
        after: float, streams: tp.Sequence[str] = ('s',),
) -> tuple[Subscription, Subscriptions, Pokes]:
    """A read of a subscription of each stream, its pokes recorded; the first one."""
    subs = [
        Subscription(
            s, OffsetSpec.first(), 0, {}, ReadOptions(amqp=False), resume_offset=Offset.FIRST,
        )
        for s in streams
    ]
    sub = subs[0]

    async def make() -> list[Subscription]:
        return subs

    async def place(sub: Subscription) -> None:
        pass

    check = Pokes(after)
    source = Subscriptions(make, place, lambda s: None, None, stalls=check)
    await source.open(None)
    return sub, source, check

async def test_wait_looks_in_steps() -> None:
    """
    A read's wait looks for suspects as it begins and every ``after``
    seconds, and still raises TimeoutError at its own timeout.
    """
    sub, source, check = await waited(after=0.02)
    with pytest.raises(TimeoutError):
        await source.wait(0.1)
    assert 2 <= len(check.pokes) <= 6 and all(p == [sub] for p in check.pokes)
    source.end()

async def test_wait_ends_at_a_chunk() -> None:
    """A chunk arriving during a step ends the wait; a short wait looks as it begins."""
    sub, source, check = await waited(after=10.0)
    loop = asyncio.get_running_loop()
    loop.call_later(0.01, sub.on_chunk, chunk(0, 1), None)
    async with asyncio.timeout(5):
        await source.wait(None)
    assert check.pokes == [[sub]]
    assert sub.poll() is not None
    with pytest.raises(TimeoutError):
        await source.wait(0.01)  # (as a window's read waits: less than a step)
    assert len(check.pokes) == 2
    source.end()

async def test_busy_read_looks() -> None:
    """
    A read too busy to wait (a super stream partition always with a
    chunk) looks at all its subscriptions as it takes a chunk.
    """
    busy, source, check = await waited(after=5.0, streams=('p-0', 'p-1'))
    busy.on_chunk(chunk(0, 1), None)
    assert source.poll() is not None
    assert [[s.stream for s in p] for p in check.pokes] == [['p-0', 'p-1']]
    source.end()

@pytest.mark.parametrize('options, checked', [
    (SubscribeOptions(), True),
    (SubscribeOptions(stop_at_end=True), True),
    (SubscribeOptions(name='app', single_active=True), False),
    (SubscribeOptions(filter=MessageFilter(lambda m: 'eu', {'eu'})), False),
])
async def test_reads_checked(options: SubscribeOptions, checked: bool) -> None:
    """
    The reads whose subscriptions are checked: not those of a single active
    consumer (subscribing again leaves its group), nor those with a filter
    (the last chunk received may be far behind with nothing lost).
    """
    parts = types.SimpleNamespace(
        place_new=None, end_subscription=None, first=Stats(0),
    )
    subscribing = Subscribing(
        ClientOptions(), tp.cast(tp.Any, parts), tp.cast(tp.Any, parts), tp.cast(tp.Any, parts),
        tp.cast(tp.Any, parts), Counters(), Again(),
    )

    async def make(options: SubscribeOptions) -> list[Subscription]:
        return []

    progress = subscribing.progress(make, options, None)
    assert isinstance(progress._source, Subscriptions)
    assert (progress._source._stalls is not None) is checked
