"""
The client's connections: its own (opened lazily, reopened after a loss
while it holds publishers or subscriptions) and those to the nodes of a
cluster where publishers and subscriptions are placed.

A connection holds at most ``publishers_per_connection`` publishers and
``subscriptions_per_connection`` subscriptions (256 each, the protocol's
limit): when the client's own connection is full, the client opens
another one to the same broker, and so on. Such a connection, as one to
another node, is shared by what is placed there, closes with the last of
what it holds, and is not reopened when lost: what it held is placed anew
(the node may be gone for good).
"""

from __future__ import annotations

import functools
import logging
import typing as tp
from time import monotonic

from ..aio.connection import StreamsProtocol
from ..aio.manager import ConnectionManager
from ..aio.records import Owner, abandoned
from ..backoff import Pace
from ..error import ConnectionLost
from ..events import ConnectionEvent, ConnectionState
from ..health import (
    ConnectionHealth,
    Health,
    HealthLimits,
    PublisherHealth,
    SubscriptionHealth,
    judge,
)
from ..metrics import Counters, Metrics, StreamMetrics, stream_metrics
from ..protocol.commands import CommandBase, MetadataUpdate, Request
from .connector import Connector, Where, node_of
from .options import ClientOptions, Kind
from .tasks import Background

if tp.TYPE_CHECKING:
    from ..publishers.awaited import PublisherTrait
    from ..subscriptions.state import SubscriptionState
    from ..subscriptions.subscription import Subscription

    Manager: tp.TypeAlias = ConnectionManager[PublisherTrait, Subscription]
    """A connection manager of the client: it holds its publishers and subscriptions."""

logger = logging.getLogger('rbfly.streams.client')

R = tp.TypeVar('R', bound=CommandBase)

class RecoveryHooks(tp.Protocol):
    """What the connections ask of the client's recovery (:py:mod:`.recovery`)."""
    async def recover_publisher(self, protocol: StreamsProtocol, publisher: PublisherTrait) -> None:
        """Declare a publisher of the client's own connection again."""

    async def restore_publisher(self, protocol: StreamsProtocol, publisher: PublisherTrait) -> None:
        """Declare a publisher again on a connection."""

    async def restore_subscription(self, protocol: StreamsProtocol, sub: Subscription) -> None:
        """Subscribe again on a connection."""

    def node_lost(self, manager: Manager) -> None:
        """A connection to a node was lost: place what it held anew."""

    def placing(self, item: object) -> bool:
        """
        Whether a publisher or subscription is being declared on a node's
        connection now (its loss is the placer's to handle).
        """

    def metadata_update(self, protocol: StreamsProtocol, update: MetadataUpdate) -> None:
        """The broker says on a connection that a stream changed."""

