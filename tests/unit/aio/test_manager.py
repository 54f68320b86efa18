"""
The connection manager (:py:class:`~rbfly.streams.aio.manager.ConnectionManager`)
with a fake ``connect``: its connection opened lazily, once; recovered after
a loss while it holds publishers or subscriptions; given up when the
backoff's attempts are used up; closed, letting go of what it held.

Connections are fake objects; a ``connect`` that must stay pending waits on
a future the test resolves. The backoff's delays are 0 (no real waiting);
the test of the delays themselves records them with a fake ``asyncio.sleep``.
"""

from __future__ import annotations

import asyncio
import typing as tp

import pytest

from rbfly.streams.aio.manager import ConnectionManager
from rbfly.streams.aio.records import hold
from rbfly.streams.backoff import Backoff
from rbfly.streams.error import ConnectionLost, RecoveryStalled, StreamDoesNotExist
from rbfly.streams.events import ConnectionState
from rbfly.streams.metrics import Counters
from rbfly.streams.offset import Offset
from rbfly.streams.protocol.base import OffsetSpec
from rbfly.streams.publishers._confirm import Confirmation
from rbfly.streams.publishers.awaited import Publisher
from rbfly.streams.subscriptions.options import ReadOptions
from rbfly.streams.subscriptions.subscription import Subscription

NO_WAIT = Backoff(initial=0, maximum=0, jitter=0)

async def settle() -> None:
    """Let ready tasks and callbacks run (loop iterations, no time)."""
    for _ in range(10):
        await asyncio.sleep(0)

class Connection:
    """A fake connection: what the manager uses of a ``StreamsProtocol``."""
    def __init__(self, n: int) -> None:
        self.n = n
        self.is_open = True
        self.on_lost: tp.Callable[[tp.Any, Exception], None] | None = None
        self.publishers: dict[int, object] = {}
        self.subscriptions: dict[int, object] = {}
        self.closed = False
        self.progressed = False  # a confirmation or a chunk came

    def lose(self, error: Exception) -> None:
        """The transport is gone: what ``StreamsProtocol.connection_lost`` does."""
        self.is_open = False
        if self.on_lost is not None:
            self.on_lost(self, error)

    async def close(self) -> None:
        self.closed = True
        self.lose(ConnectionLost('closed'))  # (as a real close ends)

    def __repr__(self) -> str:
        return 'Connection({})'.format(self.n)

class Host:
    """A publisher's host."""
    def __init__(self) -> None:
        self.counters = Counters()
        self.spin = 0.0

    def publisher_unknown(self, publisher: object) -> None:
        raise AssertionError('not expected')

    async def wait_recovery(self, publisher: object) -> None:
        raise AssertionError('not expected')

Event: tp.TypeAlias = tuple[ConnectionState, tp.Any, Exception | None]
Outcome: tp.TypeAlias = Exception | None

class Harness:
    """
    A manager and its fakes: ``outcomes`` says what each ``connect`` call
    does, in turn (``None``: a new connection; an exception: raised; a
    future: waited for first); past them, a new connection.
    """
    def __init__(
            self, backoff: Backoff = NO_WAIT,
            outcomes: tp.Sequence[Outcome | asyncio.Future[None]] = (),
            lost_hook: bool = False,
            claimed: tp.Callable[[tp.Any], bool] | None = None,
    ) -> None:
        self.outcomes = list(outcomes)
        self.connections: list[Connection] = []
        self.events: list[Event] = []
        self.restored: list[tuple[str, Connection, object]] = []
        self.hooked: list[ConnectionManager[tp.Any, tp.Any]] = []
        self.restore_errors: dict[object, list[Exception]] = {}
        self.connects = 0
        self.manager = ConnectionManager(
            self.connect, backoff, self.restore_publisher, self.restore_subscription,
            on_lost=self.hooked.append if lost_hook else None, notify=self.notify,
            claimed=claimed,
        )

    async def connect(self) -> tp.Any:
        self.connects += 1
        outcome = self.outcomes.pop(0) if self.outcomes else None
        if isinstance(outcome, asyncio.Future):
            await outcome
        elif isinstance(outcome, Exception):
            raise outcome
        connection = Connection(len(self.connections) + 1)
        self.connections.append(connection)
        return connection

    async def restore(self, kind: str, protocol: tp.Any, item: object) -> None:
        self.restored.append((kind, protocol, item))
        errors = self.restore_errors.get(item)
        if errors:
            error = errors.pop(0)
            if isinstance(error, ConnectionLost):
                protocol.lose(error)  # (a restore fails so when its connection is lost)
            raise error

    async def restore_publisher(self, protocol: tp.Any, publisher: object) -> None:
        await self.restore('publisher', protocol, publisher)

    async def restore_subscription(self, protocol: tp.Any, sub: object) -> None:
        await self.restore('subscription', protocol, sub)

    def notify(
            self, manager: ConnectionManager[tp.Any, tp.Any], state: ConnectionState,
            protocol: tp.Any, error: Exception | None,
    ) -> None:
        assert manager is self.manager
        self.events.append((state, protocol, error))

    async def get(self) -> Connection:
        return tp.cast(Connection, await self.manager.get())

    def current(self) -> Connection | None:
        return tp.cast(Connection | None, self.manager.protocol)

    def states(self) -> list[tuple[ConnectionState, tp.Any]]:
        return [(state, protocol) for state, protocol, _ in self.events]

    def publisher(self) -> Publisher:
        publisher = Publisher(tp.cast(tp.Any, Host()), 'orders', 0, 'name', 0)
        hold(self.manager, publisher)
        return publisher

    def subscription(self) -> Subscription:
        sub = Subscription(
            'orders', OffsetSpec.next(), 0, {}, ReadOptions(credit=4),
            resume_offset=Offset.NEXT,
        )
        hold(self.manager, sub)
        return sub

