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
import typing as tp
from collections.abc import Callable

import pytest

from rbfly.streams.error import ConnectionLost, RequestTimeout
from rbfly.streams.offset import Offset
from rbfly.streams.protocol.commands import OffsetSpec
from rbfly.streams.subscriptions.options import ReadOptions
from rbfly.streams.subscriptions.source import Subscriptions
from rbfly.streams.subscriptions.stalled import StallCheck, suspect
from rbfly.streams.subscriptions.subscription import Subscription

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

async def test_subscribed_again_when_first_offset_past_it() -> None:
    """The stream's first offset past the offset read next: subscribed again, with a reason."""
    sub, stats = stalled(first=3_000)
    again: list[tuple[Subscription, str]] = []
    check = StallCheck(stats, lambda s, reason: again.append((s, reason)))
    assert await check.check(sub)
    assert again == [(sub, "its broker reader stopped behind the stream's first offset")]

@pytest.mark.parametrize('first', [132, 50, None])
async def test_not_subscribed_again_when_offset_in_stream(first: int | None) -> None:
    """
    The offset read next still in the stream (the chunks skipped hold no
    messages, or a filter rules them out), or the stream empty: nothing
    is done.
    """
    sub, stats = stalled(first=first)
    again: list[Subscription] = []
    check = StallCheck(stats, lambda s, _: again.append(s))
    assert not await check.check(sub)
    assert not again

async def test_chunk_arrived_meanwhile() -> None:
    """A chunk arrived while the question was under way: the reader went on."""
    sub, stats = stalled()
    stats.hold = asyncio.get_running_loop().create_future()
    again: list[Subscription] = []
    check = StallCheck(stats, lambda s, _: again.append(s))
    task = asyncio.create_task(check.check(sub))
    await asyncio.sleep(0)
    sub.on_chunk(chunk(3_000, 1), 3_500)
    stats.hold.set_result(None)
    assert not await task
    assert not again

@pytest.mark.parametrize('error', [ConnectionLost('lost'), RequestTimeout('no answer')])
async def test_question_failed(error: Exception) -> None:
    """No answer: nothing done (asked again in the next quiet spell)."""
    sub, stats = stalled()
    stats.error = error
    again: list[Subscription] = []
    check = StallCheck(stats, lambda s, _: again.append(s))
    assert not await check.check(sub)
    assert not again

async def test_once_per_quiet_spell() -> None:
    """A suspect is asked about once while quiet; again after a chunk arrived, quiet again."""
    sub, stats = stalled(first=100)  # (in the stream: never subscribed again)
    clock = [sub.arrived + 10]
    check = StallCheck(stats, lambda s, _: None, after=5.0, clock=lambda: clock[0])
    for _ in range(3):
        check.poke([sub])
        await asyncio.sleep(0)
    assert stats.asked == 1
    sub.on_chunk(chunk(132, 1), 3_500)
    assert sub.poll() is not None
    clock[0] = sub.arrived + 10
    check.poke([sub])
    await asyncio.sleep(0)
    assert stats.asked == 2

async def test_closed_cancels_questions() -> None:
    """The read ended: a question under way is cancelled, nothing done after."""
    sub, stats = stalled()
    stats.hold = asyncio.get_running_loop().create_future()
    again: list[Subscription] = []
    check = StallCheck(stats, lambda s, _: again.append(s), clock=lambda: sub.arrived + 10)
    check.poke([sub])
    await asyncio.sleep(0)
    assert stats.asked == 1
    check.close()
    await asyncio.sleep(0)
    assert stats.hold.cancelled()  # (the question's wait ended with its task)
    assert not again

async def test_wait_looks_in_steps() -> None:
    """
    A read's wait looks for suspects every ``after`` seconds, and still
    raises TimeoutError at its own timeout; the read ended, the questions
    are cancelled.
    """
    sub = Subscription(
        's', OffsetSpec.first(), 0, {}, ReadOptions(amqp=False), resume_offset=Offset.FIRST,
    )
    poked: list[list[Subscription]] = []

    class Check(StallCheck):
        def poke(self, subs: tp.Iterable[Subscription]) -> None:
            poked.append(list(subs))

    async def make() -> list[Subscription]:
        return [sub]

    async def place(sub: Subscription) -> None:
        pass

    check = Check(Stats(0), lambda s, _: None, after=0.02)
    source = Subscriptions(make, place, lambda s: None, None, stalls=check)
    await source.open(None)
    with pytest.raises(TimeoutError):
        await source.wait(0.1)
    assert 1 <= len(poked) <= 5 and all(p == [sub] for p in poked)
    # a chunk ends the wait at once
    sub.on_chunk(chunk(0, 1), None)
    await source.wait(None)
    source.end()
