"""
One client connection of the fake broker (sans-IO): the handshake, then
the client's requests, each answered through the ``write`` callable the
session was given; the subscriptions and publishers it holds.

The broker itself, what the sessions share (the store, the groups of
single active consumers), is :py:class:`rbfly.testing.core.BrokerCore`; a
session knows it as the :py:class:`SessionHost` it was given. A group
(:py:mod:`rbfly.testing.groups`) tells its members through their
sessions (:py:meth:`Session.consumer_update`); a session tells the broker
of their answers.

The requests that hold nothing of the session (streams, publishers'
sequences, stored offsets, super streams) are answered by
:py:mod:`rbfly.testing.admin`, given the broker and the session's
connection.
"""


from __future__ import annotations

import itertools
import logging
import struct
import typing as tp
from collections.abc import Callable
from dataclasses import dataclass

from ..error import FrameDecodeError
from ..streams.protocol import codec
from ..streams.protocol.base import (
    CommandVersion,
    OffsetSpec,
    PublishingError,
)
from ..streams.protocol.commands import (
    Close,
    CloseResponse,
    Command,
    ConsumerUpdate,
    ConsumerUpdateResponse,
    Create,
    CreateSuperStream,
    Credit,
    CreditResponse,
    DeclarePublisher,
    DeclarePublisherResponse,
    Delete,
    DeletePublisher,
    DeletePublisherResponse,
    DeleteSuperStream,
    Deliver,
    DeliverV2,
    ExchangeCommandVersions,
    ExchangeCommandVersionsResponse,
    Heartbeat,
    Metadata,
    MetadataUpdate,
    Open,
    OpenResponse,
    Partitions,
    PeerProperties,
    PeerPropertiesResponse,
    PublishConfirm,
    PublishError,
    QueryOffset,
    QueryPublisherSequence,
    ResolveOffsetSpec,
    Route,
    SaslAuthenticate,
    SaslAuthenticateResponse,
    SaslHandshake,
    SaslHandshakeResponse,
    StoreOffset,
    StreamStats,
    Subscribe,
    SubscribeResponse,
    Tune,
    TuneResponse,
    Unsubscribe,
    UnsubscribeResponse,
)
from ..streams.protocol.constants import Key, OffsetSpecType, ResponseCode
from ..streams.protocol.frames import FrameReader
from . import admin
from .config import BrokerConfig
from .publish import read_publish
from .store import Chunk, Entry, Store, StreamLog

logger = logging.getLogger('rbfly.testing')

_U16 = struct.Struct('>H')  # a frame's key

RC = ResponseCode

FRAME_MAX = 1024 * 1024
"""Largest frame the fake broker takes and offers in ``Tune``, as RabbitMQ's default."""

HEARTBEAT = 60
"""Heartbeat interval offered in ``Tune``, as RabbitMQ's default."""

@dataclass(eq=False)
class BrokerSubscription:
    """
    A subscription of a session.

    :ivar position: Index of the next chunk to deliver.
    :ivar active: Whether the broker last told it it is active (a single
        active consumer; RabbitMQ's consumer ``active`` flag); ``True`` for
        a subscription in no group.
    :ivar reading: Whether chunks are delivered: a single active consumer
        reads from its answer to ``ConsumerUpdate(active=true)`` until
        ``ConsumerUpdate(active=false)`` is sent (RabbitMQ opens its
        segment reader then and closes it at once on a step down).
    :ivar group: Name of its single-active-consumer group, if in one.
    """
    session: Session
    subscription_id: int
    stream: str
    spec: OffsetSpec
    credit: int
    filters: frozenset[str] = frozenset()
    match_unfiltered: bool = False
    position: int = 0
    active: bool = True
    reading: bool = True
    group: str | None = None

    def wants(self, chunk: Chunk) -> bool:
        """Whether the subscription's filter takes the chunk (no filter: all)."""
        if not self.filters:
            return True
        return bool(self.filters & chunk.filter_values) or (
            self.match_unfiltered and chunk.unfiltered
        )

@dataclass(eq=False)
class Publisher:
    publisher_id: int
    reference: str
    stream: str

@dataclass(frozen=True)
class ConsumerUpdateSent:
    """
    A ``ConsumerUpdate`` the broker sent and the client did not answer yet.

    :ivar sub: The subscription told.
    :ivar active: What it was told.
    :ivar stepping_down: Told to step down, its answer activates the
        member chosen then (RabbitMQ's ``stepping_down``).
    :ivar sent: When it was sent (the core's clock, milliseconds).
    """
    sub: BrokerSubscription
    active: bool
    stepping_down: bool
    sent: int

