"""
The user API: :py:func:`streams_client` creates a :py:class:`StreamsClient`
that connects lazily, on its first call::

    client = streams_client('rabbitmq-stream://guest:guest@localhost')

    async with client:
        await client.create_stream('orders')
        async with client.publisher('orders') as publisher:
            await publisher.send('hello')
        async for message in client.subscribe('orders', offset=Offset.FIRST):
            print(message, get_message_ctx().stream_offset)

:py:class:`StreamsClient` is a facade: its constructor checks the options
and wires the parts of :py:mod:`rbfly.streams.parts`; its methods hand over.
Most of them are methods of its sections, by concern
(:py:mod:`rbfly.streams.facade`: observing, administration, stored offsets,
reading, processing), each given the parts it uses; the client exposes
them as its own (:py:class:`~rbfly.streams.facade.forward.Forwarded`). It
spells out the rest: its construction; its connection (``disconnect``,
``async with``, ``server_properties``, ``update_secret``); its publishers
(``super_stream_publisher``, ``query_publisher_sequence``); and the
methods typed by overloads, which a forwarded method cannot carry
(``publisher``, ``subscribe``, ``subscribe_super_stream``).
"""

from __future__ import annotations

import contextlib
import ssl as _ssl
import typing as tp

from .backoff import Backoff
from .consuming import Consuming, SubscribeArgs
from .decorator import connection
from .facade.administration import Administration
from .facade.forward import Forwarded
from .facade.observing import Observing
from .facade.offsets import StoredOffsets
from .facade.processing import Processing
from .facade.reading import Reading
from .metrics import Counters
from .names import check_name
from .oauth2 import DEFAULT_REFRESH_RATIO, TokenProvider
from .parts.connections import Connections
from .parts.connector import Connector
from .parts.credentials import Credentials
from .parts.declare import Declarer
from .parts.ends import Ends
from .parts.groups import Groups
from .parts.offsets import Offsets
from .parts.options import (
    DEFAULT_BACKOFF,
    DEFAULT_BUFFER_BYTES,
    DEFAULT_CREDIT,
    DEFAULT_READ_PAUSE,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_SPIN,
    ClientOptionArgs,
    ClientOptions,
    OnConnection,
    Resolver,
    check_option_names,
)
from .parts.placer import Placer
from .parts.publishing import Publishing
from .parts.recovery import Recovery
from .parts.streams import Streams
from .parts.subscribing import ConsumerUpdateCallback, ResumeCallback, Subscribing
from .parts.superstreams import SuperStreams
from .parts.tasks import Background
from .protocol._chunk import DEFAULT_MAX_CHUNK_UNCOMPRESSED
from .protocol.constants import DEFAULT_FRAME_MAX, DEFAULT_HEARTBEAT
from .publishers.awaited import Publisher, PublisherTrait
from .publishers.options import PUBLISHER_NAMES, BasicPublisherArgs, PublisherArgs, check_names
from .publishers.superstream import RoutingKey, RoutingStrategy, SuperStreamPublisher
from .serializers import Codec, OnMismatch, Serializer
from .subscriptions._bodies import Bodies
from .subscriptions.decoded import Decoded
from .types import StreamInfo
from .url import ConnectionInfo, parse_uri

T = tp.TypeVar('T', bound=PublisherTrait)

