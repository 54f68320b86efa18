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
import dataclasses as dtc
import logging
import ssl as _ssl
import typing as tp

from ._client_base import (
    DEFAULT_BACKOFF,
    DEFAULT_BUFFER_BYTES,
    DEFAULT_CREDIT,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_SPIN,
)
from ._subscribing import ConsumerUpdateCallback, ResumeCallback, filter_properties
from ._super_streams import SuperStreamsMixin
from .aio.protocol import StreamsProtocol
from .error import (
    ConnectionLost,
    FeatureNotSupported,
    StreamAlreadyExists,
    StreamDoesNotExist,
    StreamNotAvailable,
    StreamsError,
    error_for_code,
)
from .metrics import Metrics
from .offset import Offset
from .protocol.commands import (
    Create,
    Delete,
    Metadata,
    MetadataUpdate,
    ResolveOffsetSpec,
    SaslAuthenticate,
    StreamStats,
)
from .protocol.connection import sasl_plain
from .protocol.constants import ResponseCode
from .types import MessageFilter
from .url import parse_uri
from .util import StreamInfo, check_name, connection

logger = logging.getLogger(__name__)

STREAM_RECOVERY_TIMEOUT = 120.0
"""Seconds a stream may stay without a leader before its publishers and
subscriptions end with an error."""

