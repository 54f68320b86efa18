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
be reached: forwarding works; not with ``publishers_on_leader``). The
client opens one connection per such node, shared by what is placed there,
and closes it when the last of them ends.

A connection holds at most ``publishers_per_connection`` publishers and
``subscriptions_per_connection`` subscriptions (256 each, the protocol's limit): when
the client's own connection is full, the client opens another one to the
same broker, and so on; such a connection, as one to another node, closes
with the last of what it holds.

Nodes are named as the broker advertises them (``advertised_host`` and
``advertised_port`` in the Open response, the names Metadata uses). When
those names are not addresses the client can reach (a load balancer in
front of the cluster, containers), the client's ``address_resolver`` says
where to connect for a node; the client then checks which node answered,
and connects again until it is the one wanted. A
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
from time import monotonic

from ._client_base import DEFAULT_REQUEST_TIMEOUT, ClientBase
from ._publisher_base import PublisherTrait
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
from .subscriber import Subscription

logger = logging.getLogger('rbfly.streams.client')

Node: tp.TypeAlias = tuple[str, int]
# where a connection goes: a node, or None for the client's own broker
# (reached at the client's own address)
Where: tp.TypeAlias = Node | None
Kind: tp.TypeAlias = tp.Literal['publishers', 'subscriptions']

# connections opened through an address resolver until one reaches the node
# wanted: a load balancer in front of three nodes picking at random misses
# 20 times in a row once in 3,300 (round robin hits within 3)
NODE_ATTEMPTS = 20

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
        # connections besides the client's own, by where they go
        self._nodes: dict[Where, list[ConnectionManager]] = {}
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
        those with a connection open first. With ``replicas_only``, the
        replicas' nodes alone.

        :raises StreamNotAvailable: When a client reading from replicas
            only finds none.
        """
        members = await self._members(protocol, stream)
        home = node_of(protocol)
        if self._replicas_only:
            replicas = members[:-1]
            if not replicas:
                raise StreamNotAvailable('stream {!r} has no replica to read from (the'
                                         ' client reads from replicas only)'.format(stream))
            if home in replicas:
                return [None]
            replicas.sort(key=lambda n: n not in self._nodes)
            return list(replicas)
        if not members or home is None or home in members:
            return [None]
        members.sort(key=lambda n: n not in self._nodes)  # stable: replicas stay first
        return list(members)

    async def _place_new(self, sub: Subscription) -> None:
        """
        Place a new subscription. With ``replicas_only``, wait (with the
        reconnection delays, up to the request timeout) for a replica: a
        new stream's replicas start after its leader.

        :raises StreamNotAvailable: When the stream has no replica then.
        """
        delays = self._reconnect.delays()
        deadline = monotonic() + (self._request_timeout or DEFAULT_REQUEST_TIMEOUT)
        while True:
            protocol = await self._get_protocol()
            try:
                await self._place(protocol, sub, sub.offset_spec)
                return
            except StreamNotAvailable:
                if not self._replicas_only:
                    raise
                delay = next(delays, None)
                if delay is None or monotonic() + delay > deadline:
                    raise
                logger.info('stream %r has no replica yet; again in %.2fs', sub.stream, delay)
                await asyncio.sleep(delay)

    def _has_room(self, manager: ConnectionManager, kind: Kind) -> bool:
        limit = self._max_publishers if kind == 'publishers' else self._max_subscriptions
        return len(getattr(manager, kind)) < limit

    def _node_manager(self, where: Where, kind: Kind) -> ConnectionManager:
        """
        A connection to a node (``None``: the client's own broker) with
        room for one more publisher or subscription (``kind``); opened
        when each one there is full.
        """
        managers = self._nodes.setdefault(where, [])
        for manager in managers:
            if self._has_room(manager, kind):
                return manager
        manager = ConnectionManager(
            functools.partial(self._connect_node, where), self._reconnect,
            self._restore_publisher, self._restore_subscription,
            on_lost=self._node_lost, notify=self._notify,
        )
        managers.append(manager)
        return manager

    async def _connect_node(self, where: Where) -> StreamsProtocol:
        """
        Connect to a node (``None``: the client's broker, at the client's
        address), with the client's credentials of the moment. Through an
        address resolver (a load balancer, say), connect again until the
        node answering is the one wanted.

        :raises ConnectionLost: When the node was not reached in
            ``NODE_ATTEMPTS`` connections.
        """
        node: Node | None = None
        if where is None:
            info = self._info
            if self._resolver is not None and self._manager.protocol is not None:
                node = node_of(self._manager.protocol)  # the client's node
        elif self._resolver is None:
            info = dtc.replace(self._info, host=where[0], port=where[1])
        else:
            host, port = self._resolver(*where)
            info = dtc.replace(self._info, host=host, port=port)
            node = where
        for _ in range(NODE_ATTEMPTS if node is not None else 1):
            protocol = await self._connect_to(info)
            reached = node_of(protocol)
            if node is None or reached == node:
                return protocol
            logger.info('connected to node %s through %s, not %s; again', reached, info, node)
            await protocol.close()
        assert node is not None
        raise ConnectionLost('node {}:{} not reached through {} in {} connections'.format(
            node[0], node[1], info, NODE_ATTEMPTS,
        ))

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
            if node is None and self._has_room(self._manager, 'subscriptions'):
                # a lost connection is the client connection's recovery to
                # handle: the subscription stays registered with it
                self._manager.subscriptions.add(sub)
                sub.manager = self._manager
                await self._subscribe(protocol, sub, spec)
                return
            manager = self._node_manager(node, 'subscriptions')
            # (taken before connecting: the connection's room is counted)
            manager.subscriptions.add(sub)
            sub.manager = manager
            target: StreamsProtocol | None = None
            try:
                target = await manager.get()
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
            except Exception:
                manager.subscriptions.discard(sub)
                sub.manager = None
                self._release_node(manager)
                raise
            logger.info('subscription to %r placed on %s', sub.stream, node_of(target))
            return
        assert error is not None
        raise error

    def _forget(self, manager: ConnectionManager) -> None:
        for where, managers in list(self._nodes.items()):
            if manager in managers:
                managers.remove(manager)
            if not managers:
                del self._nodes[where]

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

    async def _leader_node(
            self, protocol: StreamsProtocol, stream: str, strict: bool = False,
    ) -> Node | None:
        """
        Node of a stream's leader; ``None`` when it is the node of the
        client's connection ``protocol``, or not known.

        :param strict: Raise instead of answering ``None`` while the stream
            has no leader.
        :raises StreamNotAvailable: With ``strict``, when the stream has no
            leader now.
        """
        members = await self._members(protocol, stream)
        if not members and strict:
            raise StreamNotAvailable('stream {!r} has no leader now'.format(stream))
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
        cannot be reached (or on another connection to the client's broker
        when that one is full); a publisher declared again sends its
        unconfirmed messages again.

        :raises ConnectionLost: With ``publishers_on_leader``, when the
            leader's node cannot be reached.
        :raises StreamNotAvailable: With ``publishers_on_leader``, when the
            stream has no leader now.
        """
        node = await self._leader_node(
            protocol, publisher.stream, strict=self._publishers_on_leader,
        )
        if node is not None:
            if await self._declare_placed(node, publisher, initial):
                return
            if self._publishers_on_leader:
                raise ConnectionLost(
                    'publisher of {!r}: the node of its stream leader, {}:{}, cannot be'
                    ' reached (publishers_on_leader)'.format(publisher.stream, *node),
                )
        if not self._has_room(self._manager, 'publishers'):
            if not await self._declare_placed(None, publisher, initial):
                raise ConnectionLost('cannot open another connection for a publisher')
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

    async def _declare_placed(
            self, where: Where, publisher: PublisherTrait, initial: bool,
    ) -> bool:
        """
        Declare a publisher on a connection to a node (``None``: another
        connection to the client's broker); false when it cannot be
        reached.
        """
        manager = self._node_manager(where, 'publishers')
        manager.publishers.add(publisher)  # (taken before connecting: counted)
        target: StreamsProtocol | None = None
        try:
            target = await manager.get()
            await self._declare_on(target, publisher, initial)
            if not target.is_open:
                raise ConnectionLost('connection lost while declaring a publisher')
        except ConnectionLost as ex:
            manager.publishers.discard(publisher)
            if target is not None:
                target.publishers.pop(publisher._id, None)
            if not (manager.subscriptions or manager.publishers):
                self._forget(manager)
            logger.info('publisher of %r: %s: %s', publisher.stream,
                        where or 'another connection', ex)
            return False
        except Exception:
            manager.publishers.discard(publisher)
            self._release_node(manager)
            raise
        publisher._owner = manager
        logger.info('publisher of %r placed on %s', publisher.stream,
                    where or 'another connection')
        return True

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
        async def place(protocol: StreamsProtocol) -> None:
            spec = await self._resume_spec(sub)
            if spec is not None:
                await self._place(protocol, sub, spec)

        self._later(self._keep_placing(
            'subscription to {!r}'.format(sub.stream), place,
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
        for manager in [m for managers in self._nodes.values() for m in managers]:
            for sub in [s for s in manager.subscriptions if s.stream == stream]:
                manager.subscriptions.discard(sub)
                sub.manager = None
                protocol = sub.protocol
                if protocol is not None and protocol.is_open:
                    self._unsubscribe(protocol, sub, 'moving subscription')
                else:
                    sub.detach()
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

    def _managers(self) -> list[ConnectionManager]:
        return [self._manager, *(m for ms in self._nodes.values() for m in ms)]

    async def _close_nodes(self) -> None:
        for task in list(self._relocations):
            task.cancel()
        if self._relocations:
            await asyncio.wait(self._relocations)
        managers = [m for ms in self._nodes.values() for m in ms]
        self._nodes.clear()
        for manager in managers:
            await manager.close()

    def _unsubscribe(self, protocol: StreamsProtocol, sub: Subscription, ctx: str) -> None:
        raise NotImplementedError

    async def _declare(
            self, protocol: StreamsProtocol, publisher: PublisherTrait,
    ) -> tuple[int, int]:
        raise NotImplementedError

    async def _subscribe(self, protocol: StreamsProtocol, sub: Subscription, spec: tp.Any) -> None:
        raise NotImplementedError

    async def _resume_spec(self, sub: Subscription) -> tp.Any:
        raise NotImplementedError

__all__ = ['NODE_ATTEMPTS', 'Node', 'PlacementMixin', 'node_of']
