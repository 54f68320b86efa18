"""
Placement of publishers and subscriptions on the nodes of a cluster.

A RabbitMQ node serves a subscription only from a member of the stream
(its leader or a replica) on that node; it answers "stream not available"
otherwise. Publishing works through any node, but a node without the
leader forwards each message to the leader's node and back. So a
subscription goes to the client's connection when its node holds a member
of the stream, and otherwise to a connection to a member's node: replicas
first (they spare the leader), then the leader; a publisher goes to the
leader's node (or stays on the client's connection when that node cannot
be reached: forwarding works). The client opens one connection per such
node, shared by what is placed there, and closes it when the last of them
ends.

Nodes are named as the broker advertises them (``advertised_host`` and
``advertised_port`` in the Open response, the names Metadata uses). A
connection to a node is not reopened when lost: its subscriptions are
placed anew with the stream's members of the moment (the node may be gone
for good): subscriptions continue after the last chunk received,
publishers are declared again and send their unconfirmed messages again
(the broker drops those it stored already).
"""

from __future__ import annotations

import asyncio
import dataclasses as dtc
import functools
import logging
import typing as tp

from ._client_base import ClientBase
from .aio.manager import ConnectionManager
from .aio.protocol import StreamsProtocol
from .error import (
    ConnectionLost,
    StreamDoesNotExist,
    StreamNotAvailable,
    StreamsError,
    error_for_code,
)
from .protocol.commands import Metadata
from .protocol.constants import ResponseCode
from .publisher import PublisherTrait
from .subscriber import Subscription

logger = logging.getLogger('rbfly.streams.client')

Node: tp.TypeAlias = tuple[str, int]

def node_of(protocol: StreamsProtocol) -> Node | None:
    """The node a connection is open to, as the broker names it."""
    props = protocol.connection_properties
    host = props.get('advertised_host')
    port = props.get('advertised_port')
    if host is None or port is None or not port.isdigit():
        return None
    return (host, int(port))

