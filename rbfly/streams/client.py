"""
The user API: :py:func:`streams_client` creates a :py:class:`StreamsClient`
that connects lazily, on its first call, and offers streams, publishers,
subscriptions and offsets.

Example::

    client = streams_client('rabbitmq-stream://guest:guest@localhost')

    async with client:
        await client.create_stream('orders')
        async with client.publisher('orders') as publisher:
            await publisher.send('hello')
        async for message in client.subscribe('orders', offset=Offset.FIRST):
            print(message, get_message_ctx().stream_offset)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import platform
import ssl as _ssl
import typing as tp
import uuid
from collections.abc import AsyncGenerator, AsyncIterator

from ..amqp import get_message_ctx, set_message_ctx
from ..error import RbFlyError
from ..types import AMQPBody
from ._publish import PublishEncoder
from .aio.manager import ConnectionManager
from .aio.protocol import StreamsProtocol, open_connection
from .backoff import Backoff
from .error import (
    ConnectionLost,
    FeatureNotSupported,
    NoOffset,
    StreamAlreadyExists,
    StreamDoesNotExist,
    StreamsError,
    error_for_code,
)
from .offset import Offset, OffsetType
from .protocol.commands import (
    CommandVersion,
    Create,
    CreateSuperStream,
    DeclarePublisher,
    Delete,
    DeletePublisher,
    DeleteSuperStream,
    ExchangeCommandVersions,
    Metadata,
    MetadataUpdate,
    OffsetSpec,
    Partitions,
    QueryOffset,
    QueryPublisherSequence,
    Route,
    StoreOffset,
    StreamStats,
    Subscribe,
    Unsubscribe,
)
from .protocol.connection import ConnectionCore
from .protocol.constants import DEFAULT_FRAME_MAX, DEFAULT_HEARTBEAT, Key, ResponseCode
from .publisher import BloomFilterExtract, Publisher, PublisherPipelined, PublisherTrait
from .subscriber import Chunk, Subscription
from .superstream import RoutingKey, SuperStreamPublisher, partition_names
from .types import MessageFilter
from .url import ConnectionInfo, parse_uri
from .util import StreamInfo, check_name, connection, post_filter, version

logger = logging.getLogger(__name__)

DEFAULT_BACKOFF = Backoff()

ConsumerUpdateCallback = tp.Callable[[bool], 'Offset | tp.Awaitable[Offset | None] | None']
"""
Called when the broker makes a single active consumer active (``True``) or
inactive (``False``); returns the offset to start at when active, or
``None`` for the subscription's offset.
"""

T = tp.TypeVar('T', bound=PublisherTrait)

DEFAULT_CREDIT = 16
"""Chunks a subscription lets the broker send ahead at the start, and at least."""

DEFAULT_BUFFER_BYTES = 8 * 1024 * 1024
"""Bytes of chunks a subscription may hold (bounds its memory)."""

class StreamsClient:
    """
    RabbitMQ Streams client.

    A client holds one connection to the broker, opened on the first call
    that needs it. When the connection is lost, the client reconnects,
    declares its publishers again (sending their unconfirmed messages
    again) and subscribes again from the next offset.

    :param connection_info: Where and how to connect.
    :param frame_max: Largest frame to accept (the broker may lower it).
    :param heartbeat: Heartbeat interval asked for, in seconds.
    :param credit: Chunks a subscription lets the broker send ahead at
        the start, and at least.
    :param buffer_bytes: Bytes of chunks a subscription may hold, buffered
        or on their way (it sets how many chunks the broker may send
        ahead, as chunk sizes vary from bytes to megabytes).
    :param connect_timeout: Seconds to wait for a connection and handshake.
    :param reconnect: Delays between reconnection attempts after the
        connection was lost (while publishers or subscriptions exist).
    """
    def __init__(
            self,
            connection_info: ConnectionInfo,
            *,
            frame_max: int = DEFAULT_FRAME_MAX,
            heartbeat: int = DEFAULT_HEARTBEAT,
            credit: int = DEFAULT_CREDIT,
            buffer_bytes: int = DEFAULT_BUFFER_BYTES,
            connect_timeout: float = 30,
            reconnect: Backoff = DEFAULT_BACKOFF,
    ) -> None:
        if not 1 <= credit <= 0xffff:
            raise ValueError('credit must be 1..65535, got {}'.format(credit))
        self._info = connection_info
        self._frame_max = frame_max
        self._heartbeat = heartbeat
        self._credit = credit
        if buffer_bytes < 1:
            raise ValueError('buffer_bytes must be positive, got {}'.format(buffer_bytes))
        self._buffer_bytes = buffer_bytes
        self._connect_timeout = connect_timeout
        self._manager = ConnectionManager(
            self._connect, reconnect, self._restore_publisher, self._restore_subscription,
        )
        self._tasks: set[asyncio.Task[None]] = set()

    def __repr__(self) -> str:
        return 'StreamsClient({})'.format(self._info)

    #
    # connection
    #

    @property
    def _protocol(self) -> StreamsProtocol | None:
        return self._manager.protocol

    async def _get_protocol(self) -> StreamsProtocol:
        return await self._manager.get()

    async def _call(self, command: tp.Any, context: str = '') -> tp.Any:
        """
        Send an idempotent request (stream management, queries); when the
        connection is lost before the response, send it once more on a new
        connection.
        """
        protocol = await self._get_protocol()
        try:
            return await protocol.request(command, context)
        except ConnectionLost:
            logger.info('connection lost during %s; retrying', type(command).__name__)
        protocol = await self._get_protocol()
        return await protocol.request(command, context)

    async def _wait_recovery(self, publisher: PublisherTrait) -> None:
        await self._manager.wait_recovery()

    async def _connect(self) -> StreamsProtocol:
        info = self._info
        external = info.ssl is not None and info.username is None
        core = ConnectionCore(
            virtual_host=info.virtual_host,
            username=info.username or 'guest',
            password=info.password if info.password is not None else 'guest',
            mechanism='EXTERNAL' if external else 'PLAIN',
            frame_max=self._frame_max,
            heartbeat=self._heartbeat,
            client_properties={
                'product': 'rbfly',
                'platform': 'Python {}'.format(platform.python_version()),
                'information': 'https://pypi.org/project/rbfly/',
            },
        )
        logger.info('connecting to %s', info)
        protocol = await open_connection(
            info.host, info.port, core, ssl=info.ssl, timeout=self._connect_timeout,
        )
        protocol.publish_encoder = PublishEncoder(core.frame_max)  # type: ignore[attr-defined]
        protocol.on_metadata_update = self._on_metadata_update
        protocol.broker_version = version(protocol.server_properties)  # type: ignore[attr-defined]
        if protocol.broker_version >= (3, 11):  # type: ignore[attr-defined]
            await protocol.request(ExchangeCommandVersions([
                CommandVersion(Key.PUBLISH, 1, 2),
                CommandVersion(Key.DELIVER, 1, 2),
            ]))
        logger.info('connected to %s (RabbitMQ %s)', info,
                    protocol.server_properties.get('version', 'unknown'))
        return protocol

    async def disconnect(self) -> None:
        """
        Close the connection to the broker (the client connects again on
        its next call).
        """
        if self._tasks:
            await asyncio.wait(self._tasks)
        await self._manager.close()

    async def __aenter__(self) -> StreamsClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.disconnect()

    def _spawn(self, coro: tp.Coroutine[tp.Any, tp.Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _require(self, protocol: StreamsProtocol, version: tuple[int, ...], feature: str) -> None:
        have = protocol.broker_version  # type: ignore[attr-defined]
        if have < version:
            raise FeatureNotSupported('{} needs RabbitMQ {} or later; the broker is {}'.format(
                feature, '.'.join(map(str, version)),
                protocol.server_properties.get('version', 'unknown'),
            ))

    #
    # streams
    #

    async def create_stream(
            self,
            stream: str,
            *,
            max_length_bytes: int | None = None,
            max_age: str | None = None,
            max_segment_size_bytes: int | None = None,
            filter_size: int | None = None,
            leader_locator: str | None = None,
            initial_cluster_size: int | None = None,
            arguments: tp.Mapping[str, str] | None = None,
            exist_ok: bool = True,
    ) -> None:
        """
        Create a stream.

        :param stream: Stream name.
        :param max_length_bytes: Retention: maximum size of the stream.
        :param max_age: Retention: maximum age of messages, e.g. ``'7D'``,
            ``'12h'``, ``'3600s'``.
        :param max_segment_size_bytes: Size of the stream's segment files.
        :param filter_size: Bloom filter size in bytes (16-255, 3.13+).
        :param leader_locator: ``client-local``, ``balanced`` or
            ``least-leaders``.
        :param initial_cluster_size: Number of stream replicas.
        :param arguments: Any other stream arguments.
        :param exist_ok: Do not fail when the stream exists (with the same
            arguments), as RbFly 0.10 did.
        """
        check_name('stream', stream)
        args: dict[str, str] = dict(arguments or {})
        for key, value in (
                ('max-length-bytes', max_length_bytes),
                ('max-age', max_age),
                ('stream-max-segment-size-bytes', max_segment_size_bytes),
                ('stream-filter-size-bytes', filter_size),
                ('queue-leader-locator', leader_locator),
                ('initial-cluster-size', initial_cluster_size)):
            if value is not None:
                args[key] = str(value)
        try:
            await self._call(Create(stream, args), 'stream {!r}'.format(stream))
        except StreamAlreadyExists:
            if not exist_ok:
                raise

    async def delete_stream(self, stream: str, *, missing_ok: bool = True) -> None:
        """
        Delete a stream.

        :param missing_ok: Do not fail when the stream does not exist.
        """
        check_name('stream', stream)
        try:
            await self._call(Delete(stream), 'stream {!r}'.format(stream))
        except StreamDoesNotExist:
            if not missing_ok:
                raise

    async def stream_stats(self, stream: str) -> dict[str, int]:
        """
        Statistics of a stream (RabbitMQ 3.11+): ``first_chunk_id``,
        ``committed_chunk_id`` and, on newer brokers, ``last_chunk_id`` and
        ``committed_offset``.

        :raises rbfly.streams.FeatureNotSupported: On older brokers.
        """
        check_name('stream', stream)
        protocol = await self._get_protocol()
        self._require(protocol, (3, 11), 'stream statistics')
        response = await self._call(StreamStats(stream), 'stream {!r}'.format(stream))
        return dict(response.stats)

    async def stream_metadata(self, stream: str) -> StreamInfo:
        """
        Where a stream lives: its leader and replicas.

        :raises rbfly.streams.error.StreamDoesNotExist: When there is no
            such stream.
        """
        check_name('stream', stream)
        response = await self._call(Metadata([stream]), 'stream {!r}'.format(stream))
        brokers = {b.reference: (b.host, b.port) for b in response.brokers}
        for m in response.streams:
            if m.stream != stream:
                continue
            if m.code != ResponseCode.OK:
                raise error_for_code(m.code, 'stream {!r}'.format(stream))
            return StreamInfo(
                stream,
                brokers.get(m.leader_reference),
                [brokers[r] for r in m.replica_references if r in brokers],
            )
        raise StreamDoesNotExist('stream {!r}'.format(stream))

    #
    # super streams
    #

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
        name = name or 'rbfly-{}'.format(uuid.uuid4().hex)
        async with contextlib.AsyncExitStack() as stack:
            publishers: dict[str, PublisherTrait] = {}
            for partition in partitions:
                publishers[partition] = await stack.enter_async_context(
                    self.publisher(partition, name=name, cls=cls, **options),
                )
            route = functools.partial(self.route, super_stream) if routing == 'key' else None
            yield SuperStreamPublisher(super_stream, partitions, publishers, routing_key, route)

    #
    # publishers
    #

    @tp.overload
    def publisher(
            self, stream: str, *, name: str | None = None,
            filter_extract: BloomFilterExtract | None = None,
    ) -> contextlib.AbstractAsyncContextManager[Publisher]: ...

    @tp.overload
    def publisher(
            self, stream: str, *, name: str | None = None,
            filter_extract: BloomFilterExtract | None = None, cls: type[T],
            window: int | None = None,
    ) -> contextlib.AbstractAsyncContextManager[T]: ...

    def publisher(
            self, stream: str, *, name: str | None = None,
            filter_extract: BloomFilterExtract | None = None,
            cls: type[PublisherTrait] = Publisher,
            window: int | None = None,
    ) -> contextlib.AbstractAsyncContextManager[PublisherTrait]:
        """
        Create a publisher for a stream (an async context manager).

        :param stream: Stream name.
        :param name: Publisher reference name; the publisher continues from
            the last publishing id stored for the name, and the broker drops
            messages sent again with an id it already has. A unique name is
            generated when not given.
        :param filter_extract: Function returning a message's filter value
            (RabbitMQ 3.13+).
        :param cls: Publisher class, e.g. :py:class:`PublisherBatchFast`.
        :param window: Messages a :py:class:`PublisherPipelined` lets wait
            for confirmation.
        """
        check_name('stream', stream)
        if name is not None:
            check_name('publisher', name)
        return self._publisher(stream, name, filter_extract, cls, window)

    @contextlib.asynccontextmanager
    async def _publisher(
            self, stream: str, name: str | None,
            filter_extract: BloomFilterExtract | None, cls: type[T], window: int | None,
    ) -> AsyncIterator[T]:
        protocol = await self._get_protocol()
        if filter_extract is not None:
            self._require(protocol, (3, 13), 'stream filtering')
        name = name or 'rbfly-{}'.format(uuid.uuid4().hex)
        publisher = cls(self, stream, -1, name, 0, filter_extract)
        if window is not None:
            if not isinstance(publisher, PublisherPipelined):
                raise ValueError('window is an option of PublisherPipelined only')
            if window < 1:
                raise ValueError('window must be at least 1, got {}'.format(window))
            publisher.window = window
        publisher_id, sequence = await self._declare(protocol, publisher)
        publisher.message_id = sequence
        publisher._attach(protocol, publisher_id)
        self._manager.publishers.add(publisher)
        try:
            yield publisher
        finally:
            publisher._closed = True
            self._manager.publishers.discard(publisher)
            protocol = publisher._protocol  # type: ignore[assignment]
            if protocol is not None:
                protocol.publishers.pop(publisher._id, None)
                if protocol.is_open:
                    with contextlib.suppress(StreamsError):
                        await protocol.request(
                            DeletePublisher(publisher._id),
                            'publisher {!r} of stream {!r}'.format(name, stream),
                        )

    async def _declare(
            self, protocol: StreamsProtocol, publisher: PublisherTrait,
    ) -> tuple[int, int]:
        """
        Declare a publisher on a connection; return its id and the last
        publishing id the stream stored for its name.
        """
        name = publisher.name
        stream = publisher.stream
        ctx = 'publisher {!r} of stream {!r}'.format(name, stream)
        response = await protocol.request(QueryPublisherSequence(name, stream), ctx)
        publisher_id = self._free_id(protocol.publishers, 'publishers')
        protocol.publishers[publisher_id] = publisher  # reserve the id
        declared = False
        try:
            await protocol.request(DeclarePublisher(publisher_id, name, stream), ctx)
            declared = True
        finally:
            if not declared:
                protocol.publishers.pop(publisher_id, None)
        return publisher_id, response.sequence

    async def _restore_publisher(self, protocol: StreamsProtocol, publisher: tp.Any) -> None:
        publisher_id, sequence = await self._declare(protocol, publisher)
        publisher._restore(protocol, publisher_id, sequence)

    @staticmethod
    def _free_id(used: tp.Mapping[int, object], what: str) -> int:
        for i in range(256):
            if i not in used:
                return i
        raise RbFlyError('too many {} on one connection (256)'.format(what))

    #
    # subscriptions
    #

    async def _offset_spec(
            self, protocol: StreamsProtocol, stream: str, offset: Offset,
    ) -> tuple[OffsetSpec, int]:
        t = offset.type
        if t == OffsetType.FIRST:
            return OffsetSpec.first(), 0
        if t == OffsetType.LAST:
            return OffsetSpec.last(), 0
        if t == OffsetType.NEXT:
            return OffsetSpec.next(), 0
        if t == OffsetType.OFFSET:
            value = tp.cast(int, offset.value)
            return OffsetSpec.offset(value), value
        if t == OffsetType.TIMESTAMP:
            return OffsetSpec.timestamp(int(tp.cast(float, offset.value) * 1000)), 0
        reference = tp.cast(str, offset.value)
        try:
            stored = await self._query_offset(stream, reference)
        except NoOffset:
            return OffsetSpec.first(), 0
        return OffsetSpec.offset(stored + 1), stored + 1

    async def subscribe_chunks(
            self,
            stream: str,
            *,
            offset: Offset = Offset.NEXT,
            filter: MessageFilter | None = None,
            amqp: bool = True,
            timeout: float = 0,
            name: str | None = None,
            single_active: bool = False,
            consumer_update: ConsumerUpdateCallback | None = None,
    ) -> AsyncGenerator[Chunk, None]:
        """
        Subscribe to a stream and receive its messages a chunk at a time.

        Each item is a :py:class:`~rbfly.streams.subscriber.Chunk`: a list
        of messages with their stream offset and timestamp set, plus the
        chunk's first offset and the stream's committed chunk id. The
        cheapest way to consume a stream.

        :param offset: Where to start reading.
        :param filter: Filter values (RabbitMQ 3.13+); only messages with
            these values are returned.
        :param amqp: Decode AMQP 1.0 messages; otherwise bodies are the raw
            bytes.
        :param timeout: Raise ``TimeoutError`` when no chunk arrives for
            this many seconds (0: wait forever).
        :param name: Consumer name, the group of a single active consumer.
        :param single_active: Single active consumer (RabbitMQ 3.11+): of
            the subscriptions with this ``name``, the broker sends messages
            to one at a time; when it ends, the next one becomes active and
            starts at ``offset`` (use ``Offset.reference(name)`` with
            :py:meth:`write_offset` to continue where the previous one
            stopped).
        :param consumer_update: Called with ``True`` when the broker makes
            this single active consumer active and with ``False`` when it
            makes it inactive; may return (or be a coroutine returning) the
            :py:class:`Offset` to start at instead of ``offset``.
        """
        check_name('stream', stream)
        protocol = await self._get_protocol()
        sub = await self._new_subscription(
            protocol, stream, offset, filter, amqp, name, single_active, consumer_update, None,
        )
        async for chunk in self._consume([sub], filter, timeout):
            yield chunk

    async def _new_subscription(
            self,
            protocol: StreamsProtocol,
            stream: str,
            offset: Offset,
            filter: MessageFilter | None,
            amqp: bool,
            name: str | None,
            single_active: bool,
            consumer_update: ConsumerUpdateCallback | None,
            super_stream: str | None,
    ) -> Subscription:
        """
        Check the options of a subscription against the broker and build it.
        """
        properties: dict[str, str] = {}
        if filter is not None:
            self._require(protocol, (3, 13), 'stream filtering')
            for i, value in enumerate(sorted(filter.values)):
                properties['filter.{}'.format(i)] = value
            properties['match-unfiltered'] = 'true' if filter.match_unfiltered else 'false'
        if name is not None:
            check_name('consumer', name)
            properties['name'] = name
        if single_active:
            if name is None:
                raise ValueError('a single active consumer needs a name')
            self._require(protocol, (3, 11), 'single active consumer')
            properties['single-active-consumer'] = 'true'
            if super_stream is not None:
                properties['super-stream'] = super_stream
        elif consumer_update is not None:
            raise ValueError('consumer_update is an option of a single active consumer')
        spec, start = await self._offset_spec(protocol, stream, offset)
        sub = Subscription(
            stream, spec, start, amqp, self._credit, properties, self._buffer_bytes,
        )
        if single_active:
            sub.activation = functools.partial(
                self._activation, stream, offset, consumer_update,
            )
        return sub

    async def _activation(
            self, stream: str, offset: Offset,
            consumer_update: ConsumerUpdateCallback | None, active: bool,
    ) -> OffsetSpec:
        """
        Offset a single active consumer starts at when it becomes active.
        """
        if consumer_update is not None:
            result = consumer_update(active)
            if inspect.isawaitable(result):
                result = await result
            if active and result is not None:
                if not isinstance(result, Offset):
                    raise TypeError('consumer_update must return an Offset or None,'
                                    ' got {!r}'.format(result))
                offset = result
        if not active:
            return OffsetSpec.none()
        protocol = await self._get_protocol()
        spec, _ = await self._offset_spec(protocol, stream, offset)
        return spec

    async def _consume(
            self,
            subs: list[Subscription],
            filter: MessageFilter | None,
            timeout: float,
    ) -> AsyncGenerator[Chunk, None]:
        """
        Subscribe, and yield the chunks of the subscriptions as they come
        (taking them in turn when several have chunks); unsubscribe at the
        end.
        """
        wait = timeout if timeout > 0 else None
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] | None = None

        def wake() -> None:
            if waiter is not None and not waiter.done():
                waiter.set_result(None)

        try:
            for sub in subs:
                protocol = await self._get_protocol()
                self._manager.subscriptions.add(sub)
                await self._subscribe(protocol, sub, sub.offset_spec)
                if len(subs) > 1:
                    sub.notify = wake
            if len(subs) == 1:  # the common case, without the round robin
                sub = subs[0]
                while True:
                    chunk = await sub.next_chunk(wait)
                    if filter is not None:
                        chunk[:] = post_filter(filter, chunk)
                    if chunk:
                        yield chunk
            turn = 0
            while True:
                for i in range(len(subs)):
                    taken = subs[(turn + i) % len(subs)].poll()
                    if taken is not None:
                        turn = (turn + i + 1) % len(subs)
                        chunk = taken
                        break
                else:
                    waiter = loop.create_future()
                    try:
                        async with asyncio.timeout(wait):
                            await waiter
                    finally:
                        waiter = None
                    continue
                if filter is not None:
                    chunk[:] = post_filter(filter, chunk)
                if chunk:
                    yield chunk
        finally:
            for sub in subs:
                self._manager.subscriptions.discard(sub)
                protocol = sub.protocol  # type: ignore[assignment]
                sub.detach()
                sub.notify = None
                if protocol is not None and protocol.is_open:
                    self._spawn(self._unsubscribe(
                        protocol, sub.subscription_id,
                        'subscription to stream {!r}'.format(sub.stream),
                    ))

    async def _subscribe(
            self, protocol: StreamsProtocol, sub: Subscription, spec: OffsetSpec,
    ) -> None:
        sid = self._free_id(protocol.subscriptions, 'subscriptions')
        sub.attach(protocol, sid)
        subscribed = False
        try:
            await protocol.request(
                Subscribe(sid, sub.stream, spec, sub.credit, sub.properties),
                'subscription to stream {!r}'.format(sub.stream),
            )
            subscribed = True
        finally:
            if not subscribed:
                sub.detach()

    async def _restore_subscription(self, protocol: StreamsProtocol, sub: tp.Any) -> None:
        await self._subscribe(protocol, sub, sub.resume_spec())

    def _on_metadata_update(self, update: MetadataUpdate) -> None:
        """
        The broker says a stream is not available any more (deleted, or its
        leader moved): end or restore its publishers and subscriptions.
        """
        logger.info('metadata update: stream %r, code %d', update.stream, update.code)
        self._spawn(self._stream_changed(update.stream))

    async def _stream_changed(self, stream: str) -> None:
        protocol = self._protocol
        if protocol is None or not protocol.is_open:
            return
        # a stream being deleted or electing a leader is "not available"
        # for a while: ask until it is gone or back
        code = ResponseCode.STREAM_NOT_AVAILABLE
        for _ in range(50):
            response = await protocol.request(Metadata([stream]))
            code = next((m.code for m in response.streams if m.stream == stream),
                        ResponseCode.STREAM_DOES_NOT_EXIST)
            if code != ResponseCode.STREAM_NOT_AVAILABLE:
                break
            await asyncio.sleep(0.2)
        exists = code == ResponseCode.OK
        publishers = [p for p in self._manager.publishers if p.stream == stream]
        subscriptions = [s for s in self._manager.subscriptions if s.stream == stream]
        if not exists:
            error = StreamDoesNotExist('stream {!r} was deleted'.format(stream))
            for p in publishers:
                self._manager.publishers.discard(p)
                protocol.publishers.pop(p._id, None)
                p._fail(error)
            for s in subscriptions:
                self._manager.subscriptions.discard(s)
                s.fail(error)
            return
        # the broker dropped them; declare them again (when the stream is
        # being deleted, that fails, and they end with the error)
        for p in publishers:
            protocol.publishers.pop(p._id, None)
            p.on_connection_lost(ConnectionLost('stream {!r} moved'.format(stream)))
            try:
                await self._restore_publisher(protocol, p)
            except StreamsError as ex:
                self._manager.publishers.discard(p)
                p._fail(ex)
        for s in subscriptions:
            s.detach()
            try:
                await self._restore_subscription(protocol, s)
            except StreamsError as ex:
                self._manager.subscriptions.discard(s)
                s.fail(ex)

    async def _unsubscribe(self, protocol: StreamsProtocol, sid: int, ctx: str) -> None:
        with contextlib.suppress(StreamsError):
            await protocol.request(Unsubscribe(sid), ctx)

    async def subscribe(
            self,
            stream: str,
            *,
            offset: Offset = Offset.NEXT,
            filter: MessageFilter | None = None,
            timeout: float = 0,
            amqp: bool = True,
            name: str | None = None,
            single_active: bool = False,
            consumer_update: ConsumerUpdateCallback | None = None,
    ) -> AsyncIterator[AMQPBody]:
        """
        Subscribe to a stream and iterate over its messages' bodies.

        Call :py:func:`rbfly.streams.get_message_ctx` inside the loop for
        the current message's offset, timestamp and AMQP sections.

        :param offset: Where to start reading (default: new messages only).
        :param filter: Filter values (RabbitMQ 3.13+).
        :param timeout: Raise ``TimeoutError`` when no message arrives for
            this many seconds (0: wait forever).
        :param amqp: Decode AMQP 1.0 messages; otherwise bodies are bytes.
        :param name: Consumer name (see :py:meth:`subscribe_chunks`).
        :param single_active: Single active consumer (RabbitMQ 3.11+; see
            :py:meth:`subscribe_chunks`).
        :param consumer_update: Called when the broker makes this single
            active consumer active or inactive (see
            :py:meth:`subscribe_chunks`).
        """
        chunks = self.subscribe_chunks(
            stream, offset=offset, filter=filter, amqp=amqp, timeout=timeout,
            name=name, single_active=single_active, consumer_update=consumer_update,
        )
        try:
            async for messages in chunks:
                for msg in messages:
                    set_message_ctx(msg)
                    yield msg.body
        finally:
            await chunks.aclose()

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
    ) -> AsyncGenerator[Chunk, None]:
        """
        Subscribe to every partition of a super stream and receive their
        chunks as they come (``chunk.stream`` is the partition).

        With ``single_active`` (RabbitMQ 3.11+), the subscriptions named
        ``name`` in all clients share the partitions: the broker makes one
        subscription per partition active and moves partitions as
        consumers come and go. An ``Offset.reference(name)`` offset is read
        per partition: store offsets with
        ``write_offset(chunk.stream, name, ...)``.

        The other parameters are those of :py:meth:`subscribe_chunks`.
        """
        partitions = await self.super_stream_partitions(super_stream)
        if not partitions:
            raise StreamDoesNotExist('super stream {!r} has no partitions'.format(super_stream))
        protocol = await self._get_protocol()
        subs = [
            await self._new_subscription(
                protocol, partition, offset, filter, amqp, name, single_active,
                consumer_update, super_stream,
            )
            for partition in partitions
        ]
        async for chunk in self._consume(subs, filter, timeout):
            yield chunk

    async def subscribe_super_stream(
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
    ) -> AsyncIterator[AMQPBody]:
        """
        Subscribe to every partition of a super stream and iterate over
        their messages' bodies (see :py:meth:`subscribe_super_stream_chunks`;
        messages of one partition come in order).
        """
        chunks = self.subscribe_super_stream_chunks(
            super_stream, offset=offset, filter=filter, amqp=amqp, timeout=timeout,
            name=name, single_active=single_active, consumer_update=consumer_update,
        )
        try:
            async for messages in chunks:
                for msg in messages:
                    set_message_ctx(msg)
                    yield msg.body
        finally:
            await chunks.aclose()

    #
    # offsets
    #

    async def _query_offset(self, stream: str, reference: str) -> int:
        response = await self._call(
            QueryOffset(reference, stream),
            'offset reference {!r} of stream {!r}'.format(reference, stream),
        )
        return tp.cast(int, response.offset)

    async def query_offset(self, stream: str, reference: str) -> int:
        """
        Read the offset stored under a reference name.

        :raises rbfly.streams.error.NoOffset: When nothing is stored.
        """
        check_name('stream', stream)
        check_name('offset reference', reference)
        return await self._query_offset(stream, reference)

    async def write_offset(self, stream: str, reference: str, value: int | None = None) -> None:
        """
        Store an offset under a reference name, to resume from it later
        with ``Offset.reference(reference)``.

        :param value: Offset to store; by default the offset of the message
            being processed (:py:func:`get_message_ctx`).
        """
        check_name('stream', stream)
        check_name('offset reference', reference)
        if value is None:
            value = get_message_ctx().stream_offset
        if not 0 <= value < 2 ** 64:
            raise ValueError('offset must be 0..2**64-1, got {}'.format(value))
        protocol = await self._get_protocol()
        protocol.send(StoreOffset(reference, stream, value))

def streams_client(
        uri: str,
        /,
        ssl: _ssl.SSLContext | None = None,
        **options: tp.Any,
) -> StreamsClient:
    """
    Create a RabbitMQ Streams client from a connection URI.

    :param uri: ``rabbitmq-stream://user:password@host:port/vhost`` or
        ``rabbitmq-stream+tls://...``.
    :param ssl: TLS context, for the ``rabbitmq-stream+tls`` scheme; with
        a client certificate and no user name in the URI, the client
        authenticates with SASL EXTERNAL.
    :param options: Options of :py:class:`StreamsClient`.
    """
    return StreamsClient(parse_uri(uri, ssl), **options)

__all__ = ['StreamInfo', 'StreamsClient', 'connection', 'streams_client']
