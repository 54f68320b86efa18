"""
The options of a client, checked once.

:py:class:`ClientOptions` is a frozen record: the facade
(:py:class:`~rbfly.streams.StreamsClient`) builds it from its keyword
arguments, and every part of the client reads its settings from it. An
option is added here, in the facade's signature, and in the part that
uses it: nowhere else.
"""

from __future__ import annotations

import dataclasses as dtc
import difflib
import typing as tp
from collections.abc import Mapping

from ..aio.records import Kind
from ..backoff import Backoff
from ..events import ConnectionEvent
from ..oauth2 import DEFAULT_REFRESH_RATIO, TokenProvider
from ..protocol._chunk import DEFAULT_MAX_CHUNK_UNCOMPRESSED
from ..protocol.connection import MECHANISMS
from ..protocol.constants import DEFAULT_FRAME_MAX, DEFAULT_HEARTBEAT

DEFAULT_BACKOFF = Backoff()
"""Reconnection delays of a client: 0.1 s doubling to 30 s, jittered, for ever."""

DEFAULT_CREDIT = 16
"""Chunks a subscription lets the broker send ahead at the start, and at least."""

DEFAULT_BUFFER_BYTES = 8 * 1024 * 1024
"""Bytes of chunks a subscription may hold (bounds its memory)."""

DEFAULT_SPIN = 0.0
"""
Seconds a subscription receiving chunks in quick succession polls for the
next one before its task sleeps, and a publisher polls for a confirmation
(see :py:attr:`ClientOptions.spin`): none by default, since polling keeps a
core busy.
"""

DEFAULT_READ_PAUSE = 0.001
"""
Seconds a connection stops reading after a read that brought a chunk of a
stream's history (see :py:attr:`ClientOptions.read_pause`).
"""

DEFAULT_REQUEST_TIMEOUT = 30.0
"""
Seconds to wait for the broker's response to a request; creating a stream
on a cluster waits for its members to start, seconds on a busy machine.
"""

Resolver: tp.TypeAlias = tp.Callable[[str, int], tuple[str, int]]
OnConnection: tp.TypeAlias = tp.Callable[[ConnectionEvent], None]

