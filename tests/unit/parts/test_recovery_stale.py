"""
A publisher declared again after a MetadataUpdate that the broker did not
forget (:py:meth:`~rbfly.streams.parts.recovery.Recovery._declare_changed`).

RabbitMQ 3.13 and later forget on a MetadataUpdate only the publishers
whose leader failed, and the subscriptions reading from the member that
failed (``clean_publishers`` and ``clean_subscriptions`` of
``rabbit_stream_reader``, with the member's pid): the update sent for a
subscription whose replica failed leaves a publisher of the same stream
on that connection in place. The client declares what the connection held
of the stream again, and the broker refuses the publisher
(PRECONDITION_FAILED: its id, or its name, is taken): the publisher ended,
and the broker's old one stayed. It is deleted now, and the publisher
declared again. The real recovery and declarer run here against a
connection that keeps the broker's publishers; no sockets.
"""

from __future__ import annotations

import typing as tp

from rbfly.streams.aio.records import delete_stale
from rbfly.streams.error import PreconditionFailed, PublisherDoesNotExist
from rbfly.streams.parts.declare import Declarer
from rbfly.streams.parts.tasks import Background
from rbfly.streams.protocol.commands import (
    Broker,
    DeclarePublisher,
    DeletePublisher,
    Metadata,
    MetadataResponse,
    MetadataUpdate,
    QueryPublisherSequence,
    StreamMetadata,
)
from rbfly.streams.protocol.constants import ResponseCode
from rbfly.streams.protocol.responses import (
    DeclarePublisherResponse,
    DeletePublisherResponse,
    QueryPublisherSequenceResponse,
)

from .test_recovery_scope import STREAM, Connections, Item, Manager, recovery

STORED = 5  # the last publishing id the broker stored for the name


class Publisher(Item):
    name = 'app'
    restored: int | None = None

    def restore(self, sequence: int) -> None:
        self.restored = sequence


class Connection:
    """A connection, and the publishers the broker holds on it, by id."""
    is_open = True
    broker_version = (4, 3, 0)  # groups kept in step: no connection closed for them

    def __init__(self) -> None:
        self.publishers: dict[int, object] = {}
        self.subscriptions: dict[int, object] = {}
        self.broker: dict[int, str] = {}
        self.deleted: list[int] = []

    async def request(self, command: object, *args: object) -> object:
        if isinstance(command, Metadata):
            return MetadataResponse(
                1, [Broker(0, 'localhost', 5552)],
                [StreamMetadata(STREAM, ResponseCode.OK, 0, [])],
            )
        if isinstance(command, QueryPublisherSequence):
            return QueryPublisherSequenceResponse(1, ResponseCode.OK, STORED)
        if isinstance(command, DeclarePublisher):
            ident, name = command.publisher_id, command.reference
            if ident in self.broker or name in self.broker.values():
                raise PreconditionFailed('publisher {}'.format(ident))
            self.broker[ident] = name
            return DeclarePublisherResponse(1, ResponseCode.OK)
        if isinstance(command, DeletePublisher):
            assert self.publishers.get(command.publisher_id) is not None  # held meanwhile
            self.deleted.append(command.publisher_id)
            if self.broker.pop(command.publisher_id, None) is None:
                raise PublisherDoesNotExist('publisher')
            return DeletePublisherResponse(1, ResponseCode.OK)
        raise AssertionError(command)


async def restore(connection: Connection) -> Publisher:
    own = Manager(tp.cast(tp.Any, connection))
    publisher = Publisher('publishers', STREAM, own, tp.cast(tp.Any, connection))
    connection.publishers[0] = publisher
    tasks = Background()
    recovery(Connections(own, []), tp.cast(tp.Any, Declarer(tasks)), tasks).metadata_update(
        tp.cast(tp.Any, connection), MetadataUpdate(6, STREAM),
    )
    await tasks.wait()
    return publisher


async def test_publisher_kept_by_broker() -> None:
    """
    The broker's old publisher is deleted, and the publisher declared again
    there: one publisher of the name on the broker, and it continues.
    """
    connection = Connection()
    connection.broker[0] = 'app'  # not forgotten
    publisher = await restore(connection)
    assert publisher.error is None
    assert connection.deleted == [0]
    assert connection.broker == {0: 'app'}
    assert connection.publishers == {0: publisher}
    assert publisher.protocol is tp.cast(tp.Any, connection)
    assert publisher.restored == STORED


async def test_publisher_forgotten() -> None:
    """A publisher the broker forgot is declared again, nothing deleted."""
    connection = Connection()
    publisher = await restore(connection)
    assert publisher.error is None
    assert connection.deleted == []
    assert connection.broker == {0: 'app'}


async def test_delete_stale_id_taken() -> None:
    """
    An id taken on the connection now is not deleted: what the broker
    holds under it is what took it.
    """
    connection = Connection()
    connection.broker[0] = 'other'
    connection.publishers[0] = object()
    assert not await delete_stale(
        tp.cast(tp.Any, connection), 'publishers', 0, DeletePublisher(0), 'publisher',
    )
    assert connection.deleted == []
    assert connection.broker == {0: 'other'}


async def test_delete_stale_frees_id() -> None:
    """The id is taken while the broker deletes, and free once it answered."""
    connection = Connection()
    connection.broker[3] = 'app'
    assert await delete_stale(
        tp.cast(tp.Any, connection), 'publishers', 3, DeletePublisher(3), 'publisher',
    )
    assert connection.deleted == [3] and connection.broker == {}
    assert connection.publishers == {}


async def test_publisher_moved_off_node_connection() -> None:
    """
    A publisher of a node's connection whose stream changed is placed
    anew; the broker's publisher on that connection, if it kept it, is
    deleted first (placed on the same connection again, its name was
    taken).
    """
    connection = Connection()
    connection.broker[0] = 'app'
    own = Manager(tp.cast(tp.Any, Connection()))
    node = Manager(tp.cast(tp.Any, connection))
    publisher = Publisher('publishers', STREAM, node, tp.cast(tp.Any, connection))
    connection.publishers[0] = publisher
    tasks = Background()
    r = recovery(Connections(own, [node]), tp.cast(tp.Any, Declarer(tasks)), tasks)
    relocated: list[object] = []
    r.relocate_publisher = relocated.append  # type: ignore[method-assign,assignment]
    r.metadata_update(tp.cast(tp.Any, connection), MetadataUpdate(6, STREAM))
    await tasks.wait()
    assert relocated == [publisher]
    assert connection.deleted == [0] and connection.broker == {}
    assert connection.publishers == {}  # the id is free again