class StreamsClient:
    """
    RabbitMQ Streams client.

    A client holds one connection to the broker, opened on the first call
    that needs it. When the connection is lost, the client reconnects,
    declares its publishers again (sending their unconfirmed messages
    again) and subscribes again from the next offset.

    :param connection_info: Where and how to connect: a broker, or the
        nodes of a cluster, tried in turn.

    The other parameters are the client's options, each described in
    :py:class:`~rbfly.streams.ClientOptions`, where they are
    checked (out of range: ``ValueError``; of the wrong type: ``TypeError``).
    """
    def __init__(
            self,
            connection_info: ConnectionInfo | tp.Sequence[ConnectionInfo],
            *,
            frame_max: int = DEFAULT_FRAME_MAX,
            heartbeat: int = DEFAULT_HEARTBEAT,
            credit: int = DEFAULT_CREDIT,
            buffer_bytes: int = DEFAULT_BUFFER_BYTES,
            spin: float = DEFAULT_SPIN,
            read_pause: float = DEFAULT_READ_PAUSE,
            connect_timeout: float = 30,
            request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
            connection_name: str | None = None,
            client_properties: tp.Mapping[str, str] | None = None,
            receive_buffer: int | None = None,
            send_buffer: int | None = None,
            publishers_per_connection: int = 256,
            subscriptions_per_connection: int = 256,
            on_connection: OnConnection | None = None,
            address_resolver: Resolver | None = None,
            sasl_mechanism: str | None = None,
            crc_check: bool = True,
            crc_failure: tp.Literal['fail', 'skip'] = 'fail',
            max_chunk_uncompressed: int = DEFAULT_MAX_CHUNK_UNCOMPRESSED,
            oauth2: TokenProvider | None = None,
            token_refresh: float = DEFAULT_REFRESH_RATIO,
            replicas_only: bool = False,
            publishers_on_leader: bool = False,
            reconnect: Backoff = DEFAULT_BACKOFF,
    ) -> None:
        self._options = options = ClientOptions(
            frame_max=frame_max, heartbeat=heartbeat, credit=credit,
            buffer_bytes=buffer_bytes, spin=spin, read_pause=read_pause,
            connect_timeout=connect_timeout,
            request_timeout=request_timeout, connection_name=connection_name,
            client_properties=client_properties, receive_buffer=receive_buffer,
            send_buffer=send_buffer,
            publishers_per_connection=publishers_per_connection,
            subscriptions_per_connection=subscriptions_per_connection,
            on_connection=on_connection, address_resolver=address_resolver,
            sasl_mechanism=sasl_mechanism, crc_check=crc_check, crc_failure=crc_failure,
            max_chunk_uncompressed=max_chunk_uncompressed, oauth2=oauth2,
            token_refresh=token_refresh, replicas_only=replicas_only,
            publishers_on_leader=publishers_on_leader, reconnect=reconnect,
        )
        if isinstance(connection_info, ConnectionInfo):
            connection_info = [connection_info]
        self._counters = counters = Counters()
        self._tasks = tasks = Background()
        self._credentials = Credentials(
            connection_info, sasl_mechanism, oauth2, token_refresh, tasks,
            lambda: self._connections.open_protocols(),  # noqa: PLW0108 - set below
        )
        connector = self._connector = Connector(options, self._credentials, counters)
        self._connections = connections = Connections(options, connector, counters, tasks)
        declarer = Declarer(tasks)
        placer = Placer(options, connections, declarer)
        ends = Ends(options, connections, placer, counters)
        offsets = Offsets(connections, ends)
        recovery = Recovery(options, connections, placer, declarer, offsets, tasks)
        connections.bind(recovery)
        streams = Streams(connections, offsets)
        self._publishing = publishing = Publishing(
            options, connections, placer, declarer, recovery, counters)
        subscribing = Subscribing(
            options, connections, placer, offsets, ends, counters, recovery.resubscribe_stalled,
        )
        self._super_streams = super_streams = SuperStreams(connections, publishing, subscribing)
        groups = Groups(connections, offsets, streams, super_streams, ends)
        self._consuming = consuming = Consuming(offsets, subscribing, super_streams, counters)
        # the sections of the facade: their methods are the client's (Forwarded)
        self._observing = Observing(connections, counters)
        self._administration = Administration(streams, ends, super_streams)
        self._stored_offsets = StoredOffsets(offsets, groups)
        self._reading = Reading(consuming)
        self._processing = Processing(consuming, self._dead_letter_publisher)

    def __repr__(self) -> str:
        return '{}({})'.format(type(self).__name__, ', '.join(map(str, self._credentials.infos)))

    # -- connection --

    async def disconnect(self) -> None:
        """Close the client's connections (it connects again on its next call)."""
        for _ in range(2):  # again for what the awaited tasks started meanwhile
            await self._tasks.cancel()  # placing anew, token renewal
            await self._connections.close_nodes()
            await self._tasks.wait()
        await self._connections.own.close()

    async def __aenter__(self) -> tp.Self:
        self._connector.closed = False
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """
        Close the client for good: used after the block, it raises
        :py:class:`~rbfly.streams.error.ClientClosed` instead of
        connecting again (a connection nobody closes would leak its
        socket); entering it again opens it.
        """
        self._connector.closed = True
        await self.disconnect()

    @property
    def server_properties(self) -> dict[str, str]:
        """Peer properties of the broker connected to (empty while not connected)."""
        protocol = self._connections.protocol
        return dict(protocol.server_properties) if protocol is not None else {}

    async def update_secret(self, secret: str) -> None:
        """
        Replace the password (or OAuth 2 token) of the client's user on its
        open connections, and for those it opens later (RabbitMQ 3.13+),
        without disturbing publishers and subscriptions: call it before a
        token expires (the broker closes the connections of an expired one).

        :raises AuthenticationFailure: When the broker refuses the secret;
            the client keeps the old one.
        :raises FeatureNotSupported: On an older broker, or when the
            client authenticates with a TLS certificate (SASL EXTERNAL:
            it has no secret).
        """
        await self._credentials.update_secret(secret, self._connections.get)

    # -- what the client tells of itself --

    metrics = Forwarded('_observing', Observing.metrics)
    stream_metrics = Forwarded('_observing', Observing.stream_metrics)
    subscription_states = Forwarded('_observing', Observing.subscription_states)
    health = Forwarded('_observing', Observing.health)
    add_latency_listener = Forwarded('_observing', Observing.add_latency_listener)

    # -- streams --

    create_stream = Forwarded('_administration', Administration.create_stream)
    delete_stream = Forwarded('_administration', Administration.delete_stream)
    stream_exists = Forwarded('_administration', Administration.stream_exists)
    stream_metadata = Forwarded('_administration', Administration.stream_metadata)
    stream_stats = Forwarded('_administration', Administration.stream_stats)
    resolve_offset = Forwarded('_administration', Administration.resolve_offset)
    end_offset = Forwarded('_administration', Administration.end_offset)

    # -- publishers --

    @tp.overload
    def publisher(
            self, stream: str, **options: tp.Unpack[BasicPublisherArgs],
    ) -> contextlib.AbstractAsyncContextManager[Publisher]: ...

    @tp.overload
    def publisher(
            self, stream: str, *, cls: type[T], **options: tp.Unpack[PublisherArgs],
    ) -> contextlib.AbstractAsyncContextManager[T]: ...

    def publisher(
            self, stream: str, *, cls: type[PublisherTrait] = Publisher,
            **options: tp.Unpack[PublisherArgs],
    ) -> contextlib.AbstractAsyncContextManager[PublisherTrait]:
        """
        Create a publisher for a stream (an async context manager).

        The options (keyword arguments, typed as
        :py:class:`~rbfly.streams.publishers.options.PublisherArgs`; a
        misspelt one raises ``TypeError`` naming the closest) are those of
        every publisher method; one not given has the default said here.

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
        :param window_bytes: Bytes of message bodies a
            :py:class:`PublisherPipelined` lets wait for confirmation
            (2 MiB unless given): with big messages, this bound, not
            ``window``, keeps memory bounded (and what is sent hot in the
            processor's caches). A publisher sends at most this much per
            round trip to the broker: raise it for a distant broker.
        :param sub_entry_size: Batch publishers only: send the messages of
            a flush as sub-entry batches of this many messages (see
            :py:class:`~rbfly.streams.SubEntryBatch`, any publisher's).
        :param compression: Compression of the sub-entry batches:
            ``'none'``, ``'gzip'`` or a registered codec.
        :param confirm_timeout: Seconds after which a message not
            confirmed yet fails with
            :py:class:`~rbfly.streams.ConfirmTimeout` (its ``send``,
            ``flush`` or listeners get it) and is not sent again, also
            across reconnections (default: it waits until confirmed).
        :param dedup: ``False`` declares an anonymous publisher (no name):
            the broker does not track its publishing ids, which costs it
            less (see the performance report), but messages sent again
            after a lost connection may then be stored twice. Nothing is
            lost either way. A named publisher always deduplicates.
        :param enqueue_timeout: :py:class:`PublisherPipelined` only:
            seconds ``send`` may wait for room in the window before it
            raises :py:class:`~rbfly.streams.error.EnqueueTimeout` (default:
            it waits as long as it takes).
        :param linger: :py:class:`PublisherPipelined` only: seconds a
            message may wait for more to fill a Publish frame (default 0:
            until the next iteration of the event loop). Fewer, fuller
            frames for an application sending a message now and then, at
            the cost of that much latency.
        :param retry_on_recovery: ``False``: messages not confirmed when
            the connection was lost (or the stream moved) fail with
            :py:class:`~rbfly.streams.error.NotRetried` instead of being
            sent again (a named publisher first learns which ones the
            broker stored: those are confirmed).
        :param on_state: Called with a
            :py:class:`~rbfly.streams.StateChange` at each change of the
            publisher's state (opening, open, recovering, closed, each with
            its reason; see :py:mod:`rbfly.streams.lifecycle`).
        :param serializer: Send objects: each is serialized (e.g.
            :py:class:`~rbfly.streams.serializers.JSONSerializer`, or any
            object with ``dumps`` and ``loads``) and its content type set
            in its AMQP properties (see :doc:`/serializers`; AMQP
            publishers only).
        """
        return self._publishing.create('StreamsClient.publisher', stream, cls, options)

    async def query_publisher_sequence(self, stream: str, name: str) -> int:
        """
        The last publishing id a stream stored for a named publisher (0 when
        none), without declaring a publisher: where a deduplicating
        publisher of that name would continue.
        """
        check_name('stream', stream)
        check_name('publisher', name)
        return await self._publishing.query_sequence(stream, name=name)

    # -- subscriptions --

    @tp.overload
    def subscribe(
            self, stream: str, *, serializer: None = None, on_mismatch: OnMismatch = 'raise',
            **options: tp.Unpack[SubscribeArgs],
    ) -> Bodies: ...

    @tp.overload
    def subscribe(
            self, stream: str, *, serializer: Serializer | Codec,
            on_mismatch: OnMismatch = 'raise', **options: tp.Unpack[SubscribeArgs],
    ) -> Decoded: ...

    def subscribe(
            self, stream: str, *, serializer: Serializer | Codec | None = None,
            on_mismatch: OnMismatch = 'raise', **options: tp.Unpack[SubscribeArgs],
    ) -> Bodies | Decoded:
        """
        Subscribe to a stream and iterate over its messages' bodies.

        Call :py:func:`rbfly.streams.get_message_ctx` inside the loop for
        the current message's offset, timestamp and AMQP sections. The
        parameters are those of :py:meth:`subscribe_chunks`, but automatic
        offset tracking (``store_every``, ``store_interval``) counts and
        stores single messages: a message is processed when the next one
        is asked for (see :py:mod:`rbfly.streams.subscriptions.tracking`).

        The iterator is an async generator, and also commits on demand
        (:py:meth:`~rbfly.streams.subscriptions._bodies.Bodies.commit`).

        :param serializer: Iterate over objects: each message's body is
            deserialized, once its content type is checked (see
            :doc:`/serializers`); the iterator is then a
            :py:class:`~rbfly.streams.subscriptions.decoded.Decoded`.
        :param on_mismatch: With a serializer: ``'raise'``
            :py:class:`~rbfly.streams.serializers.ContentTypeMismatch` for
            a message of another content type, or hand over its ``'raw'``
            body.
        """
        return self._consuming.bodies(
            'subscribe', stream, False, serializer, on_mismatch, options)

    subscribe_windows = Forwarded('_reading', Reading.subscribe_windows)
    subscribe_chunks = Forwarded('_reading', Reading.subscribe_chunks)

    # -- offsets --

    query_offset = Forwarded('_stored_offsets', StoredOffsets.query_offset)
    write_offset = Forwarded('_stored_offsets', StoredOffsets.write_offset)
    commit_offset = Forwarded('_stored_offsets', StoredOffsets.commit_offset)

    # -- consumer groups --

    group_status = Forwarded('_stored_offsets', StoredOffsets.group_status)
    reset_group = Forwarded('_stored_offsets', StoredOffsets.reset_group)

    # -- super streams --

    create_super_stream = Forwarded('_administration', Administration.create_super_stream)
    delete_super_stream = Forwarded('_administration', Administration.delete_super_stream)
    super_stream_exists = Forwarded('_administration', Administration.super_stream_exists)
    super_stream_partitions = Forwarded('_administration', Administration.super_stream_partitions)
    route = Forwarded('_administration', Administration.route)

    def super_stream_publisher(
            self, super_stream: str, routing_key: RoutingKey, *,
            routing: tp.Literal['hash', 'key'] | RoutingStrategy = 'hash',
            cls: type[PublisherTrait] = Publisher, **options: tp.Unpack[PublisherArgs],
    ) -> contextlib.AbstractAsyncContextManager[SuperStreamPublisher]:
        """
        Create a publisher of a super stream (an async context manager):
        a publisher of class ``cls`` per partition, and each message sent
        to the partition of its routing key.

        :param routing_key: Function returning a message's routing key.
        :param routing: ``hash`` (MurmurHash3 of the key, as the other
            clients), ``key`` (the broker's bindings decide; a key bound to
            several partitions sends to each), or a routing strategy: a
            function of the message and the partitions returning those it
            goes to (:py:data:`rbfly.streams.publishers.superstream.RoutingStrategy`).
        :param name: Publisher name, for deduplication; the publishers of
            all partitions use it (sequences are kept per stream).
        :param options: Other options of :py:meth:`publisher` (typed as
            :py:class:`~rbfly.streams.publishers.options.PublisherArgs`;
            a misspelt one raises ``TypeError`` here, naming the closest).
        """
        check_names('StreamsClient.super_stream_publisher', options, PUBLISHER_NAMES)
        return self._super_streams.publisher(super_stream, routing_key, routing, cls, options)

    @tp.overload
    def subscribe_super_stream(
            self, super_stream: str, *, serializer: None = None,
            on_mismatch: OnMismatch = 'raise', **options: tp.Unpack[SubscribeArgs],
    ) -> Bodies: ...

    @tp.overload
    def subscribe_super_stream(
            self, super_stream: str, *, serializer: Serializer | Codec,
            on_mismatch: OnMismatch = 'raise', **options: tp.Unpack[SubscribeArgs],
    ) -> Decoded: ...

    def subscribe_super_stream(
            self, super_stream: str, *, serializer: Serializer | Codec | None = None,
            on_mismatch: OnMismatch = 'raise', **options: tp.Unpack[SubscribeArgs],
    ) -> Bodies | Decoded:
        """
        Subscribe to every partition of a super stream and iterate over
        their messages' bodies (see :py:meth:`subscribe_super_stream_chunks`;
        messages of one partition come in order; ``serializer`` and
        ``on_mismatch`` as for :py:meth:`subscribe`).
        """
        return self._consuming.bodies(
            'subscribe_super_stream', super_stream, True, serializer, on_mismatch, options)

    subscribe_super_stream_windows = Forwarded('_reading', Reading.subscribe_super_stream_windows)
    subscribe_super_stream_chunks = Forwarded('_reading', Reading.subscribe_super_stream_chunks)

    # -- processing --

    process = Forwarded('_processing', Processing.process)
    process_super_stream = Forwarded('_processing', Processing.process_super_stream)
    processor = Forwarded('_processing', Processing.processor)
    super_stream_processor = Forwarded('_processing', Processing.super_stream_processor)

    def _dead_letter_publisher(self, stream: str, name: str) -> tp.AsyncContextManager[Publisher]:
        """A named publisher of dead letters, awaiting each confirmation."""
        return self.publisher(stream, name=name, cls=Publisher)

