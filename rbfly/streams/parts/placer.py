"""
Declaring publishers and subscriptions where :py:mod:`.placement` says:
on the client's own connection, or on a connection to another node
(opened for them, shared, and closed with the last of them), trying the
next member's node when one cannot be reached.

While the placer declares a publisher or subscription on a node's
connection, it alone decides what happens when that connection is lost:
it tries the next member; the recovery, told of the loss, leaves it alone
(:py:meth:`Placer.placing`), and so does the connection's manager when it
gives up on the node (its connections lost before any progress). Both
acting placed it twice, or declared on the next member a subscription
the give-up had ended (left on the broker, nobody to unsubscribe it). One
ended by the application meanwhile is not declared on the next member.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import typing as tp
from collections.abc import Iterator
from time import monotonic

from ..aio.connection import StreamsProtocol
from ..aio.records import detach, hold, let_go, release_id
from ..error import ConnectionLost, StreamNotAvailable, StreamsError
from ..lifecycle import ResourceState
from ..protocol.commands import OffsetSpec
from . import metadata, placement
from .asking import Asking
from .connections import Connections
from .connector import Node, Where, node_of
from .declare import Declarer
from .options import ClientOptions

if tp.TYPE_CHECKING:
    from ..publishers.awaited import PublisherTrait
    from ..subscriptions.subscription import Subscription

logger = logging.getLogger('rbfly.streams.client')

class Placer:
    """
    Places publishers and subscriptions on the client's connections.

    :param options: The client's options (``replicas_only``,
        ``publishers_on_leader``, the reconnection delays).
    :param connections: The client's connections.
    :param declarer: Declares them on a connection.
    """
    def __init__(
            self, options: ClientOptions, connections: Connections, declarer: Declarer,
    ) -> None:
        self._options = options
        self._connections = connections
        self._declarer = declarer
        # what is being declared on a node's connection now (see placing())
        self._placing: set[object] = set()
        # Metadata requests under way, by connection and stream
        self._asking: Asking[metadata.StreamMembers] = Asking()

    def placing(self, item: object) -> bool:
        """
        Whether a publisher or subscription is being declared on a node's
        connection now: when that connection is lost, the placer tries the
        next member's node (or gives up with an error to its caller), and
        nothing else may place it anew.
        """
        return item in self._placing

    @contextlib.contextmanager
    def _declaring(self, item: object) -> Iterator[None]:
        self._placing.add(item)
        try:
            yield
        finally:
            self._placing.discard(item)

    #
    # subscriptions
    #

    @staticmethod
    def on_own(protocol: StreamsProtocol, sub: Subscription) -> bool:
        """
        Whether a subscription may go on the client's own connection
        (``protocol``): not a single active consumer's on a broker that
        loses track of its group there (see
        :py:func:`~.placement.own_connection_allowed`).
        """
        return placement.own_connection_allowed(sub.activation is not None,
                                                protocol.broker_version)

    async def subscription_places(
            self, protocol: StreamsProtocol, stream: str, leader: bool = False,
    ) -> list[Where]:
        """
        Where to subscribe to a stream, best first (``None``: the client's
        own connection, ``protocol``).

        :param leader: Raise instead of answering while the stream has no
            leader (see :py:meth:`places_of`).
        :raises StreamDoesNotExist: When there is no such stream.
        :raises StreamNotAvailable: When a client reading from replicas
            only finds none, or, with ``leader``, when the stream has no
            leader now.
        """
        # (asked once by the subscriptions placed at once)
        found = await self._asking.ask(
            (protocol, stream), lambda: metadata.members(protocol.request, stream))
        return self.places_of(protocol, stream, found, leader)

    def places_of(
            self, protocol: StreamsProtocol, stream: str, found: metadata.StreamMembers,
            leader: bool = False,
    ) -> list[Where]:
        """
        Where to subscribe to a stream whose members are ``found`` (see
        :py:meth:`subscription_places`). With ``leader``, a stream without
        a leader is not available: its replicas restart to follow the
        new one, and the client's node's member may be one of them
        (subscribed there, the broker's connection reader crashed, the
        connection lost; RabbitMQ 4.0.5).
        """
        found = metadata.existing(found, stream)
        if leader and found.status is metadata.Status.NO_LEADER:
            raise StreamNotAvailable('stream {!r} has no leader now'.format(stream))
        return placement.subscription_places(
            stream, found.nodes, node_of(protocol), self._options.replicas_only,
            self._connections.connected(),
        )

    async def place_new(self, sub: Subscription) -> None:
        """
        Place a new subscription. With ``replicas_only``, wait (with the
        reconnection delays, up to the request timeout) for a replica: a
        new stream's replicas start after its leader.

        :raises StreamNotAvailable: When the stream has no replica then.
        """
        options = self._options
        delays = options.reconnect.delays()
        deadline = monotonic() + options.request_deadline
        while True:
            protocol = await self._connections.get()
            try:
                await self.place_subscription(protocol, sub, sub.offset_spec)
                return
            except StreamNotAvailable:
                if not options.replicas_only:
                    raise
                delay = next(delays, None)
                if delay is None or monotonic() + delay > deadline:
                    raise
                logger.info('stream %r has no replica yet; again in %.2fs', sub.stream, delay)
                await asyncio.sleep(delay)

    async def place_subscription(
            self, protocol: StreamsProtocol, sub: Subscription, spec: OffsetSpec,
            leader: bool = False,
    ) -> None:
        """
        Subscribe on the best connection for the subscription's stream
        (``protocol`` is the client's own), trying the members' nodes in
        turn when one cannot be reached. A subscription kept off the
        client's own connection (:py:meth:`on_own`) goes to a connection of
        its own (to the client's node where that one would do).

        :param leader: Subscribe only once the stream has a leader (a
            subscription placed anew: see :py:meth:`places_of`).
        :raises ConnectionLost: When no member's node can be reached.
        :raises StreamNotAvailable: With ``leader``, when the stream has
            no leader now.
        """
        connections = self._connections
        declarer = self._declarer
        error: Exception | None = None
        on_own = self.on_own(protocol, sub)
        for node in await self.subscription_places(protocol, sub.stream, leader):
            own = connections.own
            if node is None and on_own and connections.has_room(own, 'subscriptions'):
                # a lost connection is the client connection's recovery to
                # handle: the subscription stays held by it
                hold(own, sub)
                await declarer.subscribe(protocol, sub, spec)
                return
            manager = connections.node_manager(node, 'subscriptions', alone=not on_own)
            hold(manager, sub)  # (before connecting: the connection's room is counted)
            target: StreamsProtocol | None = None
            try:
                with self._declaring(sub):
                    target = await manager.get()
                    await declarer.subscribe(target, sub, spec)
                    if not target.is_open:  # lost before it was registered here
                        raise ConnectionLost('connection lost while subscribing')
            except ConnectionLost as ex:
                let_go(sub)
                connections.forget(manager)
                if sub.closed:
                    # ended meanwhile (its connection closed with it, the
                    # last one there): declared on the next member, it was
                    # left on the broker, nobody to unsubscribe it
                    raise
                logger.info('subscription to %r: %s; trying the next member', sub.stream, ex)
                error = ex
                continue
            except Exception:
                let_go(sub)
                connections.release(manager)
                raise
            logger.info('subscription to %r placed on %s%s', sub.stream, node_of(target),
                        '' if on_own else ' (a connection of its own)')
            return
        assert error is not None
        raise error

    def release_subscription(self, sub: Subscription) -> bool:
        """
        A subscription ended; close its node's connection when it was the
        last one there. True when that connection is closing (nothing to
        unsubscribe).
        """
        sub.close()
        return self._connections.release(let_go(sub))

    def end_subscription(self, sub: Subscription) -> None:
        """The application ended a subscription: unsubscribe, unless its connection is closing."""
        sub.lifecycle.move(ResourceState.CLOSED, 'ended by the application')
        protocol = sub.protocol
        closing = self.release_subscription(sub)
        if protocol is not None and protocol.is_open and not closing:
            self._declarer.unsubscribe(protocol, sub)
        else:
            detach(sub)

    #
    # publishers
    #

    async def leader_node(
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
        found = metadata.existing(await metadata.members(protocol.request, stream), stream)
        if found.leader is None and strict:
            raise StreamNotAvailable('stream {!r} has no leader now'.format(stream))
        return placement.leader_place(found.nodes, node_of(protocol))

    async def place_publisher(
            self, protocol: StreamsProtocol, publisher: PublisherTrait, initial: bool,
    ) -> None:
        """
        Declare a publisher on its stream leader's node, or on the client's
        connection (``protocol``) when the leader is there or its node
        cannot be reached (or on another connection to the client's broker
        when that one is full); a publisher declared again (not
        ``initial``) sends its unconfirmed messages again.

        A publisher declared again waits for its stream's leader (its
        caller asks again): declared while the stream elects one, the
        broker's connection reader crashed on its sequence query and the
        connection was lost (RabbitMQ 4.0.5,
        ``osiris:fetch_writer_seq(undefined, ...)``), the client's own
        connection with all it held.

        :raises ConnectionLost: With ``publishers_on_leader``, when the
            leader's node cannot be reached.
        :raises StreamNotAvailable: With ``publishers_on_leader``, or not
            ``initial``, when the stream has no leader now.
        """
        on_leader = self._options.publishers_on_leader
        node = await self.leader_node(
            protocol, publisher.stream, strict=on_leader or not initial,
        )
        if node is not None:
            if await self._declare_placed(node, publisher, initial):
                return
            if on_leader:
                raise ConnectionLost(
                    'publisher of {!r}: the node of its stream leader, {}:{}, cannot be'
                    ' reached (publishers_on_leader)'.format(publisher.stream, *node),
                )
        own = self._connections.own
        if not self._connections.has_room(own, 'publishers'):
            if not await self._declare_placed(None, publisher, initial):
                raise ConnectionLost('cannot open another connection for a publisher')
            return
        # a lost connection is the client connection's recovery to handle:
        # the publisher stays held by it
        hold(own, publisher)
        try:
            await self._declare_on(protocol, publisher, initial)
        except ConnectionLost:
            raise
        except StreamsError:
            let_go(publisher)
            raise

    async def _declare_placed(
            self, where: Where, publisher: PublisherTrait, initial: bool,
    ) -> bool:
        """
        Declare a publisher on a connection to a node (``None``: another
        connection to the client's broker); false when it cannot be
        reached.
        """
        connections = self._connections
        manager = connections.node_manager(where, 'publishers')
        hold(manager, publisher)  # (before connecting: the connection's room is counted)
        target: StreamsProtocol | None = None
        try:
            with self._declaring(publisher):
                target = await manager.get()
                await self._declare_on(target, publisher, initial)
                if not target.is_open:
                    raise ConnectionLost('connection lost while declaring a publisher')
        except ConnectionLost as ex:
            let_go(publisher)
            if target is not None:
                release_id(target, publisher, publisher.ident)
            if not (manager.subscriptions or manager.publishers):
                connections.forget(manager)
            if publisher.ended:  # closed meanwhile: declared nowhere else
                raise
            logger.info('publisher of %r: %s: %s', publisher.stream,
                        where or 'another connection', ex)
            return False
        except Exception:
            let_go(publisher)
            connections.release(manager)
            raise
        logger.info('publisher of %r placed on %s', publisher.stream,
                    where or 'another connection')
        return True

    async def _declare_on(
            self, protocol: StreamsProtocol, publisher: PublisherTrait, initial: bool,
    ) -> None:
        if initial:
            await self._declarer.add_publisher(protocol, publisher)
        else:
            await self._declarer.restore_publisher(protocol, publisher)

    def release_publisher(self, publisher: PublisherTrait) -> bool:
        """A publisher ended (see :py:meth:`release_subscription`)."""
        return self._connections.release(let_go(publisher))

__all__ = ['Placer']