def waiting_confirmation(publisher: Publisher) -> asyncio.Future[None]:
    """A message of a publisher waiting for its confirmation."""
    fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    publisher._unconfirmed[1] = 'm1'
    publisher._waiting[1] = Confirmation(fut, 1)
    return fut

#
# opening
#

async def test_lazy_open_once() -> None:
    """Nothing is opened before ``get``; concurrent callers share one connection."""
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    h = Harness(outcomes=[gate])
    m = h.manager
    assert h.current() is None and h.connects == 0

    callers = [asyncio.ensure_future(h.get()) for _ in range(3)]
    await settle()
    assert h.connects == 1
    assert not any(c.done() for c in callers)
    gate.set_result(None)
    results = [await c for c in callers]

    conn = h.connections[0]
    assert results == [conn, conn, conn]
    assert h.current() is conn
    assert conn.on_lost == m._on_lost
    assert h.states() == [(ConnectionState.OPEN, conn)]
    assert await h.get() is conn
    assert h.connects == 1

async def test_first_connection_error_goes_to_caller() -> None:
    """A first connection is tried once; its error is the caller's; the next call tries again."""
    h = Harness(outcomes=[ConnectionLost('refused')])
    with pytest.raises(ConnectionLost, match='refused'):
        await h.get()
    assert h.current() is None
    assert h.events == []
    conn = await h.get()
    assert conn is h.connections[0]
    assert h.connects == 2
    assert h.states() == [(ConnectionState.OPEN, conn)]

async def test_lost_while_holding_nothing() -> None:
    """A connection lost while it holds nothing is not reopened until asked for."""
    h = Harness()
    m = h.manager
    first = await h.get()
    error = ConnectionLost('reset')
    first.lose(error)
    await settle()
    assert h.current() is None
    assert m._recovery is None
    assert h.connects == 1
    assert h.events[-1] == (ConnectionState.LOST, first, error)

    second = await h.get()
    assert second is h.connections[1]
    assert h.states() == [
        (ConnectionState.OPEN, first), (ConnectionState.LOST, first),
        (ConnectionState.OPEN, second),
    ]

async def test_stale_connection_lost_ignored() -> None:
    """The loss of a connection the manager no longer uses changes nothing."""
    h = Harness()
    m = h.manager
    first = await h.get()
    first.lose(ConnectionLost('reset'))
    second = await h.get()
    h.publisher()
    count = len(h.events)
    first.lose(ConnectionLost('late'))
    await settle()
    assert h.current() is second
    assert len(h.events) == count
    assert m._recovery is None

#
# recovery
#