class Connections:
    """
    Owner of the client's connection managers.

    :param options: The client's options.
    :param connector: Opens connections.
    :param counters: The client's metrics (connections lost).
    :param tasks: Where closing a node's connection runs.
    """
    def __init__(
            self, options: ClientOptions, connector: Connector, counters: Counters,
            tasks: Background,
    ) -> None:
        self._options = options
        self._connector = connector
        self._counters = counters
        self._tasks = tasks
        self._hooks: RecoveryHooks | None = None
        self.own = ConnectionManager(
            self._connect_own, options.reconnect,
            self._recover_publisher, self._restore_subscription, notify=self._notify,
        )
        # connections besides the client's own, by where they go, and
        # those of them that hold one subscription and nothing else
        self._nodes: dict[Where, list[Manager]] = {}
        self._alone: set[Manager] = set()
        # the pace of the connections to each node: one lost before any
        # progress delays the next one there, whichever manager opens it
        self._paces: dict[Where, Pace] = {}

    def bind(self, hooks: RecoveryHooks) -> None:
        """
        Give the recovery the connections call after a loss (bound once:
        the recovery itself places publishers and subscriptions on these
        connections).
        """
        assert self._hooks is None
        self._hooks = hooks

    @property
    def hooks(self) -> RecoveryHooks:
        assert self._hooks is not None, 'Connections.bind() was not called'
        return self._hooks

    #
    # the client's own connection
    #

    @property
    def protocol(self) -> StreamsProtocol | None:
        """The client's own connection, when there is one."""
        return self.own.protocol

    async def get(self) -> StreamsProtocol:
        """The client's own connection, opened (or recovered) when needed."""
        return await self.own.get()

    async def call(self, command: Request[R], context: str = '') -> R:
        """
        Send an idempotent request (stream management, queries) on the
        client's own connection; when the connection is lost before the
        response, send it once more on a new connection. The response is
        of the class the request names (see
        :py:meth:`StreamsProtocol.request <rbfly.streams.aio.connection.StreamsProtocol.request>`).
        """
        protocol = await self.get()
        try:
            return await protocol.request(command, context)
        except ConnectionLost:
            logger.info('connection lost during %s; retrying', type(command).__name__)
        protocol = await self.get()
        return await protocol.request(command, context)

    async def wait_recovery(self, publisher: PublisherTrait) -> None:
        """
        Wait until the connection is back and the publisher is declared on
        it again (a publisher whose stream elects a new leader waits on an
        open connection; it is checked again every second).
        """
        await self.own.wait_recovery()
        await publisher.wait_ready(1)

    async def _connect_own(self) -> StreamsProtocol:
        return await self._connector.connect(self._metadata_update)

    #
    # connections to nodes
    #

    def has_room(self, manager: Manager, kind: Kind) -> bool:
        """
        Whether a connection holds fewer publishers (or subscriptions) than
        it may; an id ended and not answered yet by the broker counts as
        held (it stays taken until then: subscriptions ending and starting
        in quick succession filled a connection's 256 ids with 1,000
        streams read by one process).
        """
        held = manager.publishers if kind == 'publishers' else manager.subscriptions
        protocol = manager.protocol
        pending = 0 if protocol is None else abandoned(protocol, kind)
        return len(held) + pending < self._options.per_connection(kind)

    def node_manager(self, where: Where, kind: Kind, alone: bool = False) -> Manager:
        """
        A connection to a node (``None``: the client's own broker) with
        room for one more publisher or subscription (``kind``); opened
        when each one there is full. With ``alone``, a new connection, for
        one subscription and nothing else (see
        :py:func:`~.placement.sac_cleanup_reliable`).
        """
        managers = self._nodes.setdefault(where, [])
        for manager in managers if not alone else ():
            if manager not in self._alone and self.has_room(manager, kind):
                return manager
        manager = ConnectionManager(
            functools.partial(self._connect_node, where), self._options.reconnect,
            self._restore_publisher, self._restore_subscription,
            on_lost=self._node_lost, notify=self._notify,
            pace=self._paces.setdefault(where, Pace(self._options.reconnect)),
            claimed=self._placing,
        )
        managers.append(manager)
        if alone:
            self._alone.add(manager)
        return manager

    @property
    def nodes(self) -> tp.Mapping[Where, list[Manager]]:
        """The connections besides the client's own, by where they go (read only)."""
        return self._nodes

    def connected(self) -> set[Where]:
        """Where connections besides the client's own go."""
        return set(self._nodes)

    async def _connect_node(self, where: Where) -> StreamsProtocol:
        return await self._connector.connect_node(where, self.own.protocol, self._metadata_update)

    def forget(self, manager: Manager) -> None:
        """A node's connection is not to be used any more."""
        self._alone.discard(manager)
        for where, managers in list(self._nodes.items()):
            if manager in managers:
                managers.remove(manager)
            if not managers:
                del self._nodes[where]

    def release(self, owner: Owner | None) -> bool:
        """
        Close a node's connection when it holds nothing any more (``owner``:
        what held a publisher or subscription that ended, as the records
        give it back); true when it is closing (what was on it needs no
        deleting).
        """
        if not isinstance(owner, ConnectionManager) or owner is self.own \
                or owner.subscriptions or owner.publishers:
            return False
        manager: Manager = owner  # the client's managers hold its publishers and subscriptions
        self.forget(manager)
        self._tasks.spawn(manager.close())
        return True

    def node_managers(self) -> list[Manager]:
        """The managers of the connections besides the client's own."""
        return [m for ms in self._nodes.values() for m in ms]

    def managers(self) -> list[Manager]:
        """The managers of all the client's connections, its own first."""
        return [self.own, *self.node_managers()]

    def open_protocols(self) -> list[StreamsProtocol]:
        """The client's open connections, its own first."""
        return [
            m.protocol for m in self.managers()
            if m.protocol is not None and m.protocol.is_open
        ]

    async def close_nodes(self) -> None:
        """Close the connections to nodes."""
        managers = self.node_managers()
        self._nodes.clear()
        for manager in managers:
            await manager.close()

    def metrics(self, counters: Counters) -> Metrics:
        """The client's counters, and what its connections hold now."""
        managers = self.managers()
        publishers = [p for m in managers for p in m.publishers]
        subscriptions = [s for m in managers for s in m.subscriptions]
        c = counters
        return Metrics(
            published=c.published,
            confirmed=c.confirmed,
            errored=c.errored,
            chunks=c.chunks,
            chunk_bytes=c.chunk_bytes,
            consumed=c.consumed,
            connections_opened=c.connections_opened,
            connections_lost=c.connections_lost,
            connections=len(self.open_protocols()),
            publishers=len(publishers),
            subscriptions=len(subscriptions),
            outstanding_confirms=sum(p.unconfirmed for p in publishers),
            buffered_chunks=sum(s.buffered_chunks for s in subscriptions),
            chunks_skipped=c.chunks_skipped,
            buffered_bytes=sum(s.buffered_bytes for s in subscriptions),
            consumer_lag=sum(s.lag for s in subscriptions),
            messages_lost=c.messages_lost,
            undecodable=c.undecodable,
            handled=c.handled,
            handler_retries=c.handler_retries,
            handler_skipped=c.handler_skipped,
            dead_lettered=c.dead_lettered,
        )

    def stream_metrics(self, counters: Counters) -> StreamMetrics:
        """The client's counters per stream, and what it holds of each now."""
        managers = self.managers()
        return stream_metrics(
            counters,
            [p for m in managers for p in m.publishers],
            [s for m in managers for s in m.subscriptions],
            monotonic(),
        )

    def health(self, limits: HealthLimits, loop_now: float) -> Health:
        """
        The client's connections, publishers and subscriptions now, and
        the verdict on them (``loop_now``: the event loop's clock, the
        managers' times'; the publishers' and subscriptions' are of the
        monotonic clock).
        """
        now = monotonic()

        def ago(then: float | None) -> float | None:
            return None if then is None else max(0.0, now - then)

        connections = []
        for m in self.managers():
            protocol = m.protocol
            is_open = protocol is not None and protocol.is_open
            last = m.last
            node = None if last is None else node_of(last) or last.address
            lost = m.lost
            since = max(0.0, loop_now - m.opened_at) if is_open \
                else None if lost is None else max(0.0, loop_now - lost[0])
            connections.append(ConnectionHealth(
                m is self.own, node, is_open, since,
                None if is_open or lost is None else str(lost[1]) or type(lost[1]).__name__,
                len(m.publishers), len(m.subscriptions),
            ))
        publishers = [
            PublisherHealth(p.stream, p.name, p.state, p.unconfirmed,
                            ago(p.confirmed_at), ago(p.waiting_since))
            for m in self.managers() for p in m.publishers
        ]
        subscriptions = []
        for m in self.managers():
            for sub in m.subscriptions:
                state = sub.describe()
                subscriptions.append(SubscriptionHealth(
                    state.stream, state.name, state.state, state.connected, state.active,
                    sub.lag, ago(sub.stats.taken_at),
                ))
        return judge(connections, publishers, subscriptions, limits)

    def subscription_states(self) -> list[SubscriptionState]:
        """The subscriptions its connections hold, as they are now, own connection's first."""
        return [s.describe() for m in self.managers() for s in m.subscriptions]

    #
    # what the managers call
    #

    async def _recover_publisher(
            self, protocol: StreamsProtocol, publisher: PublisherTrait,
    ) -> None:
        await self.hooks.recover_publisher(protocol, publisher)

    async def _restore_publisher(
            self, protocol: StreamsProtocol, publisher: PublisherTrait,
    ) -> None:
        await self.hooks.restore_publisher(protocol, publisher)

    async def _restore_subscription(self, protocol: StreamsProtocol, sub: Subscription) -> None:
        await self.hooks.restore_subscription(protocol, sub)

    def _placing(self, item: object) -> bool:
        # only a node's connection: the placer leaves a loss of the
        # client's own to its recovery, whose giving up ends all it holds
        return self.hooks.placing(item)

    def _node_lost(self, manager: Manager) -> None:
        self.forget(manager)
        self.hooks.node_lost(manager)

    def _metadata_update(self, protocol: StreamsProtocol, update: MetadataUpdate) -> None:
        self.hooks.metadata_update(protocol, update)

    def _notify(
            self, manager: Manager, state: ConnectionState,
            protocol: StreamsProtocol | None, error: Exception | None,
    ) -> None:
        if state is ConnectionState.LOST:
            self._counters.connections_lost += 1
        callback = self._options.on_connection
        if callback is None:
            return
        node = None
        if protocol is not None:
            node = node_of(protocol) or protocol.address
        event = ConnectionEvent(state, node, error, manager is not self.own)
        try:
            callback(event)
        except Exception:
            logger.exception('on_connection callback failed for %s', event)

__all__ = ['Connections', 'RecoveryHooks']
