"""
The connection manager's pace of reconnections, by progress
(:py:class:`~rbfly.streams.backoff.Pace`): a connection lost after a
confirmation or a chunk is reconnected to at once, whenever it was lost;
one lost before any progress (a broker that drops every connection after
its handshake, a chunk the client refuses, received as soon as the
subscription is restored) is a failed attempt: the next connection waits
the backoff's next delay, and after the backoff's stalls the manager gives
up with :py:class:`~rbfly.streams.error.RecoveryStalled`.

No sockets, no sleeping: a fake ``asyncio.sleep`` records the delays.
"""

from __future__ import annotations

import asyncio
import typing as tp

import pytest

from rbfly.streams.aio.manager import ConnectionManager
from rbfly.streams.backoff import Backoff, Pace
from rbfly.streams.error import ConnectionLost, RecoveryStalled
from rbfly.streams.events import ConnectionState

from .test_manager import Harness, settle, waiting_confirmation

Sleeps: tp.TypeAlias = list[float]

@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> Sleeps:
    """
    The delays slept: the pace's wait is the delay less the time since the
    loss (compare with :py:func:`nominal`).
    """
    delays: Sleeps = []
    real_sleep = asyncio.sleep

    async def sleep(delay: float, result: tp.Any = None) -> tp.Any:
        if delay > 0:
            delays.append(delay)
        return await real_sleep(0, result)

    monkeypatch.setattr(asyncio, 'sleep', sleep)
    return delays

def nominal(*delays: float) -> tp.Any:
    """The delays slept, the time spent since each loss aside (less than 0.25 s)."""
    return pytest.approx(list(delays), abs=0.25)

async def recover_after(h: Harness, progressed: bool, error: str = 'reset') -> None:
    """The current connection is lost (after progress, or before any); wait for its recovery."""
    current = h.current()
    assert current is not None
    current.progressed = progressed
    current.lose(ConnectionLost(error))
    await h.manager.wait_recovery()

BACKOFF = Backoff(initial=0.5, maximum=1.5, multiplier=2, jitter=0)

async def test_lost_before_progress_waits(sleeps: Sleeps) -> None:
    """
    A recovered connection lost before any progress (a chunk the client
    refuses, received as soon as the subscription is restored) is a failed
    attempt: each next recovery waits the next delay, not a tight loop.
    """
    h = Harness(BACKOFF)
    await h.get()
    h.subscription()
    await recover_after(h, progressed=True)
    for _ in range(3):
        await recover_after(h, progressed=False, error='refused chunk')

    assert sleeps == nominal(0.5, 1.0, 1.5)
    assert h.connects == 5
    assert h.states()[-1] == (ConnectionState.RECOVERED, h.connections[4])

async def test_progress_resets_the_pace(sleeps: Sleeps) -> None:
    """
    A connection that made progress (a confirmation, a chunk) resets the
    pace: lost soon after its recovery, it is reconnected to at once,
    and a loss before progress after it waits the first delay again (a
    link cut every second, with work done in between, is no stall).
    """
    h = Harness(BACKOFF)
    await h.get()
    h.publisher()
    await recover_after(h, progressed=False)
    await recover_after(h, progressed=False)
    assert sleeps == nominal(0.5, 1.0)
    for _ in range(5):
        await recover_after(h, progressed=True)
    assert sleeps == nominal(0.5, 1.0)  # at once, 5 times
    await recover_after(h, progressed=False)
    assert sleeps == nominal(0.5, 1.0, 0.5)
    assert h.connects == 9

