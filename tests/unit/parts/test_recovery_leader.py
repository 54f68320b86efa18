"""
A publisher or subscription is declared again only once the broker's
Metadata names its stream's leader
(:py:class:`~rbfly.streams.parts.recovery.Recovery`,
:py:class:`~rbfly.streams.parts.placer.Placer`).

While a RabbitMQ 4.0.5 cluster elected a new leader, a publisher's
sequence query (and a subscription) crashed the node's connection reader:
the connection was lost, and the client's recovery reconnected and
declared again, a connection lost every 0.3-0.5 s while the election
lasted (14 in 5 s, ``tests/cluster/test_failover.py``). Metadata is
answered meanwhile.

The real recovery, placer, connections and connection managers run here
against a fake broker whose stream has no leader for its next few
answers, and which, like RabbitMQ, drops the connection of a declaration
made then. No sockets.
"""

from __future__ import annotations

import asyncio
import typing as tp

import pytest

from rbfly.streams.aio.records import attach, free_id, hold
from rbfly.streams.backoff import Backoff
from rbfly.streams.error import ConnectionLost, StreamDoesNotExist
from rbfly.streams.events import ConnectionEvent, ConnectionState
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
OTHER = ('other', 5552)
NO_LEADER = 0xffff  # the reference RabbitMQ names while it elects a leader
FAST = Backoff(initial=0.001, maximum=0.001, stalls=None)

class Election:
    """
    The broker's stream: it has no leader for the next ``left`` requests
    about it (Metadata and declarations alike), or it was deleted.
    """

    def __init__(self, left: int, deleted: bool = False) -> None:
        self.left = left
        self.deleted = deleted
        self.crashed = 0
        """Declarations made while the stream had no leader (each lost its connection)."""

    def leader(self) -> bool:
        if self.left:
            self.left -= 1
            return False
        return True

class Protocol:
    """A connection to the node ``OWN``, a member of the stream (its leader once elected)."""

    broker_version = (4, 0, 5)

    def __init__(self, election: Election, number: int) -> None:
        self.election = election
        self.number = number
        self.address = OWN
        self.is_open = True
        self.progressed = False
        self.on_lost: tp.Callable[[Protocol, Exception], None] | None = None
        self.connection_properties = {
            'advertised_host': OWN[0], 'advertised_port': str(OWN[1]),
        }
        self.publishers: dict[int, Item] = {}
        self.subscriptions: dict[int, Item] = {}

    async def request(self, command: object, *args: object) -> object:
        assert isinstance(command, Metadata), command
        await asyncio.sleep(0)
        if self.election.deleted:
            code, leader = ResponseCode.STREAM_DOES_NOT_EXIST, NO_LEADER
        else:
            code, leader = ResponseCode.OK, 0 if self.election.leader() else NO_LEADER
        return MetadataResponse(
            1, [Broker(0, *OWN), Broker(1, *OTHER)], [StreamMetadata(STREAM, code, leader, [1])],
        )

    def lose(self) -> None:
        """The broker drops the connection (its reader crashed, or its node died)."""
        self.is_open = False
        error = ConnectionLost('connection to broker lost')
        for item in [*self.publishers.values(), *self.subscriptions.values()]:
            item.on_connection_lost(error)
        self.publishers.clear()
        self.subscriptions.clear()
        assert self.on_lost is not None
        self.on_lost(self, error)

    async def close(self) -> None:
        self.is_open = False

class Connector:
    def __init__(self, election: Election) -> None:
        self.election = election
        self.opened = 0

    async def connect(self, on_update: object) -> Protocol:
        self.opened += 1
        return Protocol(self.election, self.opened)

class Lifecycle:
    def move(self, *args: object) -> None:
        pass

class Item:
    """A publisher or a subscription, as the placer and the recovery see it."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.stream = STREAM
        self.name = 'app'
        self.owner: object | None = None
        self.protocol: Protocol | None = None
        self.ident = 0
        self.activation: object | None = None
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

    def moved(self, error: Exception) -> None:
        pass

    def fail(self, error: Exception) -> None:
        self.error = error
        self.closed = True

class Declarer:
    """
    Declares as the broker answers: a declaration while the stream has
    no leader loses its connection; one of a deleted stream is refused.
    """

    def __init__(self, election: Election) -> None:
        self.election = election
        self.declared: list[tuple[Item, int]] = []

    async def _declare(self, protocol: Protocol, item: Item) -> None:
        await asyncio.sleep(0)
        if self.election.deleted:
            raise StreamDoesNotExist('stream {!r} does not exist'.format(STREAM))
        if not self.election.leader():
            self.election.crashed += 1
            protocol.lose()
            raise ConnectionLost('connection to broker lost')
        attach(tp.cast(tp.Any, protocol), tp.cast(tp.Any, item),
               free_id(tp.cast(tp.Any, protocol), tp.cast(tp.Any, item.kind)))
        self.declared.append((item, protocol.number))

    async def restore_publisher(self, protocol: Protocol, publisher: Item) -> None:
        await self._declare(protocol, publisher)

    async def add_publisher(self, protocol: Protocol, publisher: Item) -> None:
        await self._declare(protocol, publisher)

    async def subscribe(self, protocol: Protocol, sub: Item, spec: OffsetSpec) -> None:
        await self._declare(protocol, sub)

    async def declare_again(
            self, protocol: Protocol, stream: str,
            declare: tp.Callable[[], tp.Awaitable[None]],
    ) -> None:
        await declare()

class Offsets:
    async def resume_spec(self, sub: Item) -> OffsetSpec:
        return OffsetSpec(OffsetSpecType.FIRST, 0)

class Tasks(Background):
    """The client's background tasks, each kept to be awaited by the test."""

    def __init__(self) -> None:
        super().__init__()
        self.spawned: list[asyncio.Task[None]] = []

    def spawn(self, *args: tp.Any, **kw: tp.Any) -> asyncio.Task[None]:
        task = super().spawn(*args, **kw)
        self.spawned.append(task)
        return task