class SessionHost(tp.Protocol):
    """
    What a session asks of the broker it belongs to
    (:py:class:`rbfly.testing.core.BrokerCore`): what the sessions share,
    and the steps that reach the other sessions.
    """
    @property
    def config(self) -> BrokerConfig:
        """What the broker says of itself and whom it lets in."""

    @property
    def store(self) -> Store:
        """The streams, publishers' sequences, offsets and super streams."""

    def clock(self) -> int:
        """Milliseconds since the Unix epoch, for chunk timestamps."""

    def published(self, stream: str) -> None:
        """A chunk was written: deliver it to the stream's subscribers."""

    def stream_deleted(self, stream: str) -> None:
        """Tell every session using the stream, and forget their use of it."""

    def may_join(self, stream: str, name: str, partition: int) -> bool:
        """
        Whether a subscription may join the group of a stream and a name:
        not when the group is of another partition index (RabbitMQ's
        ``partition_index_conflict``).
        """

    def join(self, sub: BrokerSubscription, partition: int) -> None:
        """Add a subscription to its single-active-consumer group."""

    def leave(self, sub: BrokerSubscription) -> None:
        """Remove a subscription from its group; the next one takes over."""

    def answered(self, update: ConsumerUpdateSent) -> None:
        """A member answered a ``ConsumerUpdate``; after a step down, activate the next one."""

    def session_closed(self, session: Session) -> None:
        """A session's connection is gone: forget the session."""