async def test_lost_long_after_open_counts_as_progress(
        sleeps: Sleeps, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """
    A connection that lasted past ``STABLE`` without a confirmation or a
    chunk (an idle publisher cut by a load balancer's idle timeout) is
    reconnected to at once.
    """
    from rbfly.streams.aio import manager

    monkeypatch.setattr(manager, 'STABLE', 0.0)
    h = Harness(BACKOFF)
    await h.get()
    h.subscription()
    for _ in range(3):
        await recover_after(h, progressed=False)

    assert sleeps == []
    assert h.connects == 4

async def test_stalls_given_up(sleeps: Sleeps) -> None:
    """
    After the backoff's stalls (connections in a row lost before any
    progress), the manager gives up: what it holds ends with
    RecoveryStalled, naming the last loss, and the state is FAILED; an
    application that goes on gets a new connection at once.
    """
    h = Harness(Backoff(initial=0.5, maximum=1.5, multiplier=2, jitter=0, stalls=3, stall_time=0))
    m = h.manager
    await h.get()
    pub = h.publisher()
    sub = h.subscription()
    confirmation = waiting_confirmation(pub)
    await recover_after(h, progressed=True)
    for _ in range(3):
        await recover_after(h, progressed=False, error='dropped after handshake')
    last = h.current()
    assert last is not None
    last.lose(ConnectionLost('dropped after handshake'))
    await settle()

    assert sleeps == nominal(0.5, 1.0, 1.5)
    assert h.connects == 5
    state, protocol, error = h.events[-1]
    assert (state, protocol) == (ConnectionState.FAILED, None)
    assert isinstance(error, RecoveryStalled) and isinstance(error, ConnectionLost)
    assert '4 connections in a row lost before any progress' in str(error)
    assert 'dropped after handshake' in str(error)
    assert isinstance(error.__cause__, ConnectionLost)
    assert confirmation.exception() is error
    assert pub._error is error
    with pytest.raises(RecoveryStalled):
        sub.poll()
    assert m.publishers == set() and m.subscriptions == set()
    assert m._recovery is not None and m._recovery.done()

    await h.get()  # the application goes on: the pace starts afresh
    assert sleeps == nominal(0.5, 1.0, 1.5)
    assert h.connects == 6

async def test_attempts_used_up_by_stalls(sleeps: Sleeps) -> None:
    """The backoff's attempts run out first: RecoveryStalled too."""
    h = Harness(Backoff(initial=0, maximum=0, jitter=0, attempts=3, stalls=None))
    await h.get()
    sub = h.subscription()
    await recover_after(h, progressed=True)
    lost = 0
    while sub._error is None and (current := h.current()) is not None:
        current.lose(ConnectionLost('refused chunk'))
        await settle()
        lost += 1
        assert lost < 10, 'reconnecting in a loop'
    assert h.states()[-1][0] is ConnectionState.FAILED
    assert isinstance(sub._error, RecoveryStalled)
    assert '3 connections in a row' in str(sub._error)
    # the first connection, its recovery, 2 more (3 attempts in all)
    assert (h.connects, lost) == (4, 3)

async def test_lost_while_restoring_is_one_attempt(sleeps: Sleeps) -> None:
    """
    A connection lost before progress, then one lost while restoring: each
    a stall, each counted once (one delay each).
    """
    h = Harness(BACKOFF)
    await h.get()
    pub = h.publisher()
    await recover_after(h, progressed=True)
    h.restore_errors[pub] = [ConnectionLost('lost while restoring')]
    await recover_after(h, progressed=False)

    assert sleeps == nominal(0.5, 1.0)
    assert h.connects == 4
    assert h.states()[-1] == (ConnectionState.RECOVERED, h.connections[3])

class Nodes:
    """
    Managers of connections to one node, as the client's connections make
    them: not reopened when lost (the hook places what they held anew,
    here on a new manager), sharing one pace.
    """
    def __init__(self, backoff: Backoff) -> None:
        self.pace = Pace(backoff)
        self.harnesses: list[Harness] = []
        self.hooked: list[ConnectionManager[tp.Any, tp.Any]] = []

    def manager(self) -> Harness:
        h = Harness(lost_hook=True)
        h.manager = ConnectionManager(
            h.connect, self.pace.backoff, h.restore_publisher, h.restore_subscription,
            on_lost=self.hooked.append, notify=h.notify, pace=self.pace,
        )
        self.harnesses.append(h)
        return h

    async def place(self) -> tp.Any:
        """A subscription placed on a new manager's connection."""
        h = self.manager()
        await h.get()
        return h.subscription()

async def test_node_connections_paced(sleeps: Sleeps) -> None:
    """
    Connections to a node follow the same pace: one lost before progress
    makes the next connection to the node (by another manager) wait the
    next delay; one lost after progress does not; after the stalls, what
    the lost one held ends with RecoveryStalled (the hook gets nothing to
    place anew).
    """
    nodes = Nodes(Backoff(initial=0.5, maximum=1.5, multiplier=2, jitter=0, stalls=2, stall_time=0))
    await nodes.place()
    for progressed in (True, False, False, True, False, False):
        current = nodes.harnesses[-1].current()
        assert current is not None
        current.progressed = progressed
        current.lose(ConnectionLost('node connection cut'))
        assert nodes.hooked[-1] is nodes.harnesses[-1].manager
        await nodes.place()
    assert sleeps == nominal(0.5, 1.0, 0.5, 1.0)

    h = nodes.harnesses[-1]
    sub = next(iter(h.manager.subscriptions))
    current = h.current()
    assert current is not None
    current.lose(ConnectionLost('node connection cut'))
    assert isinstance(sub._error, RecoveryStalled)
    assert h.states()[-1][0] is ConnectionState.FAILED
    assert nodes.hooked[-1] is h.manager and not h.manager.subscriptions
