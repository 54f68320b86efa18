"""
A single active consumer's subscription stays off the client's own
connection on RabbitMQ before 4.1.2 (rbfly issue 30,
:py:func:`~rbfly.streams.parts.placement.own_connection_allowed`): there,
the leader the own connection watches for its offset queries and stores
dying leaves the subscription in its group (a ghost member, active
forever) while the broker forgets it on the connection. The subscription
goes to a connection of its own to the client's node instead, and that
connection is closed when its stream moves (removing a ghost the broker
kept, rabbitmq-server issue 14040).

No sockets, no broker: the connections are fakes the real
:py:class:`~rbfly.streams.parts.placer.Placer` and
:py:class:`~rbfly.streams.parts.connections.Connections` work with.
"""

from __future__ import annotations

import typing as tp
from collections.abc import Coroutine

import pytest

from rbfly.streams.parts.connections import Connections
from rbfly.streams.parts.connector import Node
from rbfly.streams.parts.options import ClientOptions
from rbfly.streams.parts.placement import own_connection_allowed
from rbfly.streams.parts.placer import Placer
from rbfly.streams.parts.recovery import Recovery
from rbfly.streams.parts.tasks import Background
from rbfly.streams.protocol.commands import (
    Broker,
    Metadata,
    MetadataResponse,
    MetadataUpdate,
    StreamMetadata,
)
from rbfly.streams.protocol.constants import ResponseCode

STREAM = 'orders-0'
R1: Node = ('localhost', 5561)
R2: Node = ('localhost', 5562)

@pytest.mark.parametrize(('single_active', 'version', 'allowed'), [
    (False, (4, 0, 5), True),     # any other subscription
    (True, (3, 11, 0), False),
    (True, (3, 13, 7), False),
    (True, (4, 0, 5), False),     # the cluster of tests/cluster
    (True, (4, 1, 1), False),
    (True, (4, 1, 2), True),      # rabbitmq-server 13961 fixed
    (True, (4, 2, 0), True),
    (True, (4, 3, 0), True),
    (True, (0,), False),          # a version the broker did not say
])
def test_own_connection_allowed(
        single_active: bool, version: tuple[int, ...], allowed: bool,
) -> None:
    assert own_connection_allowed(single_active, version) is allowed

class Protocol:
    """A connection to a node holding a member of every stream."""
    is_open = True

    def __init__(self, node: Node, version: tuple[int, ...]) -> None:
        self.broker_version = version
        self.connection_properties = {
            'advertised_host': node[0], 'advertised_port': str(node[1]),
        }
        self.publishers: dict[int, object] = {}
        self.subscriptions: dict[int, object] = {}
        self.on_lost: object = None

    async def request(self, command: object, *args: object) -> object:
        assert isinstance(command, Metadata)
        brokers = [Broker(1, *R1), Broker(2, *R2)]
        return MetadataResponse(1, brokers, [
            StreamMetadata(s, ResponseCode.OK, 1, [2]) for s in command.streams
        ])

class Connector:
    """Opens a connection to the node asked for (``None``: the client's)."""
    def __init__(self, home: Node, version: tuple[int, ...]) -> None:
        self.home = home
        self.version = version
        self.opened: list[Protocol] = []

    async def connect_node(self, where: Node | None, *args: object) -> Protocol:
        protocol = Protocol(where or self.home, self.version)
        self.opened.append(protocol)
        return protocol

class Declarer:
    def __init__(self) -> None:
        self.subscribed: list[object] = []

    async def subscribe(self, protocol: Protocol, sub: Sub, spec: object) -> None:
        self.subscribed.append(protocol)
        sub.protocol = protocol

class Sub:
    """A subscription, as the placer sees it."""
    kind = 'subscriptions'

    def __init__(self, single_active: bool) -> None:
        self.stream = STREAM
        self.activation = (lambda active: None) if single_active else None
        self.owner: object = None
        self.protocol: Protocol | None = None

def setup(version: tuple[int, ...]) -> tuple[Placer, Connections, Connector]:
    connector = Connector(R1, version)
    declarer = Declarer()
    connections = Connections(ClientOptions(), tp.cast(tp.Any, connector),
                              tp.cast(tp.Any, None), Background())
    connections.own.protocol = tp.cast(tp.Any, Protocol(R1, version))
    placer = Placer(ClientOptions(), connections, tp.cast(tp.Any, declarer))
    return placer, connections, connector

async def place(placer: Placer, connections: Connections, sub: Sub) -> None:
    own = connections.own.protocol
    assert own is not None
    await placer.place_subscription(own, tp.cast(tp.Any, sub), tp.cast(tp.Any, None))

@pytest.mark.parametrize('version', [(4, 0, 5), (4, 3, 0)])
async def test_other_subscriptions_on_own_connection(version: tuple[int, ...]) -> None:
    placer, connections, connector = setup(version)
    sub = Sub(single_active=False)
    await place(placer, connections, sub)
    own: object = connections.own.protocol
    assert sub.protocol is own and sub.owner is connections.own
    assert connector.opened == []