def streams_client(
        uri: str | tp.Sequence[str], /, ssl: _ssl.SSLContext | None = None,
        **options: tp.Unpack[ClientOptionArgs],
) -> StreamsClient:
    """
    Create a RabbitMQ Streams client from a connection URI.

    :param uri: ``rabbitmq-stream://user:password@host:port/vhost`` or
        ``rabbitmq-stream+tls://...``; or a list of them, the nodes of a
        cluster: the client connects to the first it reaches, and after
        losing its connection tries the next node first.
    :param ssl: TLS context, for the ``rabbitmq-stream+tls`` scheme; with
        a client certificate and no user name in the URI, the client
        authenticates with SASL EXTERNAL.
    :param options: Options of :py:class:`StreamsClient` (typed, as the
        ``TypedDict`` ``ClientOptionArgs`` of
        ``rbfly.streams.parts.options``).
    :raises TypeError: For an unknown option, naming the closest one.
    """
    check_option_names(options, 'streams_client')
    if isinstance(uri, str):
        return StreamsClient(parse_uri(uri, ssl), **options)
    if not isinstance(uri, tp.Sequence) or not all(isinstance(u, str) for u in uri):
        raise TypeError('uri must be a str or a sequence of str, got {!r}'.format(
            type(uri).__name__,
        ))
    return StreamsClient([parse_uri(u, ssl) for u in uri], **options)

__all__ = [
    'ConnectionInfo', 'ConsumerUpdateCallback', 'ResumeCallback', 'StreamInfo', 'StreamsClient',
    'connection', 'streams_client',
]
