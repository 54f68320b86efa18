"""
What the broker holds, read from RabbitMQ's management plugin (HTTP).

The stream protocol has no command that lists streams, super streams, the
members of a consumer group and which one is active, the publishers, or
the offsets stored under a name; the management plugin's HTTP API
(``rabbitmq_management``, port 15672, and ``rabbitmq_stream_management``
for the stream endpoints) has them. :py:class:`Admin` reads it, with the
user, password, host and virtual host of the client's URI::

    async with Admin.from_uri('rabbitmq-stream://guest:guest@localhost:5552/') as admin:
        for group in await admin.groups(super_stream='invoices'):
            print(group.stream, group.name, [m.client for m in group.active])

It needs the ``admin`` extra (``pip install "rbfly[admin]"``: httpx).
Everything is read within the URI's virtual host. The endpoints, and the
brokers that have them (RabbitMQ 3.10 and 4.x checked):

- ``/api/queues/{vhost}``: the streams (``type`` ``stream``): leader,
  members, messages, segments (4.x);
- ``/api/exchanges/{vhost}``: the super streams, exchanges with the
  argument ``x-super-stream``;
- ``/api/exchanges/{vhost}/{name}/bindings/source``: their partitions,
  the bindings' destinations in ``x-stream-partition-order``;
- ``/api/stream/consumers/{vhost}``: the subscriptions; ``active`` and
  ``activity_status`` from RabbitMQ 3.11 (single active consumer);
- ``/api/stream/publishers/{vhost}``: the publishers and their counts;
- ``/api/stream/connections/{vhost}``: the ``connection_name`` each
  client gave;
- ``/api/stream/{vhost}/{stream}/tracking``: the offsets stored under
  each name, each named publisher's last publishing id (4.0 has it, 3.10
  not).

The broker's statistics lag behind its state by up to its statistics
interval (``collect_statistics_interval``, 5 s by default): a stream
created a moment ago may be listed without its message count, a consumer
just subscribed not yet. A user with the ``monitoring`` tag sees every
connection's consumers and publishers; one with ``management`` only those
of its own connections.
"""

from __future__ import annotations

import dataclasses as dtc
import logging
import ssl as _ssl
import typing as tp
from collections.abc import Mapping
from urllib.parse import quote, urlsplit

from ..error import RbFlyError
from .url import Scheme, parse_uri

if tp.TYPE_CHECKING:
    import httpx

logger = logging.getLogger(__name__)

DEFAULT_PORT = 15672
"""Port of the management plugin's HTTP API (``management.tcp.port``)."""

PLUGINS = 'rabbitmq-plugins enable rabbitmq_management rabbitmq_stream_management'
"""What enables the endpoints :py:class:`Admin` reads."""

class AdminError(RbFlyError):
    """The management API cannot answer; the message names its URL and what to do."""

class AdminUnavailable(AdminError, ConnectionError):
    """
    No management API answers at the URL: nothing listens there, it is
    not RabbitMQ's management plugin, or its stream plugin is off.
    """

class AdminAuthError(AdminError):
    """The management API refused the user name and password (HTTP 401)."""

class AdminAccessDenied(AdminError):
    """
    The user may not read what was asked: it lacks a management tag, or
    permissions on the virtual host (RabbitMQ answers 401 with its reason,
    or 403).
    """

class AdminNotSupported(AdminError):
    """The broker's management API has no such endpoint (an older RabbitMQ)."""

class AdminNotFound(AdminError, LookupError):
    """No such stream (HTTP 404 of a stream's endpoint)."""

class AdminMissing(AdminError, ImportError):
    """httpx, the HTTP client of :py:mod:`rbfly.streams.admin`, is not installed."""

@dtc.dataclass(frozen=True)
class StreamSummary:
    """
    A stream as the management API lists it.

    :param name: The stream.
    :param vhost: Its virtual host.
    :param leader: The node of its leader (``None``: not known now).
    :param replicas: The nodes of its other members.
    :param messages: Messages in it (``None`` until the broker's
        statistics include the stream; offset tracking entries count too).
    :param segments: Segment files of the leader (RabbitMQ 4.x; else ``None``).
    :param arguments: Its arguments, ``x-max-age`` etc.
    """
    name: str
    vhost: str
    leader: str | None
    replicas: tuple[str, ...]
    messages: int | None
    segments: int | None
    arguments: Mapping[str, object]