async def test_recovery_restores_everything() -> None:
    """
    A connection lost while holding publishers and subscriptions: one
    recovery reconnects and restores each on the new connection; LOST,
    then RECOVERED.
    """
    h = Harness()
    m = h.manager
    first = await h.get()
    pubs = [h.publisher(), h.publisher()]
    subs = [h.subscription()]
    error = ConnectionLost('reset')
    first.lose(error)
    assert h.current() is None

    waiters = [asyncio.ensure_future(h.get()), asyncio.ensure_future(m.wait_recovery())]
    await m.wait_recovery()
    second = h.connections[1]
    assert h.connects == 2
    assert h.current() is second
    assert [await w for w in waiters] == [second, None]
    assert len(h.restored) == 3
    assert set(h.restored) == {
        *(('publisher', second, p) for p in pubs), *(('subscription', second, s) for s in subs),
    }
    # (publishers first; in no particular order among them)
    assert [r[0] for r in h.restored] == ['publisher', 'publisher', 'subscription']
    assert h.events == [
        (ConnectionState.OPEN, first, None),
        (ConnectionState.LOST, first, error),
        (ConnectionState.RECOVERED, second, None),
    ]
    assert m.publishers == set(pubs) and m.subscriptions == set(subs)
    assert all(p.owner is m for p in pubs) and all(s.owner is m for s in subs)

async def test_wait_recovery_starts_one() -> None:
    """``wait_recovery`` without a connection starts the recovery, once for all callers."""
    h = Harness()
    m = h.manager
    first = await h.get()
    first.is_open = False  # (lost, not reported yet)
    sub = h.subscription()
    await asyncio.gather(m.wait_recovery(), m.wait_recovery())
    assert h.connects == 2
    assert h.restored == [('subscription', h.connections[1], sub)]
    await m.wait_recovery()  # open: nothing to do
    assert h.connects == 2

async def test_recovery_waits_as_backoff_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed reconnections are tried again after the backoff's delays."""
    delays: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay: float) -> None:
        delays.append(delay)
        await real_sleep(0)

    backoff = Backoff(initial=0.5, maximum=1.5, multiplier=2, jitter=0, attempts=5)
    h = Harness(backoff, [None, ConnectionLost('down'), OSError('refused'), ConnectionLost('x')])
    m = h.manager
    first = await h.get()
    pub = h.publisher()
    first.progressed = True  # (else its loss is a failed attempt too)
    monkeypatch.setattr(asyncio, 'sleep', sleep)
    first.lose(ConnectionLost('reset'))
    await m.wait_recovery()
    monkeypatch.undo()

    assert delays == [0.5, 1.0, 1.5]
    assert h.connects == 5
    assert h.restored == [('publisher', h.connections[1], pub)]
    assert h.states()[-1] == (ConnectionState.RECOVERED, h.connections[1])

async def test_restore_error_ends_item() -> None:
    """
    A publisher or subscription that cannot be restored (its stream is
    gone) ends with the error and is let go; the others are restored.
    """
    h = Harness()
    m = h.manager
    first = await h.get()
    gone, kept = h.publisher(), h.publisher()
    sub = h.subscription()
    confirmation = waiting_confirmation(gone)
    h.restore_errors[gone] = [StreamDoesNotExist('orders')]
    h.restore_errors[sub] = [StreamDoesNotExist('orders')]
    first.lose(ConnectionLost('reset'))
    await m.wait_recovery()

    second = h.connections[1]
    assert {(k, x) for k, _, x in h.restored} \
        == {('publisher', gone), ('publisher', kept), ('subscription', sub)}
    assert m.publishers == {kept}
    assert m.subscriptions == set()
    assert gone.owner is None and sub.owner is None and kept.owner is m
    assert isinstance(confirmation.exception(), StreamDoesNotExist)
    assert isinstance(gone._error, StreamDoesNotExist)
    with pytest.raises(StreamDoesNotExist):
        sub.poll()
    assert h.states()[-1] == (ConnectionState.RECOVERED, second)

async def test_lost_again_during_restore() -> None:
    """A connection lost while restoring is opened again, and everything restored there."""
    h = Harness()
    m = h.manager
    first = await h.get()
    pub = h.publisher()
    h.restore_errors[pub] = [ConnectionLost('lost again')]
    first.lose(ConnectionLost('reset'))
    await m.wait_recovery()

    second, third = h.connections[1:]
    assert h.restored == [('publisher', second, pub), ('publisher', third, pub)]
    assert h.current() is third
    assert h.states() == [
        (ConnectionState.OPEN, first), (ConnectionState.LOST, first),
        (ConnectionState.LOST, second), (ConnectionState.RECOVERED, third),
    ]