@dtc.dataclass(frozen=True)
class ClientOptions:
    """
    Every option of a client: the keyword arguments of
    :py:class:`~rbfly.streams.StreamsClient` and of
    :py:func:`~rbfly.streams.streams_client`.

    :raises ValueError: When an option is out of its range.
    :raises TypeError: When an option has the wrong type.
    """
    frame_max: int = DEFAULT_FRAME_MAX
    """
    Largest frame to accept (the broker may lower it).
    """
    heartbeat: int = DEFAULT_HEARTBEAT
    """
    Heartbeat interval asked for, in seconds.
    """
    credit: int = DEFAULT_CREDIT
    """
    Chunks a subscription lets the broker send ahead at
    the start, and at least.
    """
    buffer_bytes: int = DEFAULT_BUFFER_BYTES
    """
    Bytes of chunks a subscription may hold, buffered
    or on their way (it sets how many chunks the broker may send
    ahead, as chunk sizes vary from bytes to megabytes).
    """
    spin: float = DEFAULT_SPIN
    """
    Seconds a subscription whose chunks come in quick
    succession keeps polling for the next chunk before its task sleeps,
    and a publisher awaiting a confirmation right after its last one
    polls for it (0, the default: never). Polling is busy-waiting, at
    the cost of a busy core; in the performance report's committed runs
    it bought no speed (messages sent one at a time: 0.99 times the rate
    at 2.9 times the CPU; chunks of 50 messages: 1.03 times at 2.4
    times). Opt in, e.g. ``spin=0.0005``, only where a measurement shows
    a gain. A consumer at the live end of a quiet stream, or a publisher
    sending now and then, never spins.
    """
    read_pause: float = DEFAULT_READ_PAUSE
    """
    Seconds a connection stops reading after a read that
    brought a chunk of history (written a second or more before it
    arrived: a subscription catching up), so that the next chunks arrive
    together, in one read, rather than a wake-up each (0: read at once).
    Measured on a stream of 50-message chunks: the same rate, at 40% less
    client CPU (see the performance report). Chunks at the live end of a
    stream never pause a read by themselves, but what shares a
    connection with a subscription catching up (a live subscription, a
    publisher's confirmations) comes up to this much later. The age of a
    chunk is its broker timestamp against this machine's clock: a clock
    a second or more ahead of the broker's makes every chunk look old. A
    client that polls (``spin`` above 0) never pauses its reads. At most
    0.1 s.
    """
    connect_timeout: float = 30
    """
    Seconds to wait for a connection and handshake.
    """
    request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT
    """
    Seconds to wait for the broker's response to a
    request (creating a stream, a query, declaring a publisher,
    subscribing; ``None``: no limit), then
    :py:class:`~rbfly.streams.RequestTimeout`. A dead connection is
    found by heartbeats; this bounds a broker that is alive but does
    not answer.
    """
    connection_name: str | None = None
    """
    Name of the client's connections, shown by the
    broker (management UI, ``rabbitmqctl list_stream_connections``).
    """
    client_properties: tp.Mapping[str, str] | None = None
    """
    More peer properties the client tells the broker at
    each connection (shown by ``rabbitmqctl list_stream_connections
    client_properties`` and the management UI), over rbfly's own
    (``product``, ``platform``, ``information``, ``connection_name``).
    """
    receive_buffer: int | None = None
    """
    Bytes of each connection's socket receive buffer
    (``SO_RCVBUF``, set before connecting; ``None``: the system's).
    """
    send_buffer: int | None = None
    """
    Bytes of each connection's socket send buffer
    (``SO_SNDBUF``; ``None``: the system's).
    """
    publishers_per_connection: int = 256
    """
    Publishers one connection holds
    (1..256, the protocol's limit); the client opens another
    connection to the broker for more.
    """
    subscriptions_per_connection: int = 256
    """
    Subscriptions one connection
    holds (1..256); as for publishers.
    """
    on_connection: OnConnection | None = None
    """
    Called with a
    :py:class:`~rbfly.streams.ConnectionEvent` when a connection opens,
    is lost, recovers, is given up or is closed (see
    :py:mod:`rbfly.streams.events`).
    """
    address_resolver: Resolver | None = None
    """
    Where to connect to reach a node of a cluster
    the broker names (its advertised host and port), e.g. a load
    balancer in front of the cluster, or the address of a container's
    published port: ``resolver(host, port) -> (host, port)``. With a
    resolver, a connection meant for a node is opened again until it
    reaches that node (a load balancer picks any), up to
    ``NODE_ATTEMPTS`` times.
    """
    sasl_mechanism: str | None = None
    """
    ``PLAIN`` (user and password of the URI),
    ``EXTERNAL`` (TLS client certificate) or ``ANONYMOUS`` (RabbitMQ
    4.0+, logged in as the broker's ``anonymous_login_user``); default:
    ``EXTERNAL`` with a TLS context and no user in the URI, else
    ``PLAIN``.
    """
    crc_check: bool = True
    """
    Verify the CRC32 of every chunk received (a
    mismatch ends the subscription with
    :py:class:`~rbfly.error.ChunkError`); ``False`` trusts the
    connection (TLS, or TCP's own checksums) and saves the time of the
    check, about 0.2 ms per MB here.
    """
    crc_failure: tp.Literal['fail', 'skip'] = 'fail'
    """
    What a chunk failing its CRC does: ``fail`` ends the subscription
    with :py:class:`~rbfly.error.ChunkCrcError` (after the chunks before
    it); ``skip`` drops the chunk, logs a warning, counts it
    (``chunks_skipped`` of the metrics), and goes on after it (as the
    .NET client allows). Never are a corrupted chunk's messages handed
    out.
    """
    max_chunk_uncompressed: int = DEFAULT_MAX_CHUNK_UNCOMPRESSED
    """
    Bytes the compressed sub-batches of one chunk may decompress to, in
    all (256 MiB; the Java client's ``maxUncompressedSizePerChunk``); past
    it the subscription ends with :py:class:`~rbfly.error.ChunkTooLarge`
    naming the cap, nothing past it allocated (each sub-batch is also at
    most 64 MiB).
    """
    oauth2: TokenProvider | None = None
    """
    Where OAuth 2 tokens come from, e.g.
    :py:class:`~rbfly.streams.oauth2.ClientCredentials`, or any
    coroutine function returning a token: the client gets a token
    before it opens a connection and sends it as the password (SASL
    PLAIN; the URI's password is not used), and renews it on every open
    connection before it expires (RabbitMQ 3.13+). See
    :py:mod:`rbfly.streams.oauth2`.
    """
    token_refresh: float = DEFAULT_REFRESH_RATIO
    """
    Share of a token's lifetime after which the
    client gets a new one (0..1, default 0.8).
    """
    replicas_only: bool = False
    """
    Subscriptions read from replicas of their
    stream only, sparing the leader (its node does the writing); a
    subscription to a stream without a replica waits for one up to the
    request timeout, then raises
    :py:class:`~rbfly.streams.error.StreamNotAvailable`. By default a
    subscription reads from the client's node when it holds a member
    of the stream, the leader included.
    """
    publishers_on_leader: bool = False
    """
    Publishers are declared only on the node
    of their stream's leader (the Java client's
    ``forceLeaderForProducers``): when that node cannot be reached (in
    ``NODE_ATTEMPTS`` connections through an address resolver, say),
    :py:meth:`~rbfly.streams.StreamsClient.publisher` raises
    :py:class:`~rbfly.streams.error.ConnectionLost`, and a publisher
    being recovered keeps trying with the reconnection delays. By
    default such a publisher publishes through the client's own
    connection instead, and the broker forwards its messages to the
    leader's node (slower, but it works).
    """
    reconnect: Backoff = DEFAULT_BACKOFF
    """
    Delays between reconnection attempts after the
    connection was lost (while publishers or subscriptions exist).
    """

    def __post_init__(self) -> None:
        self._check_numbers()
        self._check_callables()
        mechanism = self.sasl_mechanism
        if mechanism is not None and mechanism not in MECHANISMS:
            raise ValueError('sasl_mechanism must be one of {}, got {!r}'.format(
                ', '.join(MECHANISMS), mechanism,
            ))
        connection_name = self.connection_name
        if connection_name is not None and not isinstance(connection_name, str):
            raise TypeError('connection_name must be a str, got {!r}'.format(
                type(connection_name).__name__,
            ))
        for flag in ('crc_check', 'replicas_only', 'publishers_on_leader'):
            object.__setattr__(self, flag, bool(getattr(self, flag)))

    def _check_numbers(self) -> None:
        _check_int(self, 'frame_max', 0, 0xffffffff, ' (0: no limit)')
        _check_int(self, 'heartbeat', 0, 0xffffffff, ' (0: none)')
        _check_int(self, 'credit', 1, 0xffff)
        _check_int(self, 'buffer_bytes', 1, None)
        _check_int(self, 'max_chunk_uncompressed', 1, None)
        for name in ('receive_buffer', 'send_buffer'):
            if getattr(self, name) is not None:
                _check_int(self, name, 1024, 2**31 - 1)
        props = self.client_properties
        if props is not None:
            if not isinstance(props, tp.Mapping) or not all(
                    isinstance(k, str) and k and isinstance(v, str) for k, v in props.items()):
                raise TypeError('client_properties must map non-empty str keys to str values,'
                                ' got {!r}'.format(props))
            object.__setattr__(self, 'client_properties', dict(props))
        if self.crc_failure not in ('fail', 'skip'):
            raise ValueError("crc_failure must be 'fail' or 'skip', got {!r}".format(
                self.crc_failure,
            ))
        _check_int(self, 'publishers_per_connection', 1, 256)
        _check_int(self, 'subscriptions_per_connection', 1, 256)
        _check_seconds('connect_timeout', self.connect_timeout)
        if self.request_timeout is not None:
            _check_seconds('request_timeout', self.request_timeout, ' or None')
        if not _is_number(self.spin) or not 0 <= self.spin <= 1:
            raise ValueError('spin must be 0..1 seconds, got {!r}'.format(self.spin))
        if not _is_number(self.read_pause) or not 0 <= self.read_pause <= 0.1:
            raise ValueError('read_pause must be 0..0.1 seconds, got {!r}'.format(
                self.read_pause,
            ))
        ratio = self.token_refresh
        if not _is_number(ratio) or not 0 < ratio < 1:
            raise ValueError('token_refresh must be between 0 and 1, got {!r}'.format(ratio))

    def _check_callables(self) -> None:
        for name in ('on_connection', 'address_resolver'):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise TypeError('{} must be callable'.format(name))
        if self.oauth2 is not None and not callable(self.oauth2):
            raise TypeError('oauth2 must be a token provider (e.g. ClientCredentials)')
        if not callable(getattr(self.reconnect, 'delays', None)):
            raise TypeError('reconnect must be a Backoff, got {!r}'.format(
                type(self.reconnect).__name__,
            ))

    @property
    def request_deadline(self) -> float:
        """Seconds a retried request may take in all (the request timeout, or its default)."""
        return self.request_timeout or DEFAULT_REQUEST_TIMEOUT

    def per_connection(self, kind: Kind) -> int:
        """How many publishers or subscriptions (``kind``) one connection holds."""
        if kind == 'publishers':
            return self.publishers_per_connection
        return self.subscriptions_per_connection