@dtc.dataclass(frozen=True)
class SuperStreamSummary:
    """
    A super stream: an exchange with the argument ``x-super-stream``.

    :param name: The super stream.
    :param vhost: Its virtual host.
    :param partitions: Its partitions, in order (``x-stream-partition-order``).
    :param keys: The binding key of each partition.
    """
    name: str
    vhost: str
    partitions: tuple[str, ...]
    keys: tuple[str, ...]

@dtc.dataclass(frozen=True)
class ConsumerSummary:
    """
    A subscription to a stream.

    :param stream: The stream (a partition, for a super stream).
    :param vhost: Its virtual host.
    :param connection: The name of its connection (``client -> broker``
        addresses).
    :param client: The connection's name the client gave
        (``connection_name`` of :py:func:`~rbfly.streams.streams_client`;
        ``None``: none given).
    :param subscription_id: Its id on that connection.
    :param name: Its name, the reference it stores offsets under
        (``None``: no name).
    :param super_stream: The super stream it subscribed through.
    :param single_active: Whether it is a single active consumer.
    :param active: Whether messages flow to it (each member of a group of
        RabbitMQ 3.10, which has no single active consumer, is active).
    :param status: The broker's word: ``up``, ``single_active``, ``waiting``.
    :param offset: The offset it is at.
    :param offset_lag: Offsets between it and the stream's end.
    :param consumed: Messages delivered to it.
    :param credits: Chunk credits it holds.
    """
    stream: str
    vhost: str
    connection: str
    client: str | None
    subscription_id: int
    name: str | None
    super_stream: str | None
    single_active: bool
    active: bool
    status: str
    offset: int | None
    offset_lag: int | None
    consumed: int | None
    credits: int | None

@dtc.dataclass(frozen=True)
class GroupSummary:
    """
    A consumer group on one stream: the subscriptions sharing a name.

    :param stream: The stream (a partition, for a super stream).
    :param name: The group's name, its offset reference.
    :param super_stream: The super stream its members subscribed through.
    :param members: Its subscriptions.
    :param stored: The offset stored under the name (``None``: none, or
        a broker without the tracking endpoint).
    """
    stream: str
    name: str
    super_stream: str | None
    members: tuple[ConsumerSummary, ...]
    stored: int | None

    @property
    def active(self) -> tuple[ConsumerSummary, ...]:
        """The members messages flow to: one at most for single active consumers."""
        return tuple(m for m in self.members if m.active)

@dtc.dataclass(frozen=True)
class PublisherSummary:
    """
    A publisher of a stream.

    :param stream: The stream.
    :param vhost: Its virtual host.
    :param connection: The name of its connection.
    :param client: The connection's name the client gave (``None``: none).
    :param publisher_id: Its id on that connection.
    :param reference: Its name (``None``: none, no deduplication).
    :param published: Messages it sent.
    :param confirmed: Messages confirmed to it.
    :param errored: Messages refused.
    :param sequence: The last publishing id stored for its name (``None``:
        none, or a broker without the tracking endpoint).
    """
    stream: str
    vhost: str
    connection: str
    client: str | None
    publisher_id: int
    reference: str | None
    published: int | None
    confirmed: int | None
    errored: int | None
    sequence: int | None

@dtc.dataclass(frozen=True)
class Tracking:
    """
    What a stream stores under names (RabbitMQ 4.0 has it, 3.10 not).

    :param offsets: The offset stored under each consumer name.
    :param writers: The last publishing id of each named publisher.
    """
    offsets: Mapping[str, int]
    writers: Mapping[str, int]

MISSING = 'rbfly.streams.admin needs httpx, which is not installed: install the admin' \
    ' extra (pip install "rbfly[admin]")'
"""The error without httpx."""

