"""
Super streams: creating and deleting them, their partitions and routes,
a publisher per partition behind one routing publisher, and a
subscription per partition.
"""

from __future__ import annotations

import contextlib
import functools
import typing as tp
import uuid
from collections.abc import AsyncIterator

from ..error import StreamAlreadyExists, StreamDoesNotExist
from ..names import check_name
from ..protocol.commands import CreateSuperStream, DeleteSuperStream, Partitions, Route
from ..publishers.awaited import PublisherTrait
from ..publishers.options import PublisherArgs
from ..publishers.superstream import (
    RoutingKey,
    RoutingStrategy,
    SuperStreamPublisher,
    partition_names,
)
from ..subscriptions.subscription import Subscription
from .connections import Connections
from .publishing import Publishing
from .streams import check_arguments
from .subscribing import SubscribeOptions, Subscribing

class SuperStreams:
    """
    Super streams of a client.

    :param connections: The client's connections.
    :param publishing: Creates the partitions' publishers.
    :param subscribing: Creates the partitions' subscriptions.
    """
    def __init__(
            self, connections: Connections, publishing: Publishing, subscribing: Subscribing,
    ) -> None:
        self._connections = connections
        self._publishing = publishing
        self._subscribing = subscribing

    async def _checked(self, super_stream: str, version: tuple[int, int], what: str) -> None:
        check_name('super stream', super_stream)
        protocol = await self._connections.get()
        protocol.require(version, what)

    async def create(
            self, super_stream: str, partitions: int | None,
            binding_keys: tp.Sequence[str] | None, arguments: tp.Mapping[str, str] | None,
            exist_ok: bool,
    ) -> list[str]:
        """Create a super stream (RabbitMQ 3.13+); return its partitions."""
        check_name('super stream', super_stream)
        names, keys = partition_names(super_stream, partitions, binding_keys)
        for name in names:
            check_name('partition', name)
        args = check_arguments(arguments)
        await self._checked(super_stream, (3, 13), 'creating super streams')
        try:
            await self._connections.call(
                CreateSuperStream(super_stream, names, keys, args),
                'super stream {!r}'.format(super_stream),
            )
        except StreamAlreadyExists:
            if not exist_ok:
                raise
        return names

    async def delete(self, super_stream: str, missing_ok: bool) -> None:
        """Delete a super stream and its partitions (RabbitMQ 3.13+)."""
        await self._checked(super_stream, (3, 13), 'deleting super streams')
        try:
            await self._connections.call(
                DeleteSuperStream(super_stream), 'super stream {!r}'.format(super_stream),
            )
        except StreamDoesNotExist:
            if not missing_ok:
                raise

    async def partitions(self, super_stream: str) -> list[str]:
        """The partitions of a super stream (RabbitMQ 3.11+), in order."""
        await self._checked(super_stream, (3, 11), 'super streams')
        response = await self._connections.call(
            Partitions(super_stream), 'super stream {!r}'.format(super_stream),
        )
        return list(response.streams)

    async def exists(self, super_stream: str) -> bool:
        """Whether a super stream exists (RabbitMQ 3.11+)."""
        try:
            await self.partitions(super_stream)
        except StreamDoesNotExist:
            return False
        return True

    async def route(self, super_stream: str, routing_key: str) -> list[str]:
        """The partitions the broker binds a routing key to (RabbitMQ 3.11+)."""
        if not isinstance(routing_key, str):
            raise TypeError('routing_key must be a str, got {!r}'.format(
                type(routing_key).__name__))
        await self._checked(super_stream, (3, 11), 'super streams')
        response = await self._connections.call(
            Route(routing_key, super_stream),
            'routing key {!r} of super stream {!r}'.format(routing_key, super_stream),
        )
        return list(response.streams)

    async def _existing_partitions(self, super_stream: str) -> list[str]:
        partitions = await self.partitions(super_stream)
        if not partitions:
            raise StreamDoesNotExist('super stream {!r} has no partitions'.format(super_stream))
        return partitions

    @contextlib.asynccontextmanager
    async def publisher(
            self, super_stream: str, routing_key: RoutingKey, routing: str | RoutingStrategy,
            cls: type[PublisherTrait], options: PublisherArgs,
    ) -> AsyncIterator[SuperStreamPublisher]:
        """A publisher of a super stream: one publisher of class ``cls`` per partition."""
        strategy = None
        if callable(routing):
            strategy = routing
        elif routing not in ('hash', 'key'):
            raise ValueError('routing must be hash, key or a routing strategy, got {!r}'.format(
                routing,
            ))
        if not callable(routing_key):
            raise TypeError('routing_key must be a function of a message, got {!r}'.format(
                routing_key,
            ))
        partitions = await self._existing_partitions(super_stream)
        sequence = None
        if options.get('dedup', True):
            name = options.get('name') or 'rbfly-{}'.format(uuid.uuid4().hex)
            options = {**options, 'name': name}
            sequence = functools.partial(self._publishing.query_sequence, name=name)
        async with contextlib.AsyncExitStack() as stack:
            publishers: dict[str, PublisherTrait] = {}
            for partition in partitions:
                publishers[partition] = await stack.enter_async_context(
                    self._publishing.create(
                        'StreamsClient.super_stream_publisher', partition, cls, options,
                    ),
                )
            route = functools.partial(self.route, super_stream) if routing == 'key' else None
            yield SuperStreamPublisher(
                super_stream, partitions, publishers, routing_key, route, strategy, sequence,
            )

    async def subscriptions(
            self, super_stream: str, options: SubscribeOptions,
    ) -> list[Subscription]:
        """A subscription per partition of a super stream."""
        partitions = await self._existing_partitions(super_stream)
        return [
            await self._subscribing.new(partition, options, super_stream)
            for partition in partitions
        ]

__all__ = ['SuperStreams']
