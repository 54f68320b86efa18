"""
A node's connection lost while the placer declares a subscription or a
publisher on it (:py:class:`~rbfly.streams.parts.placer.Placer`,
:py:class:`~rbfly.streams.parts.recovery.Recovery`): one of them, the
placer, decides what happens next.

The loss reached both: the connection's manager told the recovery, which
placed what the connection held anew, while the placer, whose declaration
failed with ``ConnectionLost``, tried the next member: the subscription
was declared twice (two subscriptions delivering the same messages). The
real placer, recovery, connections and connection managers run here; the
connections, the declarations and the offsets are fakes, and the loss
comes exactly while the declaration waits for its answer.
"""

from __future__ import annotations

import asyncio
import typing as tp

import pytest

from rbfly.streams.backoff import Backoff
from rbfly.streams.error import (
    AccessRefused,
    ConnectionLost,
    RequestTimeout,
    StreamDoesNotExist,
)
from rbfly.streams.metrics import Counters
from rbfly.streams.parts.connections import Connections
from rbfly.streams.parts.options import ClientOptions
from rbfly.streams.parts.placer import Placer
from rbfly.streams.parts.recovery import Recovery
from rbfly.streams.parts.tasks import Background
from rbfly.streams.protocol.commands import (
    Broker,
    Metadata,
    MetadataResponse,
    OffsetSpec,
    StreamMetadata,
)
from rbfly.streams.protocol.constants import OffsetSpecType, ResponseCode

STREAM = 'orders'
OWN = ('own', 5552)
REPLICA = ('replica', 5552)
LEADER = ('leader', 5552)
SPEC = OffsetSpec(OffsetSpecType.FIRST, 0)


class Protocol:
    """A connection to a node; the client's own answers Metadata."""

    codes: tp.ClassVar[list[int]] = []  # Metadata's codes for the stream, in turn (then OK)
    broker_version = (4, 3, 0)  # groups kept in step: no connection of its own for a consumer
    timeouts: tp.ClassVar[int] = 0  # Metadata requests left unanswered first

    def __init__(self, node: tuple[str, int]) -> None:
        self.node = node
        self.address = node
        self.is_open = True
        self.progressed = False  # no confirmation nor chunk yet (the manager paces by it)
        self.on_lost: tp.Callable[[Protocol, Exception], None] | None = None
        self.connection_properties = {
            'advertised_host': node[0], 'advertised_port': str(node[1]),
        }
        self.publishers: dict[int, object] = {}
        self.subscriptions: dict[int, object] = {}
        self.lost = asyncio.Event()

    async def request(self, command: object, *args: object) -> object:
        assert isinstance(command, Metadata), command
        if Protocol.timeouts:
            Protocol.timeouts -= 1
            raise RequestTimeout('no answer to Metadata within the request timeout')
        brokers = [Broker(0, *LEADER), Broker(1, *REPLICA)]
        code = self.codes.pop(0) if self.codes else ResponseCode.OK
        return MetadataResponse(1, brokers, [StreamMetadata(STREAM, code, 0, [1])])

    def lose(self) -> None:
        self.is_open = False
        self.lost.set()
        assert self.on_lost is not None
        self.on_lost(self, ConnectionLost('connection reset'))

    async def close(self) -> None:
        self.is_open = False


class Connector:
    def __init__(self) -> None:
        self.nodes: list[Protocol] = []

    async def connect(self, on_update: object) -> Protocol:
        return Protocol(OWN)

    async def connect_node(
            self, where: tuple[str, int], home: object, on_update: object,
    ) -> Protocol:
        protocol = Protocol(where)
        self.nodes.append(protocol)
        return protocol


class Lifecycle:
    def move(self, *args: object) -> None:
        pass