class Session:
    """
    One client connection: the handshake, then the client's requests.

    A frame the broker cannot read, or a request before the handshake
    ends, closes the connection, as RabbitMQ does.
    """
    def __init__(
            self, core: SessionHost, write: Callable[[bytes], None], close: Callable[[], None],
    ) -> None:
        self.core = core
        self._write = write
        self._close = close
        self._reader = FrameReader(FRAME_MAX)
        self.user: str | None = None
        self.opened = False
        self.closed = False
        self.deliver_version = 1
        self.publishers: dict[int, Publisher] = {}
        self.subscriptions: dict[int, BrokerSubscription] = {}
        self.client_properties: dict[str, str] = {}
        self._updates: dict[int, ConsumerUpdateSent] = {}  # not answered, by correlation id
        self._correlation = itertools.count(1)

    #
    # input
    #
    def receive_data(self, data: bytes) -> None:
        """Take bytes from the client and answer every complete frame."""
        if self.closed:
            return
        self._reader.feed(data)
        try:
            for frame in self._reader:
                self._frame(frame)
                if self.closed:
                    return
        except FrameDecodeError as ex:
            logger.warning('fake broker: bad frame from the client: %s', ex)
            # the frame reader refuses a frame over the negotiated size
            # before reading it, as RabbitMQ does with FRAME_TOO_LARGE
            too_large = 'exceeds the maximum' in str(ex)
            self.close(RC.FRAME_TOO_LARGE if too_large else RC.UNKNOWN_FRAME, str(ex))
        except (struct.error, UnicodeDecodeError, ValueError) as ex:
            # a backstop: whatever a decoder let through closes the
            # connection as a bad frame, never escapes to the event loop
            logger.warning('fake broker: bad frame from the client: %s', ex)
            self.close(RC.UNKNOWN_FRAME, str(ex))

    def connection_lost(self) -> None:
        """The client went away: drop its publishers and subscriptions."""
        self.closed = True
        for sub in list(self.subscriptions.values()):
            self._drop(sub)
        self.publishers.clear()
        self.core.session_closed(self)

    def drop(self) -> None:
        """Close the connection at once, sending nothing (a broker gone away)."""
        self.connection_lost()
        self._close()

    def close(self, code: int, reason: str) -> None:
        """Send ``Close`` and close the connection."""
        if not self.closed:
            self._send(Close(code, reason), next(self._correlation))
            self.connection_lost()
            self._close()

    def _frame(self, frame: memoryview) -> None:
        key = _U16.unpack_from(frame)[0] if len(frame) >= 2 else -1
        if key == Key.PUBLISH:
            if not self.opened:
                raise FrameDecodeError('Publish before the connection is open', 0)
            self._publish(*read_publish(frame))
            return
        decoded = codec.decode_frame(frame)
        command, corr = decoded.command, decoded.correlation_id
        handler = _HANDLERS.get(type(command))
        if handler is None:
            raise FrameDecodeError('the fake broker does not take {}'.format(
                type(command).__name__), 0)
        if not self.opened and type(command) not in _HANDSHAKE:
            raise FrameDecodeError('{} before the connection is open'.format(
                type(command).__name__), 0)
        handler(self, command, corr)

    #
    # output
    #
    def _send(self, command: Command, correlation_id: int | None = None) -> None:
        if not self.closed:
            self._write(codec.encode(command, correlation_id))

    #
    # handshake and connection
    #
    def _peer_properties(self, c: PeerProperties, corr: int) -> None:
        self.client_properties = dict(c.properties)
        props = {'product': 'rbfly.testing', 'version': self.core.config.version,
                 'platform': 'Python'}
        self._send(PeerPropertiesResponse(corr, RC.OK, props))

    def _sasl_handshake(self, c: SaslHandshake, corr: int) -> None:
        self._send(SaslHandshakeResponse(corr, RC.OK, ['PLAIN']))

    def _sasl_authenticate(self, c: SaslAuthenticate, corr: int) -> None:
        if c.mechanism != 'PLAIN':
            self._send(SaslAuthenticateResponse(corr, RC.SASL_MECHANISM_NOT_SUPPORTED, None))
            return
        parts = bytes(c.data or b'').split(b'\0')
        try:
            user, password = (parts[1].decode(), parts[2].decode()) \
                if len(parts) == 3 else ('', '')
        except UnicodeDecodeError:
            user, password = '', ''  # no such user: refused
        if self.core.config.users.get(user) != password or (
                self.user is not None and user != self.user):
            code = RC.AUTHENTICATION_FAILURE if self.user is None or user == self.user \
                else RC.SASL_CANNOT_CHANGE_USERNAME
            self._send(SaslAuthenticateResponse(corr, code, None))
            if self.user is None:
                self.connection_lost()
                self._close()
            return
        first = self.user is None
        self.user = user
        self._send(SaslAuthenticateResponse(corr, RC.OK, None))
        if first:
            self._send(Tune(FRAME_MAX, HEARTBEAT))

    def _tune(self, c: TuneResponse, corr: None) -> None:
        self._reader.max_frame_size = min(c.frame_max or FRAME_MAX, FRAME_MAX)

    def _open(self, c: Open, corr: int) -> None:
        config = self.core.config
        if self.user is None or c.virtual_host not in config.virtual_hosts:
            self._send(OpenResponse(corr, RC.VIRTUAL_HOST_ACCESS_FAILURE, {}))
            self.connection_lost()
            self._close()
            return
        self.opened = True
        self._send(OpenResponse(corr, RC.OK, {
            'advertised_host': config.host, 'advertised_port': str(config.port),
        }))

    def _exchange_versions(self, c: ExchangeCommandVersions, corr: int) -> None:
        ours = [CommandVersion(Key.PUBLISH, 1, 2), CommandVersion(Key.DELIVER, 1, 2)]
        for v in c.versions:
            if v.key == Key.DELIVER and v.max_version >= 2:
                self.deliver_version = 2
        self._send(ExchangeCommandVersionsResponse(corr, RC.OK, ours))

    def _heartbeat(self, c: Heartbeat, corr: None) -> None:
        self._send(Heartbeat())

    def _close_request(self, c: Close, corr: int) -> None:
        self._send(CloseResponse(corr, RC.OK))
        self.connection_lost()
        self._close()

    def _close_response(self, c: CloseResponse, corr: int) -> None:
        pass

    #
    # streams (what holds no state of the session: rbfly.testing.admin)
    #
    def _log(self, stream: str) -> StreamLog | None:
        return self.core.store.streams.get(stream)

    def stream_gone(self, stream: str) -> None:
        """A stream was deleted: ``MetadataUpdate``, then its items are gone."""
        pubs = [p for p in self.publishers.values() if p.stream == stream]
        subs = [s for s in self.subscriptions.values() if s.stream == stream]
        if pubs or subs:
            self._send(MetadataUpdate(RC.STREAM_NOT_AVAILABLE, stream))
        for p in pubs:
            del self.publishers[p.publisher_id]
        for s in subs:
            del self.subscriptions[s.subscription_id]
            self._forget_updates(s)

    #
    # publishing
    #
    def _declare_publisher(self, c: DeclarePublisher, corr: int) -> None:
        if c.publisher_id in self.publishers:
            code = RC.PRECONDITION_FAILED
        elif self._log(c.stream) is None:
            code = RC.STREAM_DOES_NOT_EXIST
        elif c.reference and any(
                p.reference == c.reference and p.stream == c.stream
                for p in self.publishers.values()):
            # one publisher per name and stream on a connection (RabbitMQ
            # 4.3 takes one on another connection)
            code = RC.PRECONDITION_FAILED
        else:
            self.publishers[c.publisher_id] = Publisher(c.publisher_id, c.reference, c.stream)
            code = RC.OK
        self._send(DeclarePublisherResponse(corr, code))

    def _delete_publisher(self, c: DeletePublisher, corr: int) -> None:
        found = self.publishers.pop(c.publisher_id, None)
        self._send(DeletePublisherResponse(
            corr, RC.OK if found is not None else RC.PUBLISHER_DOES_NOT_EXIST,
        ))

    def _publish(self, publisher_id: int, messages: list[tuple[int, Entry]]) -> None:
        publisher = self.publishers.get(publisher_id)
        log = None if publisher is None else self._log(publisher.stream)
        if publisher is None or log is None:
            code = RC.PUBLISHER_DOES_NOT_EXIST if publisher is None else RC.STREAM_DOES_NOT_EXIST
            self._send(PublishError(publisher_id, [
                PublishingError(pid, code) for pid, _ in messages
            ]))
            return
        store = self.core.store
        key = (publisher.stream, publisher.reference)
        entries = []
        for pid, entry in messages:
            # a named publisher's id at or below the last stored one is a
            # duplicate: confirmed, not stored (RabbitMQ's deduplication)
            if publisher.reference:
                last = store.sequences.get(key)  # none stored: nothing is a duplicate
                if last is not None and pid <= last:
                    continue
                store.sequences[key] = pid
            entries.append(entry)
        if entries:
            log.append(entries, self.core.clock())
        self._send(PublishConfirm(publisher_id, [pid for pid, _ in messages]))
        if entries:
            self.core.published(publisher.stream)

    #
    # subscribing
    #
    def _subscribe(self, c: Subscribe, corr: int) -> None:
        log = self._log(c.stream)
        props = dict(c.properties)
        if c.subscription_id in self.subscriptions:
            self._send(SubscribeResponse(corr, RC.SUBSCRIPTION_ID_ALREADY_EXISTS))
            return
        if log is None:
            self._send(SubscribeResponse(corr, RC.STREAM_DOES_NOT_EXIST))
            return
        filters = frozenset(v for k, v in props.items() if k.startswith('filter.'))
        sac = props.get('single-active-consumer') == 'true'
        if sac and not props.get('name'):
            self._send(SubscribeResponse(corr, RC.PRECONDITION_FAILED))
            return
        super_stream = props.get('super-stream')
        partition = -1 if super_stream is None \
            else self.core.store.partition_index(super_stream, c.stream)
        if sac and not self.core.may_join(c.stream, props['name'], partition):
            self._send(SubscribeResponse(corr, RC.PRECONDITION_FAILED))
            return
        sub = BrokerSubscription(
            self, c.subscription_id, c.stream, c.offset_spec, c.credit, filters,
            props.get('match-unfiltered') == 'true', log.start(c.offset_spec),
            group=props['name'] if sac else None,
        )
        self.subscriptions[c.subscription_id] = sub
        self._send(SubscribeResponse(corr, RC.OK))
        if sac:
            sub.active = sub.reading = False
            self.core.join(sub, partition)
        else:
            self.pump(sub)

    def _credit(self, c: Credit, corr: None) -> None:
        sub = self.subscriptions.get(c.subscription_id)
        if sub is None:
            self._send(CreditResponse(RC.SUBSCRIPTION_ID_DOES_NOT_EXIST, c.subscription_id))
            return
        sub.credit += c.credit
        self.pump(sub)

    def _unsubscribe(self, c: Unsubscribe, corr: int) -> None:
        sub = self.subscriptions.get(c.subscription_id)
        if sub is None:
            self._send(UnsubscribeResponse(corr, RC.SUBSCRIPTION_ID_DOES_NOT_EXIST))
            return
        self._drop(sub)
        self._send(UnsubscribeResponse(corr, RC.OK))

    def _drop(self, sub: BrokerSubscription) -> None:
        self.subscriptions.pop(sub.subscription_id, None)
        self._forget_updates(sub)
        if sub.group is not None:
            self.core.leave(sub)

    def _forget_updates(self, sub: BrokerSubscription) -> None:
        for corr in [k for k, v in self._updates.items() if v.sub is sub]:
            del self._updates[corr]

    def pump(self, sub: BrokerSubscription) -> None:
        """Deliver the chunks the subscription has credit for."""
        log = self._log(sub.stream)
        if log is None or not sub.reading or self.closed:
            return
        chunks = log.chunks
        while sub.credit > 0 and sub.position < len(chunks):
            chunk = chunks[sub.position]
            sub.position += 1
            if not sub.wants(chunk):
                continue
            sub.credit -= 1
            if self.deliver_version == 2:
                self._send(DeliverV2(sub.subscription_id, chunks[-1].first_offset, chunk.data))
            else:
                self._send(Deliver(sub.subscription_id, chunk.data))

    def consumer_update(
            self, sub: BrokerSubscription, active: bool, stepping_down: bool = False,
    ) -> None:
        """
        Tell a single active consumer it is active (it reads once it
        answered where to start) or not (it reads no more, at once); a
        subscription gone meanwhile is told nothing.
        """
        if self.subscriptions.get(sub.subscription_id) is not sub:
            return
        sub.active = active
        if not active:
            sub.reading = False
        corr = next(self._correlation)
        self._updates[corr] = ConsumerUpdateSent(sub, active, stepping_down, self.core.clock())
        self._send(ConsumerUpdate(sub.subscription_id, active), corr)

    def overdue(self, before: int) -> bool:
        """Whether a ``ConsumerUpdate`` sent before the time ``before`` is not answered."""
        return any(u.sent < before for u in self._updates.values())

    def _consumer_update_response(self, c: ConsumerUpdateResponse, corr: int) -> None:
        update = self._updates.pop(c.correlation_id, None)
        if update is None:
            return  # an answer for a subscription gone meanwhile
        sub = update.sub
        log = self._log(sub.stream)
        if log is None or self.subscriptions.get(sub.subscription_id) is not sub:
            return
        if sub.active:
            # active when the answer comes (as RabbitMQ, whichever update
            # it answers): read from where the answer says
            spec = sub.spec if c.offset_spec.type == OffsetSpecType.NONE else c.offset_spec
            sub.position = log.start(spec)
            sub.reading = True
            self.pump(sub)
        self.core.answered(update)