class PlacementMixin(ClientBase):
    """
    Connections to the nodes of a cluster for subscriptions whose stream
    has no member on the client's node.
    """
    def __init__(self, *args: tp.Any, **kw: tp.Any) -> None:
        super().__init__(*args, **kw)
        self._nodes: dict[Node, ConnectionManager] = {}
        self._relocations: set[asyncio.Task[None]] = set()

    async def _members(self, protocol: StreamsProtocol, stream: str) -> list[Node]:
        """
        Nodes of a stream's members, replicas first, the leader last (none
        while it has no leader).

        :raises StreamDoesNotExist: When there is no such stream.
        """
        response = await protocol.request(Metadata([stream]), 'stream {!r}'.format(stream))
        brokers = {b.reference: (b.host, b.port) for b in response.brokers}
        for m in response.streams:
            if m.stream != stream:
                continue
            if m.code == ResponseCode.STREAM_NOT_AVAILABLE:
                return []
            if m.code != ResponseCode.OK:
                raise error_for_code(m.code, 'stream {!r}'.format(stream))
            if m.leader_reference not in brokers:
                return []
            nodes = [brokers[r] for r in m.replica_references if r in brokers]
            nodes.append(brokers[m.leader_reference])
            return nodes
        raise StreamDoesNotExist('stream {!r}'.format(stream))

    async def _placements(self, protocol: StreamsProtocol, stream: str) -> list[Node | None]:
        """
        Where to subscribe to a stream, best first: ``None`` for the
        client's own connection (``protocol``) when its node holds a
        member (or when the members are unknown), else the members' nodes,
        those with a connection open first.
        """
        members = await self._members(protocol, stream)
        home = node_of(protocol)
        if not members or home is None or home in members:
            return [None]
        members.sort(key=lambda n: n not in self._nodes)  # stable: replicas stay first
        return list(members)

    def _node_manager(self, node: Node) -> ConnectionManager:
        manager = self._nodes.get(node)
        if manager is None:
            info = dtc.replace(self._info, host=node[0], port=node[1])
            manager = ConnectionManager(
                functools.partial(self._connect_to, info), self._reconnect,
                self._restore_publisher, self._restore_subscription,
                on_lost=self._node_lost, notify=self._notify,
            )
            self._nodes[node] = manager
        return manager

    async def _place(
            self, protocol: StreamsProtocol, sub: Subscription, spec: tp.Any,
    ) -> None:
        """
        Subscribe on the best connection for the subscription's stream
        (``protocol`` is the client's own), trying the members' nodes in
        turn when one cannot be reached.

        :raises ConnectionLost: When no member's node can be reached.
        """
        error: Exception | None = None
        for node in await self._placements(protocol, sub.stream):
            if node is None:
                # a lost connection is the client connection's recovery to
                # handle: the subscription stays registered with it
                self._manager.subscriptions.add(sub)
                sub.manager = self._manager
                await self._subscribe(protocol, sub, spec)
                return
            manager = self._node_manager(node)
            target: StreamsProtocol | None = None
            try:
                target = await manager.get()
                manager.subscriptions.add(sub)
                sub.manager = manager
                await self._subscribe(target, sub, spec)
                if not target.is_open:  # lost before it was registered here
                    raise ConnectionLost('connection lost while subscribing')
            except ConnectionLost as ex:
                manager.subscriptions.discard(sub)
                sub.manager = None
                self._forget(manager)
                logger.info('subscription to %r: %s; trying the next member', sub.stream, ex)
                error = ex
                continue
            logger.info('subscription to %r placed on %s', sub.stream, node_of(target))
            return
        assert error is not None
        raise error

    def _forget(self, manager: ConnectionManager) -> None:
        for node, m in list(self._nodes.items()):
            if m is manager:
                del self._nodes[node]

    def _node_lost(self, manager: ConnectionManager) -> None:
        """A connection to a node was lost: place what it held anew."""
        self._forget(manager)
        for sub in list(manager.subscriptions):
            manager.subscriptions.discard(sub)
            sub.manager = None
            self._relocate_later(sub)
        for publisher in list(manager.publishers):
            manager.publishers.discard(publisher)
            publisher._owner = None
            self._relocate_publisher(publisher)

    async def _leader_node(self, protocol: StreamsProtocol, stream: str) -> Node | None:
        """
        Node of a stream's leader; ``None`` when it is the node of the
        client's connection ``protocol``, or not known.
        """
        members = await self._members(protocol, stream)
        home = node_of(protocol)
        if not members or home is None or members[-1] == home:
            return None
        return members[-1]

    async def _place_publisher(
            self, protocol: StreamsProtocol, publisher: PublisherTrait, initial: bool,
    ) -> None:
        """
        Declare a publisher on its stream leader's node, or on the client's
        connection (``protocol``) when the leader is there or its node
        cannot be reached; a publisher declared again sends its
        unconfirmed messages again.
        """
        node = await self._leader_node(protocol, publisher.stream)
        if node is not None:
            manager = self._node_manager(node)
            target: StreamsProtocol | None = None
            try:
                target = await manager.get()
                await self._declare_on(target, publisher, initial)
                if not target.is_open:
                    raise ConnectionLost('connection lost while declaring a publisher')
            except ConnectionLost as ex:
                if target is not None:
                    target.publishers.pop(publisher._id, None)
                if not (manager.subscriptions or manager.publishers):
                    self._forget(manager)
                logger.info('publisher of %r: leader node %s: %s; publishing through the'
                            ' client connection', publisher.stream, node, ex)
            else:
                manager.publishers.add(publisher)
                publisher._owner = manager
                logger.info('publisher of %r placed on %s', publisher.stream, node)
                return
        # a lost connection is the client connection's recovery to handle:
        # the publisher stays registered with it
        self._manager.publishers.add(publisher)
        publisher._owner = self._manager
        try:
            await self._declare_on(protocol, publisher, initial)
        except ConnectionLost:
            raise
        except StreamsError:
            self._manager.publishers.discard(publisher)
            publisher._owner = None
            raise

    async def _declare_on(
            self, protocol: StreamsProtocol, publisher: PublisherTrait, initial: bool,
    ) -> None:
        if initial:
            publisher_id, sequence = await self._declare(protocol, publisher)
            publisher.message_id = sequence
            publisher._attach(protocol, publisher_id)
        else:
            await self._restore_publisher(protocol, publisher)

    def _relocate_later(self, sub: Subscription) -> None:
        """
        Subscribe again, after the last chunk received, on a member's node
        of the moment.
        """
        self._later(self._keep_placing(
            'subscription to {!r}'.format(sub.stream),
            lambda protocol: self._place(protocol, sub, sub.resume_spec()),
            sub.fail, lambda: sub.closed, lambda: sub.manager is self._manager,
        ))

    def _relocate_publisher(self, publisher: PublisherTrait) -> None:
        """
        Declare a publisher again on its stream leader's node of the moment.
        """
        self._later(self._keep_placing(
            'publisher of {!r}'.format(publisher.stream),
            lambda protocol: self._place_publisher(protocol, publisher, initial=False),
            publisher._fail, lambda: publisher._closed or publisher._error is not None,
            lambda: publisher._owner is self._manager,
        ))

    def _later(self, coro: tp.Coroutine[tp.Any, tp.Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._relocations.add(task)
        task.add_done_callback(self._relocations.discard)

    async def _keep_placing(
            self, what: str,
            place: tp.Callable[[StreamsProtocol], tp.Awaitable[None]],
            fail: tp.Callable[[Exception], None],
            ended: tp.Callable[[], bool],
            recovered_by_client: tp.Callable[[], bool],
    ) -> None:
        """
        Place a publisher or subscription (``place`` gets the client's own
        connection for the stream's metadata); ask again with the client's
        reconnection delays while its stream has no reachable member, until
        it ends, or the client connection's recovery took it over.
        """
        delays = self._reconnect.delays()
        while not ended():
            try:
                await place(await self._get_protocol())
                return
            except StreamDoesNotExist as ex:
                fail(ex)
                return
            except (ConnectionLost, StreamNotAvailable) as ex:
                if recovered_by_client():
                    return
                delay = next(delays, None)
                if delay is None:
                    fail(ex)
                    return
                logger.info('%s not placed (%s); again in %.2fs', what, ex, delay)
                await asyncio.sleep(delay)

    def _move_stream(self, stream: str) -> None:
        """
        The broker said a stream changed (MetadataUpdate): place the
        publishers and subscriptions of it held on node connections anew.
        """
        for manager in list(self._nodes.values()):
            for sub in [s for s in manager.subscriptions if s.stream == stream]:
                manager.subscriptions.discard(sub)
                sub.manager = None
                protocol = sub.protocol
                sid = sub.subscription_id
                sub.detach()
                if protocol is not None and protocol.is_open:
                    self._spawn(self._unsubscribe(protocol, sid, 'moving subscription'))
                self._relocate_later(sub)
            for publisher in [p for p in manager.publishers if p.stream == stream]:
                manager.publishers.discard(publisher)
                publisher._owner = None
                old = publisher._protocol
                if old is not None:
                    old.publishers.pop(publisher._id, None)
                publisher.on_connection_lost(ConnectionLost('stream {!r} moved'.format(stream)))
                self._relocate_publisher(publisher)

    def _release(self, sub: Subscription) -> bool:
        """
        A subscription ended; close its node connection when it was the
        last one there. True when that connection is closed (nothing to
        unsubscribe).
        """
        sub.closed = True
        manager, sub.manager = sub.manager, None
        if manager is not None:
            manager.subscriptions.discard(sub)
        return self._release_node(manager)

    def _release_publisher(self, publisher: PublisherTrait) -> bool:
        """A publisher ended (see :py:meth:`_release`)."""
        manager, publisher._owner = publisher._owner, None
        if manager is not None:
            manager.publishers.discard(publisher)
        return self._release_node(manager)

    def _release_node(self, manager: ConnectionManager | None) -> bool:
        if manager is None or manager is self._manager or manager.subscriptions \
                or manager.publishers:
            return False
        self._forget(manager)
        self._spawn(manager.close())
        return True

    async def disconnect(self) -> None:
        await self._close_nodes()
        await super().disconnect()

    async def _close_nodes(self) -> None:
        for task in list(self._relocations):
            task.cancel()
        if self._relocations:
            await asyncio.wait(self._relocations)
        managers = list(self._nodes.values())
        self._nodes.clear()
        for manager in managers:
            await manager.close()

    async def _unsubscribe(self, protocol: StreamsProtocol, sid: int, ctx: str) -> None:
        raise NotImplementedError

    async def _declare(
            self, protocol: StreamsProtocol, publisher: PublisherTrait,
    ) -> tuple[int, int]:
        raise NotImplementedError

    async def _subscribe(self, protocol: StreamsProtocol, sub: Subscription, spec: tp.Any) -> None:
        raise NotImplementedError

__all__ = ['Node', 'PlacementMixin', 'node_of']