def http_error(status: int, reason: str, url: str, user: str | None) -> AdminError:
    """
    The error of a management API's answer other than 200, naming what to
    do (the user, never the password).

    :param reason: The ``reason`` of the JSON answer ('' when none).
    """
    who = 'user {!r}'.format(user) if user else 'no user (the URI names none)'
    if status == 401 and reason == 'Not management user':
        return AdminAccessDenied(
            '{}: {} has no management tag: rabbitmqctl set_user_tags {} monitoring'.format(
                url, who, user or 'USER'))
    if status == 401 and 'virtual host' in reason:
        return AdminAccessDenied('{}: {} may not access the virtual host: {}'.format(
            url, who, reason))
    if status == 401:
        return AdminAuthError('{}: credentials of {} refused ({})'.format(
            url, who, reason or 'HTTP 401'))
    if status == 403:
        return AdminAccessDenied(
            '{}: {} may not read this ({}): give it the monitoring tag'.format(
                url, who, reason or 'HTTP 403'))
    if status == 404 and '/api/vhosts/' in url:
        return AdminNotFound('{}: no such virtual host (the URI\'s path names it)'.format(url))
    if status == 404 and '/api/stream/' in url and '/tracking' not in url:
        return AdminUnavailable(
            '{}: not found: the stream management plugin is off: {}'.format(url, PLUGINS))
    if status == 404:
        return AdminNotFound('{}: not found ({})'.format(url, reason or 'HTTP 404'))
    if status == 400 and url.endswith('/tracking'):
        return AdminNotSupported(
            '{}: this broker\'s management API has no stream tracking (RabbitMQ 4.0'
            ' has it)'.format(url))
    return AdminError('{}: HTTP {} {}'.format(url, status, reason).rstrip())