def _is_number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float)

def _check_int(
        options: ClientOptions, name: str, low: int, high: int | None, note: str = '',
) -> None:
    value = getattr(options, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < low \
            or (high is not None and value > high):
        limits = '{}..{}'.format(low, high) if high is not None else 'at least {}'.format(low)
        raise ValueError('{} must be {}{}, got {!r}'.format(name, limits, note, value))

def _check_seconds(name: str, value: object, note: str = '') -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError('{} must be positive seconds{}, got {!r}'.format(name, note, value))

class ClientOptionArgs(tp.TypedDict, total=False):
    """
    The options of :py:func:`~rbfly.streams.streams_client`, as keyword
    arguments: the fields of :py:class:`ClientOptions` (see each there),
    typed, so that a misspelt option fails type checking and an editor
    completes the names (a test keeps the two lists equal).
    """
    frame_max: int
    heartbeat: int
    credit: int
    buffer_bytes: int
    spin: float
    read_pause: float
    connect_timeout: float
    request_timeout: float | None
    connection_name: str | None
    client_properties: tp.Mapping[str, str] | None
    receive_buffer: int | None
    send_buffer: int | None
    publishers_per_connection: int
    subscriptions_per_connection: int
    on_connection: OnConnection | None
    address_resolver: Resolver | None
    sasl_mechanism: str | None
    crc_check: bool
    crc_failure: tp.Literal['fail', 'skip']
    max_chunk_uncompressed: int
    oauth2: TokenProvider | None
    token_refresh: float
    replicas_only: bool
    publishers_on_leader: bool
    reconnect: Backoff

OPTION_NAMES = frozenset(f.name for f in dtc.fields(ClientOptions))
"""The names of the client's options."""

def check_option_names(options: Mapping[str, object], where: str) -> None:
    """
    Refuse an option the client does not have, suggesting the closest
    name (a misspelt option would otherwise be a bare ``unexpected
    keyword argument``, or be lost in a dictionary of options).

    :param where: The function given the options, for the message.
    :raises TypeError: For an unknown option.
    """
    unknown = sorted(options.keys() - OPTION_NAMES)
    if not unknown:
        return
    name = unknown[0]
    close = difflib.get_close_matches(name, OPTION_NAMES, 1)
    hint = '; did you mean {!r}?'.format(close[0]) if close else \
        ' (the options are those of rbfly.streams.parts.options.ClientOptions)'
    raise TypeError('{}() got an unknown option {!r}{}'.format(where, name, hint))

__all__ = [
    'DEFAULT_BACKOFF', 'DEFAULT_BUFFER_BYTES', 'DEFAULT_CREDIT', 'DEFAULT_REQUEST_TIMEOUT',
    'DEFAULT_SPIN', 'OPTION_NAMES', 'ClientOptionArgs', 'ClientOptions', 'Kind', 'OnConnection',
    'Resolver', 'check_option_names',
]