class StreamsClient(SuperStreamsMixin):
    """
    RabbitMQ Streams client.

    A client holds one connection to the broker, opened on the first call
    that needs it. When the connection is lost, the client reconnects,
    declares its publishers again (sending their unconfirmed messages
    again) and subscribes again from the next offset.

    :param connection_info: Where and how to connect: a broker, or the
        nodes of a cluster, tried in turn.
    :param frame_max: Largest frame to accept (the broker may lower it).
    :param heartbeat: Heartbeat interval asked for, in seconds.
    :param credit: Chunks a subscription lets the broker send ahead at
        the start, and at least.
    :param buffer_bytes: Bytes of chunks a subscription may hold, buffered
        or on their way (it sets how many chunks the broker may send
        ahead, as chunk sizes vary from bytes to megabytes).
    :param spin: Seconds a subscription whose chunks come in quick
        succession keeps polling for the next chunk before its task sleeps,
        and a publisher awaiting a confirmation right after its last one
        polls for it (0: never). Waking a sleeping task costs more than a
        chunk's worth of time when reading a stream of small chunks, and
        most of a confirmation's round trip; a consumer at the live end of
        a quiet stream, or a publisher sending now and then, never spins.
    :param connect_timeout: Seconds to wait for a connection and handshake.
    :param request_timeout: Seconds to wait for the broker's response to a
        request (creating a stream, a query, declaring a publisher,
        subscribing; ``None``: no limit), then
        :py:class:`~rbfly.streams.RequestTimeout`. A dead connection is
        found by heartbeats; this bounds a broker that is alive but does
        not answer.
    :param connection_name: Name of the client's connections, shown by the
        broker (management UI, ``rabbitmqctl list_stream_connections``).
    :param publishers_per_connection: Publishers one connection holds
        (1..256, the protocol's limit); the client opens another
        connection to the broker for more.
    :param subscriptions_per_connection: Subscriptions one connection
        holds (1..256); as for publishers.
    :param on_connection: Called with a
        :py:class:`~rbfly.streams.ConnectionEvent` when a connection opens,
        is lost, recovers, is given up or is closed (see
        :py:mod:`rbfly.streams.events`).
    :param address_resolver: Where to connect to reach a node of a cluster
        the broker names (its advertised host and port), e.g. a load
        balancer in front of the cluster, or the address of a container's
        published port: ``resolver(host, port) -> (host, port)``. With a
        resolver, a connection meant for a node is opened again until it
        reaches that node (a load balancer picks any), up to
        ``NODE_ATTEMPTS`` times.
    :param sasl_mechanism: ``PLAIN`` (user and password of the URI),
        ``EXTERNAL`` (TLS client certificate) or ``ANONYMOUS`` (RabbitMQ
        4.0+, logged in as the broker's ``anonymous_login_user``); default:
        ``EXTERNAL`` with a TLS context and no user in the URI, else
        ``PLAIN``.
    :param crc_check: Verify the CRC32 of every chunk received (a
        mismatch ends the subscription with
        :py:class:`~rbfly.error.ChunkError`); ``False`` trusts the
        connection (TLS, or TCP's own checksums) and saves the time of the
        check, about 0.2 ms per MB here.
    :param oauth2: Where OAuth 2 tokens come from, e.g.
        :py:class:`~rbfly.streams.oauth2.ClientCredentials`, or any
        coroutine function returning a token: the client gets a token
        before it opens a connection and sends it as the password (SASL
        PLAIN; the URI's password is not used), and renews it on every open
        connection before it expires (RabbitMQ 3.13+). See
        :py:mod:`rbfly.streams.oauth2`.
    :param token_refresh: Share of a token's lifetime after which the
        client gets a new one (0..1, default 0.8).
    :param replicas_only: Subscriptions read from replicas of their
        stream only, sparing the leader (its node does the writing); a
        subscription to a stream without a replica waits for one up to the
        request timeout, then raises
        :py:class:`~rbfly.streams.error.StreamNotAvailable`. By default a
        subscription reads from the client's node when it holds a member
        of the stream, the leader included.
    :param publishers_on_leader: Publishers are declared only on the node
        of their stream's leader (the Java client's
        ``forceLeaderForProducers``): when that node cannot be reached (in
        ``NODE_ATTEMPTS`` connections through an address resolver, say),
        :py:meth:`publisher` raises
        :py:class:`~rbfly.streams.error.ConnectionLost`, and a publisher
        being recovered keeps trying with the reconnection delays. By
        default such a publisher publishes through the client's own
        connection instead, and the broker forwards its messages to the
        leader's node (slower, but it works).
    :param reconnect: Delays between reconnection attempts after the
        connection was lost (while publishers or subscriptions exist).
    """
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

    async def stream_exists(self, stream: str) -> bool:
        """
        Whether a stream exists (also while it elects a leader).
        """
        check_name('stream', stream)
        response = await self._call(Metadata([stream]), 'stream {!r}'.format(stream))
        for m in response.streams:
            if m.stream == stream:
                return bool(m.code != ResponseCode.STREAM_DOES_NOT_EXIST)
        return False

    async def update_secret(self, secret: str) -> None:
        """
        Replace the password (or OAuth 2 token) of the client's user on its
        open connections, and for the connections it opens later (RabbitMQ
        3.13+): the broker authenticates each connection again. Call it
        before a token expires; the broker closes the connections of an
        expired one. Publishers and subscriptions are not disturbed.

        :raises AuthenticationFailure: When the broker refuses the secret;
            the client keeps the old one.
        :raises FeatureNotSupported: On an older broker, or when the
            client authenticates with a TLS certificate (SASL EXTERNAL:
            it has no secret).
        """
        if not isinstance(secret, str):
            raise TypeError('secret must be a str, got {!r}'.format(type(secret).__name__))
        if self._tokens is not None:
            raise ValueError('the client renews its OAuth 2 token itself (the oauth2 option)')
        info = self._info
        if self._mechanism not in (None, 'PLAIN') or (
                self._mechanism is None and info.ssl is not None and info.username is None):
            raise FeatureNotSupported(
                'updating the secret needs SASL PLAIN; the client authenticates'
                ' with SASL {}'.format(self._mechanism or 'EXTERNAL (a TLS certificate)'),
            )
        protocol = await self._get_protocol()
        self._require(protocol, (3, 13), 'updating the secret')
        username = info.username or 'guest'
        command = SaslAuthenticate('PLAIN', sasl_plain(username, secret))
        # the client's own connection first: a refused secret changes nothing
        await protocol.request(command, 'updating the secret of user {!r}'.format(username))
        self._infos = [
            dtc.replace(i, password=secret) if i.username == info.username else i
            for i in self._infos
        ]
        self._info = dtc.replace(info, password=secret)
        others = [
            m.protocol for m in self._managers()[1:]
            if m.protocol is not None and m.protocol.is_open
        ]
        errors = await self._authenticate_again(others, command, 'updating the secret')
        if errors:
            raise errors[0]

    def metrics(self) -> Metrics:
        """
        Counters of the client since it was created, and its connections,
        publishers and subscriptions now (see :py:mod:`rbfly.streams.metrics`).
        """
        managers = self._managers()
        publishers = [p for m in managers for p in m.publishers]
        c = self._counters
        return Metrics(
            published=c.published,
            confirmed=c.confirmed,
            errored=c.errored,
            chunks=c.chunks,
            chunk_bytes=c.chunk_bytes,
            consumed=c.consumed,
            connections_opened=c.connections_opened,
            connections_lost=c.connections_lost,
            connections=sum(
                1 for m in managers if m.protocol is not None and m.protocol.is_open
            ),
            publishers=len(publishers),
            subscriptions=sum(len(m.subscriptions) for m in managers),
            outstanding_confirms=sum(len(p._unconfirmed) for p in publishers),
        )

    @property
    def server_properties(self) -> dict[str, str]:
        """
        Peer properties of the broker the client is connected to
        (``product``, ``version``, ...; empty while not connected).
        """
        protocol = self._protocol
        return dict(protocol.server_properties) if protocol is not None else {}

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

    async def resolve_offset(
            self,
            stream: str,
            offset: Offset = Offset.NEXT,
            *,
            filter: MessageFilter | None = None,
    ) -> int:
        """
        The offset of the first message a subscription to a stream with
        this offset specification (and filter) receives (RabbitMQ 4.3+):
        e.g. the first message stored at or after a time, the end of the
        stream now (``Offset.NEXT``), or where a stored offset reference
        resumes.

        The broker resolves a specification to the first offset of the
        chunk a subscription starts reading at; for ``Offset.offset(n)``
        and references, whose subscriptions skip the records of that chunk
        before ``n``, the result is ``n`` (or later, when the stream no
        longer holds ``n``).

        :raises rbfly.streams.FeatureNotSupported: On older brokers.
        :raises rbfly.streams.error.StreamDoesNotExist: When there is no
            such stream.
        """
        check_name('stream', stream)
        if not isinstance(offset, Offset):
            raise TypeError('offset must be an Offset, got {!r}'.format(type(offset).__name__))
        protocol = await self._get_protocol()
        self._require(protocol, (4, 3), 'resolving an offset specification')
        properties = {} if filter is None else filter_properties(filter)
        spec, start = await self._offset_spec(protocol, stream, offset)
        response = await self._call(
            ResolveOffsetSpec(stream, spec, properties), 'stream {!r}'.format(stream),
        )
        return max(int(response.offset), start)

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

    def _on_metadata_update(self, update: MetadataUpdate) -> None:
        """
        The broker says a stream is not available any more (deleted, or its
        leader moved): end or restore its publishers and subscriptions.
        """
        logger.info('metadata update: stream %r, code %d', update.stream, update.code)
        self._spawn(self._stream_changed(update.stream))

    def _publisher_unknown(self, publisher: tp.Any) -> None:
        self._spawn(self._stream_changed(publisher.stream))

    async def _stream_changed(self, stream: str) -> None:
        if stream in self._changing:
            return  # being restored already
        self._changing.add(stream)
        try:
            self._move_stream(stream)
            await self._restore_stream(stream)
        finally:
            self._changing.discard(stream)

    async def _restore_stream(self, stream: str) -> None:
        """
        Declare the publishers and subscriptions of a stream again after
        the broker said it is not available (its leader died or moved, or
        it is being deleted).

        While the stream elects a leader, the broker answers "not
        available", Metadata names no leader, and a replica restarting
        refuses subscriptions: ask again with growing delays, for up to
        ``STREAM_RECOVERY_TIMEOUT`` seconds. A lost connection is left to
        the connection's recovery, which declares them all again; a
        deleted stream ends them with
        :py:class:`~rbfly.streams.error.StreamDoesNotExist`.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STREAM_RECOVERY_TIMEOUT
        delay = 0.1
        done: set[object] = set()
        error: StreamsError = StreamNotAvailable('stream {!r}'.format(stream))
        while True:
            protocol = self._protocol
            if protocol is None or not protocol.is_open:
                return  # the connection's recovery declares them again
            publishers = [p for p in self._manager.publishers
                          if p.stream == stream and p not in done]
            subscriptions = [s for s in self._manager.subscriptions
                             if s.stream == stream and s not in done]
            if not publishers and not subscriptions:
                return
            try:
                if await self._stream_ready(protocol, stream):
                    for p in publishers:
                        protocol.publishers.pop(p._id, None)
                        p.on_connection_lost(ConnectionLost('stream {!r} moved'.format(stream)))
                        await self._recover_publisher(protocol, p)
                        done.add(p)
                    for s in subscriptions:
                        s.detach()
                        await self._restore_subscription(protocol, s)
                        done.add(s)
                    return
            except ConnectionLost:
                return  # the connection's recovery declares them again
            except StreamDoesNotExist as ex:
                self._end_stream(protocol, publishers, subscriptions, ex)
                return
            except StreamNotAvailable as ex:
                error = ex
            if loop.time() > deadline:
                self._end_stream(protocol, publishers, subscriptions, error)
                return
            logger.info('stream %r not available yet; asking again in %.1fs', stream, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    async def _stream_ready(self, protocol: StreamsProtocol, stream: str) -> bool:
        """
        Whether a stream has a leader again.

        :raises StreamDoesNotExist: When it was deleted.
        """
        response = await protocol.request(Metadata([stream]))
        brokers = {b.reference for b in response.brokers}
        for m in response.streams:
            if m.stream != stream:
                continue
            if m.code == ResponseCode.OK:
                return m.leader_reference in brokers
            if m.code == ResponseCode.STREAM_NOT_AVAILABLE:
                return False
            raise StreamDoesNotExist('stream {!r} was deleted'.format(stream))
        raise StreamDoesNotExist('stream {!r} was deleted'.format(stream))

    def _end_stream(
            self, protocol: StreamsProtocol, publishers: list[tp.Any],
            subscriptions: list[tp.Any], error: Exception,
    ) -> None:
        for p in publishers:
            self._manager.publishers.discard(p)
            protocol.publishers.pop(p._id, None)
            p._fail(error)
        for s in subscriptions:
            self._manager.subscriptions.discard(s)
            s.fail(error)

def streams_client(
        uri: str | tp.Sequence[str],
        /,
        ssl: _ssl.SSLContext | None = None,
        **options: tp.Any,
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
    :param options: Options of :py:class:`StreamsClient`.
    """
    if isinstance(uri, str):
        return StreamsClient(parse_uri(uri, ssl), **options)
    return StreamsClient([parse_uri(u, ssl) for u in uri], **options)

__all__ = [
    'DEFAULT_BACKOFF', 'DEFAULT_BUFFER_BYTES', 'DEFAULT_CREDIT', 'DEFAULT_REQUEST_TIMEOUT',
    'DEFAULT_SPIN',
    'ConsumerUpdateCallback',
    'ResumeCallback',
    'StreamInfo', 'StreamsClient', 'connection', 'streams_client',
]