class Client:
    """The client's parts, on the fake broker; its connection declared on, with an item."""

    def __init__(self, election: Election) -> None:
        self.events: list[ConnectionEvent] = []
        options = ClientOptions(reconnect=FAST, on_connection=self.events.append)
        self.tasks = Tasks()
        self.election = election
        self.connector = Connector(election)
        self.connections = Connections(
            options, tp.cast(tp.Any, self.connector), Counters(), self.tasks,
        )
        self.declarer = Declarer(election)
        placer = Placer(options, self.connections, tp.cast(tp.Any, self.declarer))
        self.recovery = Recovery(
            options, self.connections, placer, tp.cast(tp.Any, self.declarer),
            tp.cast(tp.Any, Offsets()), self.tasks,
        )
        self.connections.bind(self.recovery)

    async def declared(self, kind: str) -> tuple[Item, Protocol]:
        """An item declared on the client's connection (the stream has a leader)."""
        protocol = tp.cast(Protocol, await self.connections.get())
        item = Item(kind)
        hold(self.connections.own, tp.cast(tp.Any, item))
        await self.declarer._declare(protocol, item)
        self.declarer.declared.clear()
        return item, protocol

    async def settle(self) -> None:
        """Wait until the connection's recovery and what it left to the background ended."""
        await self.connections.own.wait_recovery()
        await self.tasks.wait()

    def lost(self) -> int:
        return sum(e.state is ConnectionState.LOST for e in self.events)

@pytest.mark.parametrize('kind', ['publishers', 'subscriptions'])
async def test_recovery_waits_for_leader(kind: str) -> None:
    """
    The client's connection lost with the stream's leader: its recovery
    reconnects, asks Metadata, and declares again once it names a leader.
    Nothing is declared while there is none, and the connection is lost
    once (before: declared at once on each new connection, it was lost
    at each declaration while the election lasted).
    """
    election = Election(0)
    client = Client(election)
    item, first = await client.declared(kind)
    election.left = 2  # the leader's node died
    first.lose()
    await client.settle()

    assert election.crashed == 0
    assert client.lost() == 1
    assert client.connector.opened == 2
    assert client.declarer.declared == [(item, 2)]
    assert item.error is None and item.protocol is not None and item.protocol.is_open
    assert item.owner is client.connections.own

async def test_recovery_goes_on_with_other_streams() -> None:
    """
    A publisher waiting for its stream's leader does not hold up the
    connection's recovery: it is RECOVERED before the publisher is
    declared again.
    """
    election = Election(0)
    client = Client(election)
    publisher, first = await client.declared('publishers')
    election.left = 2
    first.lose()
    await client.connections.own.wait_recovery()

    assert [e.state for e in client.events][-1] is ConnectionState.RECOVERED
    assert client.declarer.declared == []  # its stream has no leader yet
    await client.tasks.wait()
    assert client.declarer.declared == [(publisher, 2)]
    assert election.crashed == 0

@pytest.mark.parametrize('kind', ['publishers', 'subscriptions'])
async def test_deleted_stream(kind: str) -> None:
    """
    A stream deleted while the connection was lost ends its publisher or
    subscription as before: with the broker's refusal of the declaration.
    """
    election = Election(0)
    client = Client(election)
    item, first = await client.declared(kind)
    election.deleted = True
    first.lose()
    await client.settle()

    assert isinstance(item.error, StreamDoesNotExist)
    assert item.owner is None
    assert client.lost() == 1

@pytest.mark.parametrize('kind', ['publishers', 'subscriptions'])
async def test_placed_anew_waits_for_leader(kind: str) -> None:
    """
    A publisher or subscription placed anew (its node's connection lost,
    or its stream moved off it) waits for the stream's leader, asking
    again with the reconnection delays, instead of being declared on the
    client's connection during the election (which lost it, with all it
    held).
    """
    election = Election(0)
    client = Client(election)
    await client.connections.get()
    item = Item(kind)
    election.left = 3
    if kind == 'publishers':
        client.recovery.relocate_publisher(tp.cast(tp.Any, item))
    else:
        client.recovery.relocate_subscription(tp.cast(tp.Any, item))
    (placing,) = client.tasks.spawned
    await placing

    assert election.crashed == 0
    assert client.lost() == 0
    assert client.declarer.declared == [(item, 1)]