async def test_single_active_consumer_on_fixed_broker() -> None:
    placer, connections, connector = setup((4, 1, 2))
    sub = Sub(single_active=True)
    await place(placer, connections, sub)
    own: object = connections.own.protocol
    assert sub.protocol is own
    assert connector.opened == []

async def test_single_active_consumers_apart_on_affected_broker() -> None:
    """
    RabbitMQ 4.0.5: each single active consumer has a connection of its
    own to the client's node, where nothing else goes; the client's
    connection holds none.
    """
    placer, connections, connector = setup((4, 0, 5))
    subs = [Sub(single_active=True) for _ in range(3)]
    for sub in subs:
        await place(placer, connections, sub)
    other = Sub(single_active=False)
    await place(placer, connections, other)
    assert len(connector.opened) == 3
    assert [s.protocol for s in subs] == connector.opened
    own: object = connections.own.protocol
    assert other.protocol is own
    assert not {id(s) for s in connections.own.subscriptions} & {id(s) for s in subs}
    assert [len(m.subscriptions) for m in connections.nodes[None]] == [1, 1, 1]
    # another connection to the client's node (a publisher when the
    # client's connection is full) is not one of theirs
    assert connections.node_manager(None, 'publishers') not in connections.nodes[None][:3]
    assert placer.on_own(tp.cast(tp.Any, connector.opened[0]), tp.cast(tp.Any, subs[0])) is False

async def test_connection_of_its_own_follows_the_client() -> None:
    """
    After the client's connection moved to another node (a broker crash
    closed it, the node lives on), a single active consumer placed anew
    goes to the new node.
    """
    placer, connections, connector = setup((4, 0, 5))
    first = Sub(single_active=True)
    await place(placer, connections, first)
    connections.own.protocol = tp.cast(tp.Any, Protocol(R2, (4, 0, 5)))
    connector.home = R2
    second = Sub(single_active=True)
    await place(placer, connections, second)
    old, new = connector.opened
    assert first.protocol is old and second.protocol is new
    assert new.connection_properties['advertised_port'] == '5562'

#
# a MetadataUpdate on a connection of single active consumers
#

class Link:
    """A connection (and its manager), as the recovery sees them."""
    def __init__(self, version: tuple[int, ...]) -> None:
        self.broker_version = version
        self.is_open = True
        self.aborted: list[Exception] = []
        self.protocol = self
        self.publishers: set[object] = set()
        self.subscriptions: set[Sub] = set()

    def abort(self, error: Exception) -> None:
        self.aborted.append(error)
        self.is_open = False

    def hold(self, sub: Sub) -> Sub:
        sub.protocol = tp.cast(tp.Any, self)
        sub.owner = self
        self.subscriptions.add(sub)
        return sub

class Managers:
    def __init__(self, own: Link, nodes: list[Link]) -> None:
        self.own = own
        self.nodes = nodes

    def node_managers(self) -> list[Link]:
        return list(self.nodes)

    def managers(self) -> list[Link]:
        return [self.own, *self.nodes]

class Tasks:
    """Records what the recovery would run (declaring again), runs nothing."""
    def __init__(self) -> None:
        self.spawned = 0

    def spawn(self, coro: Coroutine[object, object, None], **kw: object) -> None:
        self.spawned += 1
        coro.close()

def update(own: Link, nodes: list[Link], on: Link) -> Tasks:
    tasks = Tasks()
    recovery = Recovery(
        tp.cast(tp.Any, None), tp.cast(tp.Any, Managers(own, nodes)), tp.cast(tp.Any, None),
        tp.cast(tp.Any, None), tp.cast(tp.Any, None), tp.cast(tp.Any, tasks),
    )
    recovery.metadata_update(tp.cast(tp.Any, on), MetadataUpdate(6, STREAM))
    return tasks

def test_update_closes_connection_of_single_active_consumers() -> None:
    """
    RabbitMQ 4.0.5: the connection holding a single active consumer of
    the stream is closed (its loss places all it held anew), nothing is
    declared again on it; another connection is left alone.
    """
    own, node, other = Link((4, 0, 5)), Link((4, 0, 5)), Link((4, 0, 5))
    node.hold(Sub(single_active=True))
    other.hold(Sub(single_active=True))
    tasks = update(own, [node, other], node)
    assert len(node.aborted) == 1 and tasks.spawned == 0
    assert other.aborted == [] and own.aborted == []
    # a second update of the closing connection: its loss handles all
    tasks = update(own, [node, other], node)
    assert len(node.aborted) == 1 and tasks.spawned == 0

@pytest.mark.parametrize(('version', 'single_active'), [
    ((4, 1, 2), True),    # the broker removes them from their groups itself
    ((4, 0, 5), False),   # no group
])
def test_update_restores_on_the_connection(version: tuple[int, ...], single_active: bool) -> None:
    own, node = Link(version), Link(version)
    node.hold(Sub(single_active=single_active))
    tasks = update(own, [node], node)
    assert node.aborted == [] and tasks.spawned == 1

def test_update_of_own_connection_not_closed() -> None:
    """The client's own connection holds no single active consumer there; never closed."""
    own = Link((4, 0, 5))
    own.hold(Sub(single_active=True))
    tasks = update(own, [], own)
    assert own.aborted == [] and tasks.spawned == 1