class Item:
    """A subscription or a publisher, as the placer and the recovery see it."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.stream = STREAM
        self.name = 'app'
        self.owner: object | None = None
        self.protocol: Protocol | None = None
        self.ident = 0
        self.activation: object | None = None  # not a single active consumer
        self.error: Exception | None = None
        self.lifecycle = Lifecycle()
        self.closed = False

    @property
    def ended(self) -> bool:
        return self.closed

    def attached(self) -> None:
        pass

    def on_connection_lost(self, error: Exception) -> None:
        self.protocol = None

    def fail(self, error: Exception) -> None:
        self.error = error
        self.closed = True

    def close(self) -> None:
        self.closed = True


class Declarer:
    """
    Records each declaration and where it was made; the first one waits
    until its connection is lost (and fails then, as the request does).
    """

    def __init__(self) -> None:
        self.declared: list[tuple[Item, tuple[str, int]]] = []
        self.waiting: asyncio.Future[Protocol] = asyncio.get_running_loop().create_future()

    async def _declare(self, protocol: Protocol, item: Item) -> None:
        if not self.waiting.done():
            self.waiting.set_result(protocol)
            await protocol.lost.wait()
            raise ConnectionLost('connection lost during the declaration')
        self.declared.append((item, protocol.node))
        item.protocol = protocol

    async def subscribe(self, protocol: Protocol, sub: Item, spec: OffsetSpec) -> None:
        await self._declare(protocol, sub)

    async def restore_publisher(self, protocol: Protocol, publisher: Item) -> None:
        await self._declare(protocol, publisher)

    async def add_publisher(self, protocol: Protocol, publisher: Item) -> None:
        await self._declare(protocol, publisher)


class Offsets:
    async def resume_spec(self, sub: Item) -> OffsetSpec:
        return SPEC


class Tasks(Background):
    """The client's background tasks, each kept to be awaited by the test."""

    def __init__(self) -> None:
        super().__init__()
        self.spawned: list[asyncio.Task[None]] = []

    def spawn(self, *args: tp.Any, **kw: tp.Any) -> asyncio.Task[None]:
        task = super().spawn(*args, **kw)
        self.spawned.append(task)
        return task


def parts(**options: tp.Any) -> tuple[Placer, Declarer, Tasks, Connections]:
    opts = ClientOptions(**options)
    tasks = Tasks()
    connector = Connector()
    connections = Connections(opts, tp.cast(tp.Any, connector), Counters(), tasks)
    declarer = Declarer()
    placer = Placer(opts, connections, tp.cast(tp.Any, declarer))
    recovery = Recovery(
        opts, connections, placer, tp.cast(tp.Any, declarer), tp.cast(tp.Any, Offsets()), tasks,
    )
    connections.bind(recovery)
    return placer, declarer, tasks, connections


async def lose_while_declared(declarer: Declarer, placing: asyncio.Task[None]) -> None:
    """Lose the connection of the first declaration while it waits for its answer."""
    (await declarer.waiting).lose()
    await placing
    for _ in range(20):  # what the loss started, if anything
        await asyncio.sleep(0)


async def test_subscription_node_lost_while_subscribing() -> None:
    """
    A subscription whose replica's connection is lost while it subscribes
    there is subscribed once, on the next member's node.
    """
    placer, declarer, tasks, connections = parts()
    own = await connections.get()
    sub = Item('subscriptions')
    placing = asyncio.ensure_future(placer.place_subscription(own, tp.cast(tp.Any, sub), SPEC))
    await lose_while_declared(declarer, placing)
    await tasks.cancel()
    await tasks.wait()

    assert declarer.declared == [(sub, LEADER)]
    assert sub.error is None
    assert sub.owner is not None and sub in tp.cast(tp.Any, sub.owner).subscriptions
    await connections.close_nodes()


async def test_publisher_node_lost_while_declared() -> None:
    """
    A publisher whose leader's connection is lost while it is declared
    there is declared once (on the client's connection, as the placer
    does when the leader's node cannot be reached).
    """
    placer, declarer, tasks, connections = parts()
    own = await connections.get()
    publisher = Item('publishers')
    placing = asyncio.ensure_future(
        placer.place_publisher(own, tp.cast(tp.Any, publisher), initial=False),
    )
    await lose_while_declared(declarer, placing)
    await tasks.cancel()
    await tasks.wait()

    assert declarer.declared == [(publisher, OWN)]
    assert publisher.error is None and publisher.owner is connections.own
    await connections.close_nodes()


@pytest.mark.parametrize(
    ('codes', 'error'),
    [([ResponseCode.ACCESS_REFUSED], AccessRefused),
     ([ResponseCode.STREAM_DOES_NOT_EXIST], StreamDoesNotExist),
     ([ResponseCode.INTERNAL_ERROR, ResponseCode.INTERNAL_ERROR], None)],
    ids=['access-refused', 'deleted', 'internal-error'],
)
async def test_relocation_refused(codes: list[int], error: type[Exception] | None) -> None:
    """
    A subscription placed anew whose stream's metadata the broker refuses
    ends with the broker's error (the error escaped the placing task, and
    the subscription stayed recovering for ever); an internal error is
    asked again.
    """
    _placer, declarer, tasks, connections = parts(reconnect=Backoff(initial=0.01, maximum=0.01))
    declarer.waiting.set_result(tp.cast(Protocol, None))  # each declaration answered
    await connections.get()
    Protocol.codes = list(codes)
    sub = Item('subscriptions')
    try:
        tp.cast(Recovery, connections.hooks).relocate_subscription(tp.cast(tp.Any, sub))
        (task,) = tasks.spawned
        await task  # ended, with no exception
    finally:
        Protocol.codes = []
    if error is None:
        assert sub.error is None
        assert declarer.declared == [(sub, REPLICA)]
    else:
        assert isinstance(sub.error, error)
        assert declarer.declared == []
    await connections.close_nodes()