async def test_lost_during_every_restore_is_given_up() -> None:
    """
    A connection lost during every restore uses up the backoff's attempts
    like a failed connection, and ends with FAILED: RecoveryStalled, as
    the broker accepted each connection and dropped it before progress.
    """
    h = Harness(Backoff(initial=0, maximum=0, jitter=0, attempts=2))
    m = h.manager
    first = await h.get()
    pub = h.publisher()
    h.restore_errors[pub] = [ConnectionLost('lost again {}'.format(i)) for i in range(3)]
    # a fourth restore (or more) would loop: make its connect stop the loop
    h.outcomes = [None, None, None, RuntimeError('reconnecting in a loop')]
    first.progressed = True
    first.lose(ConnectionLost('reset'))
    await m.wait_recovery()
    assert h.connects == 3  # the first connection and 2 attempts
    assert h.states()[-1][0] is ConnectionState.FAILED
    assert isinstance(pub._error, RecoveryStalled)
    assert 'lost again 1' in str(pub._error)

async def test_lost_hook_instead_of_recovery() -> None:
    """With an ``on_lost`` hook, a lost connection is handed over, not reopened."""
    h = Harness(lost_hook=True)
    m = h.manager
    first = await h.get()
    pub = h.publisher()
    error = ConnectionLost('node down')
    first.lose(error)
    await settle()
    assert h.hooked == [m]
    assert m._recovery is None
    assert h.connects == 1
    assert h.restored == []
    assert h.current() is None
    assert h.events[-1] == (ConnectionState.LOST, first, error)
    assert pub.owner is m and pub._error is None  # the hook decides what becomes of it
    with pytest.raises(ConnectionLost):
        await m.wait_recovery()

async def test_given_up_spares_claimed() -> None:
    """
    Giving up (a connection lost before any progress, no stall allowed)
    ends what the manager holds with RecoveryStalled, but for what another
    part claims (the placer declaring it there): that part alone decides
    what becomes of it, and the lost hook is still called.
    """
    claimed: set[object] = set()
    h = Harness(Backoff(initial=0, maximum=0, jitter=0, stalls=0, stall_time=0), lost_hook=True,
                claimed=claimed.__contains__)
    m = h.manager
    first = await h.get()
    pub, declared = h.publisher(), h.publisher()
    sub, subscribing = h.subscription(), h.subscription()
    claimed.update((declared, subscribing))
    first.lose(ConnectionLost('reset'))
    await settle()
    assert h.states()[-1][0] is ConnectionState.FAILED
    assert h.hooked == [m]
    assert isinstance(pub._error, RecoveryStalled) and pub.owner is None
    assert isinstance(sub._error, RecoveryStalled) and sub.owner is None
    assert declared._error is None and declared.owner is m
    assert subscribing._error is None and subscribing.owner is m

async def test_attempts_exhausted() -> None:
    """
    Reconnection given up after the backoff's attempts: FAILED, and what
    the manager holds fails with ConnectionLost.
    """
    h = Harness(
        Backoff(initial=0, maximum=0, jitter=0, attempts=3),
        [None, ConnectionLost('refused 1'), OSError('refused 2'), ConnectionLost('refused 3')],
    )
    m = h.manager
    first = await h.get()
    pub = h.publisher()
    sub = h.subscription()
    confirmation = waiting_confirmation(pub)
    first.progressed = True
    first.lose(ConnectionLost('reset'))
    await m.wait_recovery()

    assert h.connects == 4  # the first connection, then 3 attempts
    assert h.restored == []
    assert h.current() is None
    state, protocol, error = h.events[-1]
    assert (state, protocol) == (ConnectionState.FAILED, None)
    assert isinstance(error, ConnectionLost)
    assert 'cannot reconnect' in str(error) and 'refused 3' in str(error)
    assert confirmation.exception() is error
    assert pub._error is error
    with pytest.raises(ConnectionLost, match='cannot reconnect'):
        sub.poll()
    assert h.states() == [
        (ConnectionState.OPEN, first), (ConnectionState.LOST, first),
        (ConnectionState.FAILED, None),
    ]

