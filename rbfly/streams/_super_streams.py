"""
Super streams in :py:class:`~rbfly.streams.StreamsClient`: creating and
deleting them, their partitions and routes, publishers routing messages
to partitions, and subscriptions to all partitions.
"""

from __future__ import annotations

import contextlib
import functools
import typing as tp
import uuid
from collections.abc import AsyncGenerator, AsyncIterator

from ..types import AMQPBody
from ._publishing import PublishersMixin
from ._subscribing import ConsumerUpdateCallback, ResumeCallback, SubscriptionsMixin
from .error import (
    StreamAlreadyExists,
    StreamDoesNotExist,
)
from .offset import Offset
from .protocol.commands import (
    CreateSuperStream,
    DeleteSuperStream,
    Partitions,
    Route,
)
from .publisher import Publisher, PublisherTrait
from .subscriber import Chunk
from .superstream import RoutingKey, SuperStreamPublisher, partition_names
from .types import MessageFilter
from .util import check_name

class SuperStreamsMixin(PublishersMixin, SubscriptionsMixin):
    """Super streams: management, publishers and subscriptions."""

    async def create_super_stream(
            self,
            super_stream: str,
            partitions: int | None = None,
            *,
            binding_keys: tp.Sequence[str] | None = None,
            arguments: tp.Mapping[str, str] | None = None,
            exist_ok: bool = True,
    ) -> list[str]:
        """
        Create a super stream (RabbitMQ 3.13+): its partition streams, an
        exchange of its name and the bindings between them. Return the
        names of the partitions.

        :param partitions: Number of partitions, named
            ``<super stream>-0`` ... and bound with keys ``0`` ...
        :param binding_keys: Or binding keys, one partition each, named
            ``<super stream>-<key>``.
        :param arguments: Stream arguments of the partitions (e.g.
            ``max-age``, ``max-length-bytes``).
        :param exist_ok: Do not fail when the super stream exists.
        """
        check_name('super stream', super_stream)
        names, keys = partition_names(super_stream, partitions, binding_keys)
        for name in names:
            check_name('partition', name)
        protocol = await self._get_protocol()
        self._require(protocol, (3, 13), 'creating super streams')
        try:
            await self._call(
                CreateSuperStream(super_stream, names, keys, dict(arguments or {})),
                'super stream {!r}'.format(super_stream),
            )
        except StreamAlreadyExists:
            if not exist_ok:
                raise
        return names

    async def delete_super_stream(self, super_stream: str, *, missing_ok: bool = True) -> None:
        """
        Delete a super stream and its partitions (RabbitMQ 3.13+).

        :param missing_ok: Do not fail when it does not exist.
        """
        check_name('super stream', super_stream)
        protocol = await self._get_protocol()
        self._require(protocol, (3, 13), 'deleting super streams')
        try:
            await self._call(
                DeleteSuperStream(super_stream), 'super stream {!r}'.format(super_stream),
            )
        except StreamDoesNotExist:
            if not missing_ok:
                raise

    async def super_stream_exists(self, super_stream: str) -> bool:
        """
        Whether a super stream exists (RabbitMQ 3.11+).
        """
        try:
            await self.super_stream_partitions(super_stream)
        except StreamDoesNotExist:
            return False
        return True

    async def super_stream_partitions(self, super_stream: str) -> list[str]:
        """
        The partitions of a super stream (RabbitMQ 3.11+), in order.

        :raises rbfly.streams.error.StreamDoesNotExist: When there is no
            such super stream.
        """
        check_name('super stream', super_stream)
        protocol = await self._get_protocol()
        self._require(protocol, (3, 11), 'super streams')
        response = await self._call(
            Partitions(super_stream), 'super stream {!r}'.format(super_stream),
        )
        return list(response.streams)

    async def route(self, super_stream: str, routing_key: str) -> list[str]:
        """
        The partitions the broker binds a routing key to (RabbitMQ 3.11+).
        """
        check_name('super stream', super_stream)
        protocol = await self._get_protocol()
        self._require(protocol, (3, 11), 'super streams')
        response = await self._call(
            Route(routing_key, super_stream),
            'routing key {!r} of super stream {!r}'.format(routing_key, super_stream),
        )
        return list(response.streams)

    @contextlib.asynccontextmanager
    async def super_stream_publisher(
            self,
            super_stream: str,
            routing_key: RoutingKey,
            *,
            routing: tp.Literal['hash', 'key'] = 'hash',
            name: str | None = None,
            cls: type[PublisherTrait] = Publisher,
            **options: tp.Any,
    ) -> AsyncIterator[SuperStreamPublisher]:
        """
        Create a publisher of a super stream (an async context manager):
        a publisher of class ``cls`` per partition, and each message sent
        to the partition of its routing key.

        :param routing_key: Function returning a message's routing key.
        :param routing: ``hash`` (MurmurHash3 of the key, as the other
            clients) or ``key`` (the broker's bindings decide).
        :param name: Publisher name, for deduplication; the publishers of
            all partitions use it (sequences are kept per stream).
        :param options: Other options of :py:meth:`publisher`.
        """
        if routing not in ('hash', 'key'):
            raise ValueError('routing must be hash or key, got {!r}'.format(routing))
        partitions = await self.super_stream_partitions(super_stream)
        if not partitions:
            raise StreamDoesNotExist('super stream {!r} has no partitions'.format(super_stream))
        if options.get('dedup', True):
            name = name or 'rbfly-{}'.format(uuid.uuid4().hex)
        async with contextlib.AsyncExitStack() as stack:
            publishers: dict[str, PublisherTrait] = {}
            for partition in partitions:
                publishers[partition] = await stack.enter_async_context(
                    self.publisher(partition, name=name, cls=cls, **options),
                )
            route = functools.partial(self.route, super_stream) if routing == 'key' else None
            yield SuperStreamPublisher(super_stream, partitions, publishers, routing_key, route)

    def subscribe_super_stream(
            self,
            super_stream: str,
            *,
            offset: Offset = Offset.NEXT,
            filter: MessageFilter | None = None,
            timeout: float = 0,
            amqp: bool = True,
            name: str | None = None,
            single_active: bool = False,
            consumer_update: ConsumerUpdateCallback | None = None,
            store_every: int = 0,
            store_interval: float = 5,
            credit: int | None = None,
            buffer_bytes: int | None = None,
            resume: ResumeCallback | None = None,
    ) -> AsyncGenerator[AMQPBody, None]:
        """
        Subscribe to every partition of a super stream and iterate over
        their messages' bodies (see :py:meth:`subscribe_super_stream_chunks`;
        messages of one partition come in order).
        """
        chunks = self.subscribe_super_stream_chunks(
            super_stream, offset=offset, filter=filter, amqp=amqp, timeout=timeout,
            name=name, single_active=single_active, consumer_update=consumer_update,
            credit=credit, buffer_bytes=buffer_bytes, resume=resume,
        )
        tracker = self._tracker(name, store_every, store_interval)
        return self._bodies(chunks, tracker)

    async def subscribe_super_stream_chunks(
            self,
            super_stream: str,
            *,
            offset: Offset = Offset.NEXT,
            filter: MessageFilter | None = None,
            amqp: bool = True,
            timeout: float = 0,
            name: str | None = None,
            single_active: bool = False,
            consumer_update: ConsumerUpdateCallback | None = None,
            store_every: int = 0,
            store_interval: float = 5,
            credit: int | None = None,
            buffer_bytes: int | None = None,
            resume: ResumeCallback | None = None,
    ) -> AsyncGenerator[Chunk, None]:
        """
        Subscribe to every partition of a super stream and receive their
        chunks as they come (``chunk.stream`` is the partition).

        With ``single_active`` (RabbitMQ 3.11+), the subscriptions named
        ``name`` in all clients share the partitions: the broker makes one
        subscription per partition active and moves partitions as
        consumers come and go. An ``Offset.reference(name)`` offset is read
        per partition: store offsets with
        ``write_offset(chunk.stream, name, ...)`` (with
        :py:meth:`subscribe_super_stream`, ``get_message_ctx().stream`` is
        the message's partition).

        The other parameters are those of :py:meth:`subscribe_chunks`
        (``resume`` is called with the partition).
        """
        partitions = await self.super_stream_partitions(super_stream)
        if not partitions:
            raise StreamDoesNotExist('super stream {!r} has no partitions'.format(super_stream))
        flow = self._flow(credit, buffer_bytes)
        protocol = await self._get_protocol()
        subs = [
            await self._new_subscription(
                protocol, partition, offset, filter, amqp, name, single_active,
                consumer_update, super_stream, flow, resume,
            )
            for partition in partitions
        ]
        # closed with this generator, not when garbage collected: the
        # subscription ends (and its node connection closes) at once
        async with contextlib.aclosing(self._track(
                self._consume(subs, filter, timeout),
                self._tracker(name, store_every, store_interval))) as chunks:
            async for chunk in chunks:
                yield chunk

__all__ = ['SuperStreamsMixin']
