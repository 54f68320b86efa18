"""
Which publishers and subscriptions a MetadataUpdate restores
(:py:class:`~rbfly.streams.parts.recovery.Recovery`): those the connection
that received it held of the stream at that moment, which the broker
forgot, and nothing else.

RabbitMQ refuses a second publisher of one name on a connection
(PRECONDITION_FAILED): a soak run in CI declared the client connection's
publisher of a stream again after a MetadataUpdate of that stream received
on another connection, while the broker still had it; the restore failed
and the subscription of the stream after it was never restored. No
sockets, no broker: the declarations are recorded.
"""

from __future__ import annotations

import asyncio
import typing as tp

from rbfly.streams.error import PreconditionFailed
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

STREAM = 'orders'


class Item:
    """A publisher or subscription, as the recovery sees it."""

    def __init__(self, kind: str, stream: str, owner: Manager, protocol: Protocol) -> None:
        self.kind = kind
        self.stream = stream
        self.owner: Manager | None = owner
        self.protocol: Protocol | None = protocol
        self.ident = 0
        self.error: Exception | None = None
        (owner.publishers if kind == 'publishers' else owner.subscriptions).add(self)

    def attached(self) -> None:
        pass

    def on_connection_lost(self, error: Exception) -> None:
        self.protocol = None

    def fail(self, error: Exception) -> None:
        self.error = error


class Protocol:
    is_open = True
    broker_version = (4, 3, 0)  # groups kept in step: no connection closed for them

    def __init__(self, name: str, *, metadata: bool = False) -> None:
        self.name = name
        self.metadata = metadata  # answers Metadata: the stream has a leader
        self.publishers: dict[int, Item] = {}
        self.subscriptions: dict[int, Item] = {}

    async def request(self, command: object, *args: object) -> object:
        if self.metadata and isinstance(command, Metadata):
            return MetadataResponse(
                1, [Broker(0, 'localhost', 5552)],
                [StreamMetadata(s, ResponseCode.OK, 0, []) for s in command.streams],
            )
        raise AssertionError('{}: no request expected: {}'.format(self.name, command))


class Manager:
    def __init__(self, protocol: Protocol) -> None:
        self.protocol = protocol
        self.publishers: set[Item] = set()
        self.subscriptions: set[Item] = set()


class Connections:
    def __init__(self, own: Manager, nodes: list[Manager]) -> None:
        self.own = own
        self.nodes = nodes

    def node_managers(self) -> list[Manager]:
        return list(self.nodes)

    def managers(self) -> list[Manager]:
        return [self.own, *self.nodes]


class Declarer:
    def __init__(self, refuse: tuple[Item, ...] = ()) -> None:
        self.declared: list[Item] = []
        self.refuse = refuse

    async def restore_publisher(self, protocol: Protocol, item: Item) -> None:
        await asyncio.sleep(0)
        if item in self.refuse:
            raise PreconditionFailed('publisher {!r}'.format(item.stream))
        self.declared.append(item)
        item.protocol = protocol

    async def delete_stale_publisher(self, protocol: Protocol, item: Item, ident: int) -> bool:
        return False  # nothing stale there: the refusal stands


def recovery(connections: Connections, declarer: Declarer, tasks: Background) -> Recovery:
    options = tp.cast(tp.Any, type('Options', (), {'publishers_on_leader': False}))
    return Recovery(
        options, tp.cast(tp.Any, connections), tp.cast(tp.Any, None),
        tp.cast(tp.Any, declarer), tp.cast(tp.Any, None), tasks,
    )


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_update_of_another_connection() -> None:
    """
    A MetadataUpdate received on a node's connection leaves what the
    client's own connection holds of the stream alone: the broker still
    has it there.
    """
    own = Manager(Protocol('own'))
    node = Manager(Protocol('node'))
    publisher = Item('publishers', STREAM, own, own.protocol)
    sub = Item('subscriptions', STREAM, own, own.protocol)
    declarer = Declarer()
    tasks = Background()
    recovery(Connections(own, [node]), declarer, tasks).metadata_update(
        tp.cast(tp.Any, node.protocol), MetadataUpdate(6, STREAM),
    )
    await settle()
    await tasks.wait()
    assert declarer.declared == []
    assert publisher.protocol is own.protocol and publisher.owner is own
    assert sub.protocol is own.protocol and sub.owner is own


async def test_update_of_a_connection_replaced() -> None:
    """
    A MetadataUpdate of the client's connection that was replaced since
    (lost and reconnected: its recovery declares everything again) is not
    acted on a second time.
    """
    old = Protocol('old')
    own = Manager(Protocol('new'))
    publisher = Item('publishers', STREAM, own, old)
    declarer = Declarer()
    tasks = Background()
    r = recovery(Connections(own, []), declarer, tasks)
    r.metadata_update(tp.cast(tp.Any, old), MetadataUpdate(6, STREAM))
    await settle()
    await tasks.wait()
    assert declarer.declared == []
    assert publisher.protocol is old and publisher.owner is own


async def test_update_of_another_stream() -> None:
    """Items of other streams on the connection are not touched."""
    own = Manager(Protocol('own'))
    other = Item('publishers', 'other', own, own.protocol)
    declarer = Declarer()
    tasks = Background()
    recovery(Connections(own, []), declarer, tasks).metadata_update(
        tp.cast(tp.Any, own.protocol), MetadataUpdate(6, STREAM),
    )
    await settle()
    await tasks.wait()
    assert declarer.declared == []
    assert other.protocol is own.protocol


async def test_update_of_own_connection() -> None:
    """
    What the client's connection held of the stream when the update came
    is declared again; a publisher declared after it is not (the broker
    has it).
    """
    own = Manager(Protocol('own', metadata=True))
    before = Item('publishers', STREAM, own, own.protocol)
    declarer = Declarer()
    tasks = Background()
    recovery(Connections(own, []), declarer, tasks).metadata_update(
        tp.cast(tp.Any, own.protocol), MetadataUpdate(6, STREAM),
    )
    after = Item('publishers', STREAM, own, own.protocol)
    await settle()
    await tasks.wait()
    assert declarer.declared == [before]
    assert before.protocol is own.protocol and before.error is None
    assert after.protocol is own.protocol


async def test_refused_restore_ends_one() -> None:
    """
    A publisher the broker refuses to declare again ends with the broker's
    error; the others of the stream are declared still.
    """
    own = Manager(Protocol('own', metadata=True))
    refused = Item('publishers', STREAM, own, own.protocol)
    others = [Item('publishers', STREAM, own, own.protocol) for _ in range(3)]
    declarer = Declarer(refuse=(refused,))
    tasks = Background()
    recovery(Connections(own, []), declarer, tasks).metadata_update(
        tp.cast(tp.Any, own.protocol), MetadataUpdate(6, STREAM),
    )
    await settle()
    await tasks.wait()
    assert isinstance(refused.error, PreconditionFailed)
    assert refused.owner is None and refused.protocol is None
    assert sorted(map(id, declarer.declared)) == sorted(map(id, others))
    assert all(o.error is None and o.protocol is own.protocol for o in others)
