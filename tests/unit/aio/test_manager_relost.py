"""
The connection manager's reconnection delays when a recovered connection
is lost again soon (a chunk the client refuses, received as soon as the
subscription is restored): a failed attempt of the last recovery, not a
fresh start in a tight loop.
"""

from __future__ import annotations

import asyncio

import pytest

from rbfly.streams.backoff import Backoff
from rbfly.streams.error import ConnectionLost
from rbfly.streams.events import ConnectionState

from .test_manager import Harness

async def test_lost_soon_after_recovery_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """
    A connection lost again soon after its recovery (a chunk the client
    refuses, received as soon as the subscription is restored) is a failed
    attempt: the next recovery waits the next delay, not a tight loop.
    """
    delays: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay: float) -> None:
        delays.append(delay)
        await real_sleep(0)

    backoff = Backoff(initial=0.5, maximum=1.5, multiplier=2, jitter=0)
    h = Harness(backoff)
    m = h.manager
    first = await h.get()
    h.subscription()
    monkeypatch.setattr(asyncio, 'sleep', sleep)
    first.lose(ConnectionLost('reset'))
    await m.wait_recovery()
    for n in (1, 2, 3):
        h.connections[n].lose(ConnectionLost('refused chunk'))
        await m.wait_recovery()
    monkeypatch.undo()

    assert delays == [0.5, 1.0, 1.5]
    assert h.connects == 5
    assert h.states()[-1] == (ConnectionState.RECOVERED, h.connections[4])


async def test_lost_long_after_recovery_starts_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """A connection that lasted past ``STABLE`` recovers with fresh delays (at once)."""
    from rbfly.streams.aio import manager

    monkeypatch.setattr(manager, 'STABLE', 0.0)
    delays: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay: float) -> None:
        delays.append(delay)
        await real_sleep(0)

    h = Harness(Backoff(initial=0.5, maximum=1.5, multiplier=2, jitter=0))
    first = await h.get()
    h.subscription()
    monkeypatch.setattr(asyncio, 'sleep', sleep)
    first.lose(ConnectionLost('reset'))
    await h.manager.wait_recovery()
    h.connections[1].lose(ConnectionLost('reset'))
    await h.manager.wait_recovery()

    assert delays == []
    assert h.connects == 3


async def test_lost_soon_after_recovery_given_up() -> None:
    """Lost soon after every recovery, the backoff's attempts run out: FAILED."""
    h = Harness(Backoff(initial=0, maximum=0, jitter=0, attempts=2))
    m = h.manager
    first = await h.get()
    sub = h.subscription()
    first.lose(ConnectionLost('reset'))
    await m.wait_recovery()
    recovered = 0
    while (current := h.current()) is not None:
        current.lose(ConnectionLost('refused chunk'))
        await m.wait_recovery()
        recovered += 1
        assert recovered < 10, 'reconnecting in a loop'
    assert h.states()[-1][0] is ConnectionState.FAILED
    assert 'lost 0.0s after its recovery' in str(sub._error)
    # the first connection, its recovery, and one more attempt (2 in all)
    assert (h.connects, recovered) == (3, 2)