@pytest.mark.parametrize('kind', ['subscriptions', 'publishers'])
async def test_node_given_up_while_declared(kind: str) -> None:
    """
    A node's connection lost while the placer declares on it, when its
    manager gives up on the node (connections lost before any progress,
    here the first: no stall allowed), leaves the declaration to the
    placer: it is placed once, on the next member's node (or the client's
    connection, for a publisher), and not ended.

    The give-up ended it with ``RecoveryStalled`` while the placer declared
    it on the next member: a subscription placed anew (whose iterator may
    have ended it meanwhile) was left on the broker, nobody to unsubscribe
    it.
    """
    _placer, declarer, tasks, connections = parts(
        reconnect=Backoff(initial=0.01, maximum=0.01, stalls=0, stall_time=0),
    )
    own = await connections.get()
    item = Item(kind)
    recovery = tp.cast(Recovery, connections.hooks)
    if kind == 'subscriptions':
        recovery.relocate_subscription(tp.cast(tp.Any, item))
        expected = LEADER
    else:
        recovery.relocate_publisher(tp.cast(tp.Any, item))
        expected = OWN
    (placing,) = tasks.spawned
    await lose_while_declared(declarer, placing)
    await tasks.cancel()
    await tasks.wait()

    assert item.error is None
    assert declarer.declared == [(item, expected)]
    assert item.owner is not None and item in getattr(item.owner, kind)
    await connections.close_nodes()
    assert own.is_open


@pytest.mark.parametrize('timeouts', [2, 10])
async def test_relocation_request_timeout(timeouts: int) -> None:
    """
    A subscription placed anew whose stream's metadata the broker does not
    answer in time is placed when it asks again (as restoring a changed
    stream asks again after a timeout), with the reconnection delays; when
    those are used up (3 attempts here) it ends with the timeout. A
    timeout ended it at once, for good.
    """
    _placer, declarer, tasks, connections = parts(
        reconnect=Backoff(initial=0.01, maximum=0.01, attempts=3),
    )
    declarer.waiting.set_result(tp.cast(Protocol, None))  # each declaration answered
    await connections.get()
    Protocol.timeouts = timeouts
    sub = Item('subscriptions')
    try:
        tp.cast(Recovery, connections.hooks).relocate_subscription(tp.cast(tp.Any, sub))
        (task,) = tasks.spawned
        await task  # ended, with no exception
    finally:
        left, Protocol.timeouts = Protocol.timeouts, 0
    if timeouts == 2:
        assert sub.error is None
        assert declarer.declared == [(sub, REPLICA)]
    else:
        assert isinstance(sub.error, RequestTimeout)
        assert declarer.declared == []
        assert left == timeouts - 3  # the 3 attempts, no more
    await connections.close_nodes()


@pytest.mark.parametrize('kind', ['subscriptions', 'publishers'])
async def test_ended_while_declared(kind: str) -> None:
    """
    A subscription (or publisher) placed anew that the application ends
    while it is declared on a node is declared nowhere else: its node's
    connection, holding nothing more, closes, and the declaration fails
    with ``ConnectionLost`` as for a lost one.

    The placer declared it on the next member's node then: a subscription
    left on the broker, on a connection kept open, nobody to unsubscribe
    it.
    """
    placer, declarer, tasks, connections = parts()
    await connections.get()
    item = Item(kind)
    recovery = tp.cast(Recovery, connections.hooks)
    if kind == 'subscriptions':
        recovery.relocate_subscription(tp.cast(tp.Any, item))
    else:
        recovery.relocate_publisher(tp.cast(tp.Any, item))
    (placing,) = tasks.spawned
    node = await declarer.waiting
    if kind == 'subscriptions':
        assert placer.release_subscription(tp.cast(tp.Any, item))  # its connection closes
    else:
        item.close()
        assert placer.release_publisher(tp.cast(tp.Any, item))
    await asyncio.sleep(0)  # the close runs: the declaration waiting fails
    assert not node.is_open
    node.lost.set()
    await placing
    await tasks.cancel()
    await tasks.wait()

    assert declarer.declared == []
    assert item.owner is None
    assert list(connections.nodes) == []
    await connections.close_nodes()
