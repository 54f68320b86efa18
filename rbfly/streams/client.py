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
from .subscriptions.chunks import Chunks
from .subscriptions.decoded import Decoded
from .subscriptions.errors import STOP, OnError
from .subscriptions.handlers import DRAIN_TIMEOUT, Handler, Handlers, Key
from .subscriptions.windows import Windows
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
        self._ends = ends = Ends(options, connections, placer, counters)
        self._offsets = offsets = Offsets(connections, ends)
        recovery = Recovery(options, connections, placer, declarer, offsets, tasks)
        connections.bind(recovery)
        self._streams = Streams(connections, offsets)
        self._publishing = Publishing(options, connections, placer, declarer, recovery, counters)
        self._subscribing = Subscribing(options, connections, placer, offsets, ends, counters)
        self._super_streams = SuperStreams(connections, self._publishing, self._subscribing)
        self._groups = Groups(connections, offsets, self._streams, self._super_streams, ends)
        self._consuming = Consuming(offsets, self._subscribing, self._super_streams, counters)
        # the sections of the facade: their methods are the client's (Forwarded)
        self._observing = Observing(connections, counters)
        self._administration = Administration(self._streams, ends, self._super_streams)
        self._stored_offsets = StoredOffsets(offsets, self._groups)

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

    def subscribe_windows(
            self, stream: str, *, max_messages: int = 1000, max_wait: float | None = 0.1,
            serializer: Serializer | Codec | None = None, on_mismatch: OnMismatch = 'raise',
            **options: tp.Unpack[SubscribeArgs],
    ) -> Windows:
        """
        Subscribe to a stream and iterate over windows of its messages,
        for bulk sinks: lists of at most ``max_messages`` messages
        (:py:class:`~rbfly.amqp.MessageCtx`, with offsets), each as soon as
        it is full, or with what arrived within ``max_wait`` seconds
        (``None``: until full); small chunks are merged, big ones split.
        ``await windows.getmany(max_messages, max_wait)`` takes a window
        of other bounds (possibly empty, as Kafka's ``getmany``).

        A window counts as processed when the next one is asked for, or
        the iteration ends: automatic offset tracking (``store_every``)
        stores, and a single active consumer hands a stream over, after
        the last window processed (see
        :py:mod:`rbfly.streams.subscriptions.windows`). A window whose
        processing raises out of ``async with`` is not processed.

        :param serializer: Windows of objects: each message's body is
            replaced by its deserialized object, once its content type is
            checked (as :py:meth:`subscribe` with a serializer; see
            :doc:`/serializers`); the messages keep their offsets.
        :param on_mismatch: With a serializer: ``'raise'``
            :py:class:`~rbfly.streams.serializers.ContentTypeMismatch` for
            a message of another content type (from ``getmany``, with the
            window: not processed when it leaves ``async with``), or keep
            its ``'raw'`` body.

        The other parameters (``on_decode_error`` too) are those of
        :py:meth:`subscribe_chunks`.
        """
        return self._consuming.windows(
            'subscribe_windows', stream, False, max_messages, max_wait, serializer,
            on_mismatch, options)

    def subscribe_chunks(
            self, stream: str, **options: tp.Unpack[SubscribeArgs],
    ) -> Chunks:
        """
        Subscribe to a stream and receive its messages a chunk at a time:
        each item is a :py:class:`~rbfly.streams.subscriptions.subscription.Chunk`, a list
        of messages with their offset and timestamp set (the cheapest way
        to consume a stream).

        The options (keyword arguments, typed as
        :py:class:`~rbfly.streams.consuming.SubscribeArgs`) are those of
        every subscribe method; one not given has the default said here
        (none, for a callback or a flow strategy).

        :param offset: Where to start reading (default ``Offset.NEXT``).
        :param filter: Filter values (RabbitMQ 3.13+); only messages with
            these values are returned (default: every message).
        :param amqp: Decode AMQP 1.0 messages (the default); otherwise
            bodies are bytes.
        :param on_decode_error: With ``amqp``, what to do with a message
            that is not AMQP 1.0 (published as raw bytes, or by a client
            of another format): ``'raise'``
            :py:class:`~rbfly.error.MessageDecodeError` (naming the stream
            and the message's offset) and end the subscription (the
            default), ``'skip'``
            it, or hand out its bytes as the body (``'raw'``); skipped and
            raw messages are logged (a warning per chunk), and count as
            processed for offset tracking as any other.
        :param on_gap: When retention removed offsets the subscription
            was to read (RabbitMQ 3.11+): it was to start at an offset
            older than the stream's first (a stored offset, or an offset
            given, of messages retention removed since), to resume at one
            after a lost connection, or retention overtook it while it
            read: ``'warn'`` and go on (the default; counted in the
            ``messages_lost`` metric), ``'raise'``
            :py:class:`~rbfly.streams.error.OffsetOutOfRange` (at the
            next message or chunk asked for, when overtaken), or a
            function called with that error (it goes on unless the
            function raises).
        :param timeout: Raise ``TimeoutError`` when no chunk arrives for
            this many seconds (0, the default: wait forever).
        :param processing_timeout: Seconds the application may hold a
            message (a window, a chunk, handlers in flight) without moving
            on (default ``None``: no limit; Kafka's
            ``max.poll.interval.ms``): after them the subscription commits
            what was processed and ends, so that another member of its group
            takes over, and the iteration raises
            :py:class:`~rbfly.streams.error.ProcessingStuck` at its next step.
        :param name: Consumer name, the group of a single active consumer
            (default: none).
        :param single_active: Single active consumer (RabbitMQ 3.11+; off
            by default): of
            the subscriptions named ``name`` (a consumer group), the broker
            sends to one at a time; the one it activates starts after the
            offset stored under ``name``, or at ``offset`` when none is
            stored. With automatic tracking, a hand-off is exact: the
            consumer stepping down commits the offset of the last message
            processed before the next one starts (see
            :py:mod:`rbfly.streams.subscriptions.handoff`).
        :param consumer_update: Called with a
            :py:class:`~rbfly.streams.subscriptions.handoff.ConsumerUpdateContext`
            (the stream or partition, the name, whether active, the stored
            offset; true when active) when the broker makes this single
            active consumer active or inactive; may return (or be a
            coroutine returning) the :py:class:`Offset` to start at
            instead of the context's ``offset``.
        :param store_every: Automatic offset tracking: store the offset of
            the last processed chunk under ``name`` once this many messages
            are processed (0, the default: off), ``store_interval`` seconds after the
            last chunk, and at the end (see :py:mod:`rbfly.streams.subscriptions.tracking`).
        :param store_interval: Seconds after which a processed chunk's
            offset is stored anyway (default 5).
        :param credit: Chunks the broker may send ahead (default: the client's).
        :param buffer_bytes: Bytes of chunks it may hold (default: the client's).
        :param resume: Called with the stream and the :py:class:`Offset`
            the subscription would resume from (after the last chunk
            received; chunks received are handed out meanwhile) before it
            subscribes again after a lost connection or a moved member; may
            return (or be a coroutine returning) another one (chunks not
            handed out are then dropped). Its exception ends it.
        :param on_state: Called with a
            :py:class:`~rbfly.streams.StateChange` at each change of the
            subscription's state (opening, open, recovering, closed, each
            with its reason; see :py:mod:`rbfly.streams.lifecycle`).
        :param flow: A flow strategy counting chunks instead of bytes:
            :py:class:`~rbfly.streams.CreditOnTake`,
            :py:class:`~rbfly.streams.CreditWhenProcessed` or
            :py:class:`~rbfly.streams.ManualCredit` (see
            :py:mod:`rbfly.streams.subscriptions.flow`); it replaces ``credit`` and
            ``buffer_bytes``.
        :param stop_at_end: Read up to the end of the stream as it is at
            the call (its last chunk of messages; RabbitMQ 4.3+, which
            resolves offset specifications) and stop: a bounded replay.
            Nothing to read (an empty stream, ``Offset.NEXT``) ends the
            iteration at once. Not with a ``filter`` (the broker may skip
            the last chunk). Off by default.
        """
        return self._consuming.chunks('subscribe_chunks', stream, False, options)

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

    def subscribe_super_stream_windows(
            self, super_stream: str, *, max_messages: int = 1000, max_wait: float | None = 0.1,
            serializer: Serializer | Codec | None = None, on_mismatch: OnMismatch = 'raise',
            **options: tp.Unpack[SubscribeArgs],
    ) -> Windows:
        """
        Subscribe to every partition of a super stream and iterate over
        windows of their messages (see :py:meth:`subscribe_windows`; a
        window may hold messages of several partitions, those of one
        partition in order; ``serializer``, ``on_mismatch`` and
        ``on_decode_error`` as there).
        """
        return self._consuming.windows(
            'subscribe_super_stream_windows', super_stream, True, max_messages, max_wait,
            serializer, on_mismatch, options)

    def subscribe_super_stream_chunks(
            self, super_stream: str, **options: tp.Unpack[SubscribeArgs],
    ) -> Chunks:
        """
        Subscribe to every partition of a super stream and receive their
        chunks as they come (``chunk.stream`` is the partition).

        With ``single_active`` (RabbitMQ 3.11+), the subscriptions named
        ``name`` in all clients share the partitions, one active per
        partition (a consumer group): a member activated on a partition
        starts after the offset stored under ``name`` for it; automatic
        tracking stores per partition, and commits on each hand-off (store
        offsets yourself with ``commit_offset(chunk.stream, name, ...)``).

        The other parameters are those of :py:meth:`subscribe_chunks`
        (``resume`` is called with the partition).
        """
        return self._consuming.chunks(
            'subscribe_super_stream_chunks', super_stream, True, options)

    async def process(
            self, stream: str, handler: Handler, *, concurrency: int = 32,
            key: Key | None = None, drain_timeout: float = DRAIN_TIMEOUT,
            on_error: OnError = STOP, **options: tp.Unpack[SubscribeArgs],
    ) -> int:
        """
        Run an async handler over the messages of a stream, with up to
        ``concurrency`` messages in flight, and return the count handled
        when the subscription ends (``stop_at_end``), or raise the first
        error of a handler once those in flight are done. Cancelled, it
        drains the handlers in flight (``drain_timeout`` seconds), commits
        and unsubscribes.

        With automatic tracking (``name``, ``store_every``), the offset
        stored is the one before the lowest message of the stream not
        done yet: nothing is committed before it is handled, whatever the
        order handlers finish in (see
        :py:mod:`rbfly.streams.subscriptions.handlers`).

        :param handler: An async function of a
            :py:class:`~rbfly.amqp.MessageCtx` (body, sections, stream,
            offset).
        :param concurrency: Messages in flight at most (1..65535).
        :param key: A function of a message: messages of a key are
            handled one after the other, in stream order (``None``: any
            order).
        :param drain_timeout: Seconds the end waits for the handlers in
            flight.
        :param on_error: What a handler's error does: retries with a
            backoff, then stop (the default), skip the message, or publish
            it to a dead-letter stream exactly once (needs ``name``; see
            :py:class:`~rbfly.streams.subscriptions.errors.OnError`).

        The other parameters are those of :py:meth:`subscribe_chunks`.
        """
        return await self._consuming.handlers(
            'process', stream, False, handler, concurrency, key, drain_timeout, on_error,
            self._dead_letter_publisher, options,
        ).run()

    async def process_super_stream(
            self, super_stream: str, handler: Handler, *, concurrency: int = 32,
            key: Key | None = None, drain_timeout: float = DRAIN_TIMEOUT,
            on_error: OnError = STOP, **options: tp.Unpack[SubscribeArgs],
    ) -> int:
        """
        Run an async handler over the messages of every partition of a
        super stream (see :py:meth:`process`); with ``single_active``, as
        a member of a consumer group: a hand-off waits for the messages in
        flight of the partition it moves.
        """
        return await self._consuming.handlers(
            'process_super_stream', super_stream, True, handler, concurrency, key,
            drain_timeout, on_error, self._dead_letter_publisher, options,
        ).run()

    def processor(
            self, stream: str, handler: Handler, *, concurrency: int = 32,
            key: Key | None = None, drain_timeout: float = DRAIN_TIMEOUT,
            on_error: OnError = STOP, **options: tp.Unpack[SubscribeArgs],
    ) -> Handlers:
        """
        A run of concurrent handlers over a stream, as :py:meth:`process`
        runs it, not started: ``await processor.run()`` runs it; meanwhile
        its ``pause(*streams)``, ``resume(*streams)``, ``paused()`` and
        ``await seek(stream, offset)`` pause the stream or move it (see
        :py:class:`~rbfly.streams.subscriptions.handlers.Handlers`).
        """
        return self._consuming.handlers(
            'processor', stream, False, handler, concurrency, key, drain_timeout, on_error,
            self._dead_letter_publisher, options,
        )

    def super_stream_processor(
            self, super_stream: str, handler: Handler, *, concurrency: int = 32,
            key: Key | None = None, drain_timeout: float = DRAIN_TIMEOUT,
            on_error: OnError = STOP, **options: tp.Unpack[SubscribeArgs],
    ) -> Handlers:
        """
        A run of concurrent handlers over every partition of a super
        stream, as :py:meth:`process_super_stream` runs it, not started
        (see :py:meth:`processor`): a partition can be paused or moved
        while the others go on.
        """
        return self._consuming.handlers(
            'super_stream_processor', super_stream, True, handler, concurrency, key,
            drain_timeout, on_error, self._dead_letter_publisher, options,
        )

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
