"""
The connection side of :py:class:`~rbfly.streams.StreamsClient`: options,
the lazy connection and its recovery, requests with one retry, and the
checks of broker features.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import platform
import typing as tp

from ..error import RbFlyError
from ._publish import PublishEncoder
from ._publisher_base import PublisherTrait
from .aio.manager import ConnectionManager
from .aio.protocol import ABANDONED, StreamsProtocol, open_connection
from .backoff import Backoff
from .error import (
    AuthenticationFailure,
    ConnectionLost,
    FeatureNotSupported,
    OAuth2Error,
    RequestTimeout,
    StreamDoesNotExist,
    StreamNotAvailable,
    StreamsError,
)
from .events import ConnectionEvent, ConnectionState
from .metrics import Counters
from .oauth2 import DEFAULT_REFRESH_RATIO, RETRY_DELAYS, TokenKeeper, TokenProvider
from .protocol.commands import (
    CommandVersion,
    ExchangeCommandVersions,
    Metadata,
    MetadataUpdate,
    SaslAuthenticate,
)
from .protocol.connection import MECHANISMS, ConnectionCore, sasl_plain
from .protocol.constants import DEFAULT_FRAME_MAX, DEFAULT_HEARTBEAT, Key, ResponseCode
from .url import ConnectionInfo
from .util import version

logger = logging.getLogger('rbfly.streams.client')

T = tp.TypeVar('T')

DEFAULT_BACKOFF = Backoff()

RESTORE_RETRY_TIME = 30.0
"""
Seconds a publisher or subscription is declared again after a reconnection
while its stream, still listed by the broker, refuses it: a RabbitMQ 4.0
node just reconnected to can answer a Subscribe with "stream does not
exist" for a stream its metadata lists.
"""

DEFAULT_CREDIT = 16
"""Chunks a subscription lets the broker send ahead at the start, and at least."""

DEFAULT_BUFFER_BYTES = 8 * 1024 * 1024
"""Bytes of chunks a subscription may hold (bounds its memory)."""

DEFAULT_SPIN = 0.0005
# seconds to wait for the broker's response to a request; creating a stream
# on a cluster waits for its members to start, seconds on a busy machine
DEFAULT_REQUEST_TIMEOUT = 30.0
"""
Seconds a subscription receiving chunks in quick succession polls for the
next one before its task sleeps (see :py:mod:`rbfly.streams.subscriber`).
"""

class ClientBase:
    """
    Connection of a client (see :py:class:`~rbfly.streams.StreamsClient`
    for the parameters).
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
            connect_timeout: float = 30,
            request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
            connection_name: str | None = None,
            publishers_per_connection: int = 256,
            subscriptions_per_connection: int = 256,
            on_connection: tp.Callable[[ConnectionEvent], None] | None = None,
            address_resolver: tp.Callable[[str, int], tuple[str, int]] | None = None,
            sasl_mechanism: str | None = None,
            crc_check: bool = True,
            oauth2: TokenProvider | None = None,
            token_refresh: float = DEFAULT_REFRESH_RATIO,
            replicas_only: bool = False,
            publishers_on_leader: bool = False,
            reconnect: Backoff = DEFAULT_BACKOFF,
    ) -> None:
        if not 1 <= credit <= 0xffff:
            raise ValueError('credit must be 1..65535, got {}'.format(credit))
        if isinstance(connection_info, ConnectionInfo):
            connection_info = [connection_info]
        if not connection_info:
            raise ValueError('no broker to connect to')
        self._infos = list(connection_info)
        self._info = self._infos[0]
        self._last = -1  # index of the broker connected to last
        self._frame_max = frame_max
        self._heartbeat = heartbeat
        self._credit = credit
        if buffer_bytes < 1:
            raise ValueError('buffer_bytes must be positive, got {}'.format(buffer_bytes))
        self._buffer_bytes = buffer_bytes
        if not 0 <= spin <= 1:
            raise ValueError('spin must be 0..1 seconds, got {}'.format(spin))
        self._spin = spin
        self._connect_timeout = connect_timeout
        if request_timeout is not None and not request_timeout > 0:
            raise ValueError('request_timeout must be positive or None, got {!r}'.format(
                request_timeout,
            ))
        self._request_timeout = request_timeout
        for name, value in (('publishers_per_connection', publishers_per_connection),
                            ('subscriptions_per_connection', subscriptions_per_connection)):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 256:
                raise ValueError('{} must be 1..256, got {!r}'.format(name, value))
        self._max_publishers = publishers_per_connection
        self._max_subscriptions = subscriptions_per_connection
        self._reconnect = reconnect
        if connection_name is not None and not isinstance(connection_name, str):
            raise TypeError('connection_name must be a str, got {!r}'.format(
                type(connection_name).__name__,
            ))
        self._connection_name = connection_name
        if on_connection is not None and not callable(on_connection):
            raise TypeError('on_connection must be callable')
        self._on_connection = on_connection
        if address_resolver is not None and not callable(address_resolver):
            raise TypeError('address_resolver must be callable')
        self._resolver = address_resolver
        self._counters = Counters()
        if sasl_mechanism is not None and sasl_mechanism not in MECHANISMS:
            raise ValueError('sasl_mechanism must be one of {}, got {!r}'.format(
                ', '.join(MECHANISMS), sasl_mechanism,
            ))
        self._mechanism = sasl_mechanism
        self._crc_check = bool(crc_check)
        self._tokens = None if oauth2 is None else TokenKeeper.checked(
            oauth2, token_refresh, sasl_mechanism,
        )
        self._token_task: asyncio.Task[None] | None = None
        self._replicas_only = bool(replicas_only)
        self._publishers_on_leader = bool(publishers_on_leader)
        self._manager = ConnectionManager(
            self._connect, reconnect, self._recover_publisher, self._restore_subscription,
            notify=self._notify,
        )
        self._tasks: set[asyncio.Task[None]] = set()
        self._changing: set[str] = set()  # streams whose leader is being waited for

    def __repr__(self) -> str:
        return '{}({})'.format(type(self).__name__, ', '.join(map(str, self._infos)))

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
        """
        Wait until the connection is back and the publisher is declared on
        it again (a publisher whose stream elects a new leader waits on an
        open connection; it is checked again every second).
        """
        await self._manager.wait_recovery()
        if not publisher._ready.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(1):
                    await publisher._ready.wait()

    async def _connect(self) -> StreamsProtocol:
        """
        Connect to one of the client's brokers: the one after the broker
        connected to last (after a lost connection, another node of a
        cluster is tried first), then the others in turn.

        :raises ConnectionLost: When no broker can be reached.
        """
        infos = self._infos
        n = len(infos)
        error: ConnectionLost | None = None
        for k in range(n):
            i = (self._last + 1 + k) % n
            try:
                protocol = await self._connect_to(infos[i])
            except ConnectionLost as ex:
                if n > 1:
                    logger.warning('%s', ex)
                error = ex
            else:
                self._last = i
                self._info = infos[i]
                return protocol
        assert error is not None
        if n == 1:
            raise error
        raise ConnectionLost('cannot connect to any of {} brokers; last error: {}'.format(
            n, error,
        )) from error

    async def _connect_to(self, info: ConnectionInfo) -> StreamsProtocol:
        tokens = self._tokens
        if tokens is not None:
            # the token is the password; the broker takes the user from it
            username, password = info.username or '', await tokens.current()
            mechanism = 'PLAIN'
        else:
            external = info.ssl is not None and info.username is None
            username = info.username or 'guest'
            password = info.password if info.password is not None else 'guest'
            mechanism = self._mechanism or ('EXTERNAL' if external else 'PLAIN')
        core = ConnectionCore(
            virtual_host=info.virtual_host,
            username=username,
            password=password,
            mechanism=mechanism,
            frame_max=self._frame_max,
            heartbeat=self._heartbeat,
            client_properties=self._client_properties(),
        )
        logger.info('connecting to %s', info)
        try:
            protocol = await open_connection(
                info.host, info.port, core, ssl=info.ssl, timeout=self._connect_timeout,
            )
        except AuthenticationFailure:
            if tokens is not None:
                tokens.invalidate()  # revoked, or expired early: get a new one
            raise
        if tokens is not None and (self._token_task is None or self._token_task.done()):
            self._token_task = asyncio.get_running_loop().create_task(self._keep_token())
        protocol.address = (info.host, info.port)
        protocol.request_timeout = self._request_timeout
        protocol.publish_encoder = PublishEncoder(core.frame_max)  # type: ignore[attr-defined]
        protocol.on_metadata_update = self._on_metadata_update
        protocol.broker_version = version(protocol.server_properties)  # type: ignore[attr-defined]
        if protocol.broker_version >= (3, 11):  # type: ignore[attr-defined]
            try:
                await protocol.request(ExchangeCommandVersions([
                    CommandVersion(Key.PUBLISH, 1, 2),
                    CommandVersion(Key.DELIVER, 1, 2),
                ]))
            except RequestTimeout as ex:
                # a node that does not answer is not reachable
                protocol.abort(ConnectionLost(str(ex)))
                raise ConnectionLost('{}: {}'.format(info, ex)) from ex
            except asyncio.CancelledError:
                protocol.abort(ConnectionLost('cancelled while connecting'))
                raise
        self._counters.connections_opened += 1
        logger.info('connected to %s (RabbitMQ %s)', info,
                    protocol.server_properties.get('version', 'unknown'))
        return protocol

    def _notify(
            self, manager: ConnectionManager, state: ConnectionState,
            protocol: StreamsProtocol | None, error: Exception | None,
    ) -> None:
        if state is ConnectionState.LOST:
            self._counters.connections_lost += 1
        callback = self._on_connection
        if callback is None:
            return
        node = None
        if protocol is not None:
            props = protocol.connection_properties
            host, port = props.get('advertised_host'), props.get('advertised_port')
            if host is not None and port is not None and port.isdigit():
                node = (host, int(port))
            else:
                node = protocol.address
        event = ConnectionEvent(state, node, error, manager is not self._manager)
        try:
            callback(event)
        except Exception:
            logger.exception('on_connection callback failed for %s', event)

    def _client_properties(self) -> dict[str, str]:
        props = {
            'product': 'rbfly',
            'platform': 'Python {}'.format(platform.python_version()),
            'information': 'https://pypi.org/project/rbfly/',
        }
        if self._connection_name is not None:
            props['connection_name'] = self._connection_name
        return props

    async def _keep_token(self) -> None:
        """
        Get a new OAuth 2 token when the current one is due for renewal,
        and hand it to every open connection (retrying while the provider
        fails; the broker closes the connections of an expired token, and
        they reconnect with a new one).
        """
        tokens = self._tokens
        assert tokens is not None
        failures = 0
        while (delay := tokens.refresh_in()) is not None:
            await asyncio.sleep(delay)
            try:
                token = await tokens.fetch()
            except OAuth2Error as ex:
                retry = RETRY_DELAYS[min(failures, len(RETRY_DELAYS) - 1)]
                failures += 1
                logger.warning('cannot renew the OAuth 2 token (next attempt in %.0f s): %s',
                               retry, ex)
                await asyncio.sleep(retry)
                continue
            failures = 0
            await self._renew_secret(token)

    async def _renew_secret(self, token: str) -> None:
        """
        Authenticate the open connections again with a new token (RabbitMQ
        3.13+; an older broker's connections get it when they reconnect).
        """
        command = SaslAuthenticate('PLAIN', sasl_plain(self._info.username or '', token))
        protocols = [
            m.protocol for m in self._managers()
            if m.protocol is not None and m.protocol.is_open
            and m.protocol.broker_version >= (3, 13)  # type: ignore[attr-defined]
        ]
        for error in await self._authenticate_again(
                protocols, command, 'renewing the OAuth 2 token'):
            logger.error('the broker refused the renewed OAuth 2 token: %s', error)

    @staticmethod
    async def _authenticate_again(
            protocols: list[StreamsProtocol], command: SaslAuthenticate, context: str,
    ) -> list[Exception]:
        """
        Send a new secret to open connections; return the brokers' errors
        (a connection lost meanwhile is no error: it connects again with
        the new secret).
        """
        results = await asyncio.gather(
            *(p.request(command, context) for p in protocols), return_exceptions=True,
        )
        errors = []
        for result in results:
            if isinstance(result, ConnectionLost):
                continue
            if isinstance(result, Exception):
                errors.append(result)
            elif isinstance(result, BaseException):  # cancelled: never swallowed
                raise result
        return errors

    def _managers(self) -> list[ConnectionManager]:
        """The connection managers of the client."""
        return [self._manager]

    async def disconnect(self) -> None:
        """
        Close the connection to the broker (the client connects again on
        its next call).
        """
        if self._tasks:
            await asyncio.wait(self._tasks)
        task, self._token_task = self._token_task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait([task])
        await self._manager.close()

    async def __aenter__(self) -> tp.Self:
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

    def _abandon(
            self, protocol: StreamsProtocol, handlers: dict[int, tp.Any], key: int,
            delete: tp.Any, what: str,
    ) -> None:
        """
        A publisher's or subscription's declaration under id ``key`` was
        cancelled or timed out, and the broker may still declare it: keep
        the id taken (what comes for it is dropped) until ``delete`` (the
        request deleting it) is answered, so that a later declaration never
        gets its messages.
        """
        if not protocol.is_open:
            return
        handlers[key] = ABANDONED

        async def delete_it() -> None:
            try:
                with contextlib.suppress(StreamsError):
                    await protocol.request(delete, what)
            finally:
                if handlers.get(key) is ABANDONED:
                    del handlers[key]

        self._spawn(delete_it())

    @staticmethod
    def _free_id(used: tp.Mapping[int, object], what: str) -> int:
        for i in range(256):
            if i not in used:
                return i
        raise RbFlyError('too many {} on one connection (256)'.format(what))

    async def _declare_again(
            self, protocol: StreamsProtocol, stream: str,
            declare: tp.Callable[[], tp.Awaitable[T]],
    ) -> T:
        """
        Declare a publisher or subscription again after a reconnection;
        while its stream refuses it but is listed in the broker's metadata
        (so not deleted), ask again with growing delays, for up to
        :py:data:`RESTORE_RETRY_TIME` seconds.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + RESTORE_RETRY_TIME
        delay = 0.05
        while True:
            try:
                return await declare()
            except (StreamDoesNotExist, StreamNotAvailable) as ex:
                if loop.time() > deadline or not await self._listed(protocol, stream):
                    raise
                logger.info('stream %r refused a declaration after reconnection (%s);'
                            ' asking again in %.2fs', stream, ex, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def _listed(self, protocol: StreamsProtocol, stream: str) -> bool:
        """Whether the broker's metadata lists a stream (deleted: not)."""
        response = await protocol.request(Metadata([stream]))
        return any(
            m.stream == stream and m.code in (ResponseCode.OK, ResponseCode.STREAM_NOT_AVAILABLE)
            for m in response.streams
        )

    #
    # implemented by the client's parts
    #

    async def _restore_publisher(self, protocol: StreamsProtocol, publisher: tp.Any) -> None:
        raise NotImplementedError

    async def _recover_publisher(self, protocol: StreamsProtocol, publisher: tp.Any) -> None:
        raise NotImplementedError

    async def _restore_subscription(self, protocol: StreamsProtocol, sub: tp.Any) -> None:
        raise NotImplementedError

    def _on_metadata_update(self, update: MetadataUpdate) -> None:
        raise NotImplementedError

    def _publisher_unknown(self, publisher: PublisherTrait) -> None:
        """The broker does not know a publisher any more: declare it again."""
        raise NotImplementedError

__all__ = [
    'DEFAULT_BACKOFF', 'DEFAULT_BUFFER_BYTES', 'DEFAULT_CREDIT', 'DEFAULT_REQUEST_TIMEOUT',
    'DEFAULT_SPIN', 'ClientBase',
]