async def test_failed_items_not_restored_later() -> None:
    """What a given-up recovery failed is not declared again by a later recovery."""
    h = Harness(
        Backoff(initial=0, maximum=0, jitter=0, attempts=1), [None, ConnectionLost('refused')],
    )
    m = h.manager
    first = await h.get()
    pub = h.publisher()
    first.lose(ConnectionLost('reset'))
    await m.wait_recovery()
    assert h.states()[-1] == (ConnectionState.FAILED, None)
    assert isinstance(pub._error, ConnectionLost)

    second = await h.get()  # the application goes on: a new connection
    second.lose(ConnectionLost('reset again'))
    await settle()
    if m._recovery is not None:
        await asyncio.wait([m._recovery])
    assert h.restored == []
    assert pub.owner is None and m.publishers == set()

#
# closing
#

async def test_close() -> None:
    """
    ``close`` closes the connection, reports CLOSED, fails what the manager
    held with ConnectionLost and lets go of it; its loss starts no recovery.
    """
    h = Harness()
    m = h.manager
    conn = await h.get()
    pub, sub = h.publisher(), h.subscription()
    confirmation = waiting_confirmation(pub)
    await m.close()
    await settle()

    assert conn.closed
    assert h.current() is None
    assert m._recovery is None
    assert h.connects == 1
    assert h.states() == [(ConnectionState.OPEN, conn), (ConnectionState.CLOSED, conn)]
    assert m.publishers == set() and m.subscriptions == set()
    assert pub.owner is None and sub.owner is None
    assert isinstance(confirmation.exception(), ConnectionLost)
    with pytest.raises(ConnectionLost, match='client disconnected'):
        sub.poll()
    with pytest.raises(ConnectionLost, match='disconnected'):
        await m.wait_recovery()

    again = await h.get()  # a new connection after close
    assert again is h.connections[1]
    assert h.states()[-1] == (ConnectionState.OPEN, again)

async def test_close_never_opened() -> None:
    h = Harness()
    await h.manager.close()
    assert h.events == [] and h.connects == 0

async def test_close_ends_recovery() -> None:
    """``close`` during a recovery stops it: no more attempts, nothing restored or held."""
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    h = Harness(outcomes=[None, gate])
    m = h.manager
    first = await h.get()
    pub, sub = h.publisher(), h.subscription()
    first.lose(ConnectionLost('reset'))
    await settle()
    recovery = m._recovery
    assert recovery is not None and not recovery.done()
    assert h.connects == 2  # the reconnection waits

    await m.close()
    assert recovery.done()
    assert gate.cancelled()  # the reconnection under way was stopped
    await settle()
    assert h.connects == 2
    assert h.connections == [first]
    assert h.restored == []
    assert h.current() is None
    assert ConnectionState.RECOVERED not in [s for s, _ in h.states()]
    assert pub.owner is None and sub.owner is None
    assert m.publishers == set() and m.subscriptions == set()
    assert isinstance(pub._error, ConnectionLost)

@pytest.mark.parametrize('call', ['get', 'wait_recovery'])
async def test_close_fails_waiters(call: str) -> None:
    """A caller waiting for the recovery when the manager closes gets ConnectionLost."""
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    h = Harness(outcomes=[None, gate])
    m = h.manager
    first = await h.get()
    h.publisher()
    first.lose(ConnectionLost('reset'))
    waiter = asyncio.ensure_future(getattr(m, call)())
    await settle()
    assert not waiter.done()

    await m.close()
    await asyncio.wait([waiter])
    assert not waiter.cancelled()
    assert isinstance(waiter.exception(), ConnectionLost)

async def test_get_from_the_recovery_itself() -> None:
    """
    A restore that asks the manager for its connection (a resume
    callback's stored offset) after that connection was lost gets
    ConnectionLost, and the recovery tries again: it never waits for
    itself.
    """
    h = Harness()
    m = h.manager
    first = await h.get()
    pub = h.publisher()
    asked: list[BaseException] = []

    async def restore(protocol: tp.Any, publisher: object) -> None:
        h.restored.append(('publisher', protocol, publisher))
        if len(h.restored) == 1:
            protocol.lose(ConnectionLost('lost while restoring'))
            try:
                await m.get()
            except ConnectionLost as ex:
                asked.append(ex)
                raise

    m._restore_publisher = restore
    first.lose(ConnectionLost('reset'))
    async with asyncio.timeout(5):
        await m.wait_recovery()
    assert len(asked) == 1
    assert [p for _, p, _ in h.restored] == h.connections[1:]
    assert h.states()[-1] == (ConnectionState.RECOVERED, h.connections[2])
    assert pub.owner is m