class Admin:
    """
    The management API of one broker (or cluster), one virtual host.

    Use it as an async context manager (its HTTP connections close at
    the end); each method makes one request or a few.
    """
    def __init__(
            self, base_url: str, *, vhost: str = '/', username: str | None = None,
            password: str | None = None, ssl: _ssl.SSLContext | None = None,
            timeout: float = 10.0,
    ) -> None:
        """
        :param base_url: The API's root, e.g. ``http://localhost:15672``.
        :param vhost: The virtual host to read.
        :param ssl: TLS context for ``https`` (default: Python's default
            context, the system's CAs).
        :param timeout: Seconds for a request.
        :raises AdminMissing: Without httpx.
        """
        try:
            import httpx
        except ImportError as ex:
            raise AdminMissing(MISSING) from ex
        self.base_url = base_url.rstrip('/')
        self.vhost = vhost
        self.username = username
        auth = None if username is None else (username, password or '')
        self._http: httpx.AsyncClient = httpx.AsyncClient(
            base_url=self.base_url, auth=auth,
            verify=ssl if ssl is not None else _ssl.create_default_context(),
            timeout=timeout, headers={'accept': 'application/json'},
        )

    @classmethod
    def from_uri(
            cls, uri: str, *, port: int = DEFAULT_PORT, scheme: str | None = None,
            ssl: _ssl.SSLContext | None = None, timeout: float = 10.0,
    ) -> Admin:
        """
        The management API of the broker of a ``rabbitmq-stream://`` URI:
        its host, user, password and virtual host.

        :param port: The management API's port.
        :param scheme: ``http`` or ``https`` (default: ``https`` for
            ``rabbitmq-stream+tls://``, else ``http``).
        :param ssl: TLS context for ``https`` (the stream client's may do).
        """
        tls = urlsplit(uri).scheme == Scheme.RABBITMQ_STREAM_TLS.value
        info = parse_uri(uri, (ssl or _ssl.create_default_context()) if tls else None)
        scheme = scheme or ('https' if tls else 'http')
        if scheme not in ('http', 'https'):
            raise ValueError('management API scheme {!r}: give http or https'.format(scheme))
        host = '[{}]'.format(info.host) if ':' in info.host else info.host
        return cls(
            '{}://{}:{}'.format(scheme, host, port), vhost=info.virtual_host,
            username=info.username, password=info.password, ssl=ssl, timeout=timeout,
        )

    async def __aenter__(self) -> tp.Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the HTTP connections."""
        await self._http.aclose()

    def __repr__(self) -> str:
        return 'Admin({!r}, vhost={!r}, username={!r})'.format(
            self.base_url, self.vhost, self.username)

    async def _get(self, path: str, **params: str) -> tp.Any:
        """
        The JSON answer to ``GET /api/{path}``.

        :raises AdminError: A subclass naming the URL and what to do.
        """
        import httpx  # (imported by __init__)
        url = '{}/api/{}'.format(self.base_url, path)
        logger.debug('management API: GET %s %s', url, params)
        try:
            response = await self._http.get('/api/' + path, params=params or None)
        except httpx.TransportError as ex:
            raise AdminUnavailable(
                '{}: no management API answers ({}: {}): check its port and scheme (http or'
                ' https), and that its plugins are on: {}'.format(
                    url, type(ex).__name__, ex or 'no answer', PLUGINS)) from ex
        if response.status_code != 200:
            try:
                reason = str(response.json().get('reason', ''))
            except (ValueError, AttributeError):
                reason = ''
            if response.status_code == 404 and path != self._path('vhosts', self.vhost):
                # every endpoint of a virtual host that does not exist is 404
                await self._get(self._path('vhosts', self.vhost))
            raise http_error(response.status_code, reason, url, self.username)
        try:
            return response.json()
        except ValueError:
            raise AdminUnavailable('{}: the answer is not JSON: not RabbitMQ\'s management'
                                   ' API? {}'.format(url, PLUGINS)) from None

    def _path(self, *names: str) -> str:
        return '/'.join(quote(n, safe='') for n in names)

    async def streams(self) -> list[StreamSummary]:
        """The streams of the virtual host, by name (super streams' partitions too)."""
        columns = 'name,vhost,type,leader,node,members,messages,segments,arguments'
        queues = await self._get(self._path('queues', self.vhost), columns=columns)
        found = []
        for q in queues:
            if q.get('type') != 'stream':
                continue
            leader = q.get('leader', q.get('node'))  # 3.10: the node is the leader
            found.append(StreamSummary(
                name=str(q['name']), vhost=str(q['vhost']),
                leader=None if leader is None else str(leader),
                replicas=tuple(str(n) for n in q.get('members', ()) if n != leader),
                messages=_int(q.get('messages')), segments=_int(q.get('segments')),
                arguments=dict(_object(q.get('arguments'))),
            ))
        return sorted(found, key=lambda s: s.name)

    async def super_streams(self) -> list[SuperStreamSummary]:
        """The super streams of the virtual host, by name, with their partitions."""
        path = self._path('exchanges', self.vhost)
        exchanges = await self._get(path, columns='name,arguments')
        names = sorted(
            str(e['name']) for e in exchanges if _object(e.get('arguments')).get('x-super-stream')
        )
        return [await self._super_stream(name) for name in names]

    async def _super_stream(self, name: str) -> SuperStreamSummary:
        path = self._path('exchanges', self.vhost, name, 'bindings', 'source')
        bindings = sorted(
            (b for b in await self._get(path) if b.get('destination_type') == 'queue'),
            key=lambda b: (_object(b.get('arguments')).get('x-stream-partition-order', 0),
                           b['destination']),
        )
        return SuperStreamSummary(
            name=name, vhost=self.vhost,
            partitions=tuple(str(b['destination']) for b in bindings),
            keys=tuple(str(b['routing_key']) for b in bindings),
        )

    async def tracking(self, stream: str) -> Tracking:
        """
        The offsets stored under names on a stream, and its named
        publishers' last publishing ids.

        :raises AdminNotSupported: On a broker without the endpoint (3.10).
        :raises AdminNotFound: When there is no such stream.
        """
        found = await self._get(self._path('stream', self.vhost, stream, 'tracking'))
        return Tracking(offsets=_ints(found.get('offsets')), writers=_ints(found.get('writers')))

    async def _tracked(self, streams: set[str]) -> dict[str, Tracking]:
        """The tracking of each stream that has it; none on a broker without it."""
        found = {}
        for stream in sorted(streams):
            try:
                found[stream] = await self.tracking(stream)
            except AdminNotSupported:
                return {}
            except AdminNotFound:  # deleted since it was listed
                continue
        return found

    async def _clients(self) -> dict[str, str]:
        """The name each client gave its connection (``connection_name``), by connection."""
        path = self._path('stream', 'connections', self.vhost)
        return {
            str(c['name']): str(c['client_properties']['connection_name'])
            for c in await self._get(path, columns='name,client_properties')
            if _object(c.get('client_properties')).get('connection_name')
        }

    async def consumers(self, stream: str | None = None) -> list[ConsumerSummary]:
        """The subscriptions in the virtual host (to ``stream`` only, when given)."""
        listed = await self._get(self._path('stream', 'consumers', self.vhost))
        clients = await self._clients()
        found = [_consumer(c, clients) for c in listed]
        return sorted(
            (c for c in found if stream is None or c.stream == stream),
            key=lambda c: (c.stream, c.name or '', c.connection, c.subscription_id),
        )

    async def groups(
            self, stream: str | None = None, *, super_stream: str | None = None,
    ) -> list[GroupSummary]:
        """
        The consumer groups of the virtual host, a group for each stream
        and name: on ``stream`` only, or on the partitions of
        ``super_stream``, when given. With the offset stored under each
        name where the broker tells it (4.0 does); on the streams asked
        for, a name with an offset stored and no member running is a
        group without members too.
        """
        members: dict[tuple[str, str], list[ConsumerSummary]] = {}
        for c in await self.consumers(stream):
            if c.name is None or (super_stream is not None and c.super_stream != super_stream):
                continue
            members.setdefault((c.stream, c.name), []).append(c)
        asked = set() if stream is None else {stream}
        if super_stream is not None:
            asked.update((await self._super_stream(super_stream)).partitions)
        tracked = await self._tracked(asked | {s for s, _ in members})
        for s in asked & tracked.keys():
            for name in tracked[s].offsets:
                members.setdefault((s, name), [])
        return [GroupSummary(
            stream=s, name=name, super_stream=group[0].super_stream if group else super_stream,
            members=tuple(group), stored=tracked[s].offsets.get(name) if s in tracked else None,
        ) for (s, name), group in sorted(members.items())]

    async def publishers(self, stream: str | None = None) -> list[PublisherSummary]:
        """
        The publishers in the virtual host (of ``stream`` only, when
        given), with each named one's last publishing id where the broker
        tells it (4.0 does).
        """
        listed = [
            p for p in await self._get(self._path('stream', 'publishers', self.vhost))
            if stream is None or p['queue']['name'] == stream
        ]
        clients = await self._clients()
        tracked = await self._tracked({p['queue']['name'] for p in listed if p.get('reference')})
        found = []
        for p in listed:
            name, ref = str(p['queue']['name']), p.get('reference') or None
            writers = tracked[name].writers if name in tracked else {}
            found.append(PublisherSummary(
                stream=name, vhost=str(p['queue']['vhost']), connection=_connection(p),
                client=clients.get(_connection(p)), publisher_id=int(p['publisher_id']),
                reference=None if ref is None else str(ref),
                published=_int(p.get('published')), confirmed=_int(p.get('confirmed')),
                errored=_int(p.get('errored')),
                sequence=writers.get(ref) if ref is not None else None,
            ))
        return sorted(found, key=lambda p: (p.stream, p.reference or '', p.connection,
                                            p.publisher_id))

def _int(value: object) -> int | None:
    """A count of the JSON answer; ``None`` when it is missing (or not a number)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None

def _ints(value: object) -> dict[str, int]:
    """The ``{name: number}`` object of a tracking answer."""
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if _int(v) is not None}

def _object(value: object) -> Mapping[str, tp.Any]:
    """
    A JSON object of the answer; ``{}`` for anything else: RabbitMQ 4.0
    gives ``connection_details`` as ``[]`` while its statistics of a new
    connection are not in yet.
    """
    return value if isinstance(value, dict) else {}

def _connection(item: Mapping[str, tp.Any]) -> str:
    """The connection's name (``client -> broker`` addresses; '' when not known yet)."""
    return str(_object(item.get('connection_details')).get('name', ''))

def _consumer(c: Mapping[str, tp.Any], clients: Mapping[str, str]) -> ConsumerSummary:
    """A consumer of ``/api/stream/consumers``."""
    properties = _object(c.get('properties'))
    # RabbitMQ 3.10 has no single active consumer: no `active`, each is
    single_active = properties.get('single-active-consumer') == 'true'
    name, super_stream = properties.get('name'), properties.get('super-stream')
    return ConsumerSummary(
        stream=str(c['queue']['name']), vhost=str(c['queue']['vhost']),
        connection=_connection(c), client=clients.get(_connection(c)),
        subscription_id=int(c['subscription_id']),
        name=str(name) if name else None, super_stream=str(super_stream) if super_stream else None,
        single_active=single_active, active=bool(c.get('active', True)),
        status=str(c.get('activity_status', 'up')), offset=_int(c.get('offset')),
        offset_lag=_int(c.get('offset_lag')), consumed=_int(c.get('consumed')),
        credits=_int(c.get('credits')),
    )

__all__ = [
    'DEFAULT_PORT', 'MISSING', 'PLUGINS', 'Admin', 'AdminAccessDenied', 'AdminAuthError',
    'AdminError', 'AdminMissing', 'AdminNotFound', 'AdminNotSupported', 'AdminUnavailable',
    'ConsumerSummary', 'GroupSummary', 'PublisherSummary', 'StreamSummary',
    'SuperStreamSummary', 'Tracking', 'http_error',
]