_Handler: tp.TypeAlias = Callable[[Session, tp.Any, tp.Any], None]

def _store(handler: Callable[[admin.StoreHost, admin.Send, tp.Any, tp.Any], None]) -> _Handler:
    """A request of :py:mod:`rbfly.testing.admin`, answered on the session's connection."""
    def handle(session: Session, command: tp.Any, corr: tp.Any) -> None:
        handler(session.core, session._send, command, corr)
    return handle

_HANDLERS: dict[type, _Handler] = {
    PeerProperties: Session._peer_properties,
    SaslHandshake: Session._sasl_handshake,
    SaslAuthenticate: Session._sasl_authenticate,
    TuneResponse: Session._tune,
    Open: Session._open,
    ExchangeCommandVersions: Session._exchange_versions,
    Heartbeat: Session._heartbeat,
    Close: Session._close_request,
    CloseResponse: Session._close_response,
    Create: _store(admin.create),
    Delete: _store(admin.delete),
    Metadata: _store(admin.metadata),
    StreamStats: _store(admin.stream_stats),
    ResolveOffsetSpec: _store(admin.resolve),
    DeclarePublisher: Session._declare_publisher,
    DeletePublisher: Session._delete_publisher,
    QueryPublisherSequence: _store(admin.query_sequence),
    Subscribe: Session._subscribe,
    Credit: Session._credit,
    Unsubscribe: Session._unsubscribe,
    ConsumerUpdateResponse: Session._consumer_update_response,
    StoreOffset: _store(admin.store_offset),
    QueryOffset: _store(admin.query_offset),
    CreateSuperStream: _store(admin.create_super_stream),
    DeleteSuperStream: _store(admin.delete_super_stream),
    Partitions: _store(admin.partitions),
    Route: _store(admin.route),
}
_HANDSHAKE = frozenset({
    PeerProperties, SaslHandshake, SaslAuthenticate, TuneResponse, Open, Heartbeat, Close,
    CloseResponse,
})

__all__ = [
    'FRAME_MAX', 'HEARTBEAT', 'BrokerSubscription', 'ConsumerUpdateSent', 'Publisher', 'Session',
]
