"""
Recovery of publishers and subscriptions: after the client's connection
was lost (its manager reconnects and calls back here), after a node's
connection was lost, and when the broker says a stream changed
(MetadataUpdate: its leader moved, or it is being deleted).

- The client's own connection: its publishers are declared again (they
  send their unconfirmed messages again; the broker drops those it stored
  already) and its subscriptions subscribe again after the last chunk
  received, or are placed on a member's node when the connection's node
  holds none now.
- A node's connection is not reopened: what it held is placed anew with
  the stream's members of the moment, asking again with the client's
  reconnection delays while none can be reached.
- A changed stream: what the connection that received the MetadataUpdate
  held of it at that moment, which the broker forgot, and only that: on a
  node's connection it is placed anew (on RabbitMQ before 4.1.2, the
  connection of a single active consumer of the stream, which holds it
  alone, is closed, and it is placed anew: the broker may keep it in its
  group, see :py:func:`~.placement.sac_cleanup_reliable`); on the client's connection it is
  declared again once the stream has a leader (or ended when it was
  deleted, or has none for :py:data:`STREAM_RECOVERY_TIMEOUT` seconds),
  unless that connection was lost meanwhile (its recovery declares
  everything again). A publisher or subscription declared after the
  MetadataUpdate is not declared a second time (RabbitMQ refuses a second
  publisher of one name on a connection: a soak run in CI failed so when
  a leader was killed).

Every retry takes its delays from a :py:class:`~rbfly.streams.Backoff`.
"""

from __future__ import annotations

import asyncio
import logging
import typing as tp

from ..aio.connection import StreamsProtocol
from ..aio.records import detach, let_go, undeclare
from ..backoff import Backoff
from ..error import (
    ConnectionLost,
    InternalError,
    PreconditionFailed,
    RequestTimeout,
    StreamDoesNotExist,
    StreamNotAvailable,
    StreamsError,
)
from ..lifecycle import ResourceState
from ..protocol.commands import MetadataUpdate
from . import metadata, placement
from .connections import Connections
from .declare import Declarer
from .offsets import Offsets
from .options import ClientOptions
from .placer import Placer
from .tasks import Background

if tp.TYPE_CHECKING:
    from ..publishers.awaited import PublisherTrait
    from ..subscriptions.subscription import Subscription
    from .connections import Manager

    Held: tp.TypeAlias = PublisherTrait | Subscription

logger = logging.getLogger('rbfly.streams.client')

STREAM_RECOVERY_TIMEOUT = 120.0
"""Seconds a stream may stay without a leader before its publishers and
subscriptions end with an error."""

STREAM_BACKOFF = Backoff(initial=0.1, maximum=2.0, multiplier=2.0, jitter=0.0)
"""Delays between asking whether a changed stream has a leader again."""

class Recovery:
    """
    Restores publishers and subscriptions (the connections'
    :py:class:`~.connections.RecoveryHooks`).

    :param options: The client's options.
    :param connections: The client's connections.
    :param placer: Places publishers and subscriptions on them.
    :param declarer: Declares them on a connection.
    :param offsets: Where a subscription resumes.
    :param tasks: Where placing anew and restoring streams run.
    """
    def __init__(
            self,
            options: ClientOptions,
            connections: Connections,
            placer: Placer,
            declarer: Declarer,
            offsets: Offsets,
            tasks: Background,
    ) -> None:
        self._options = options
        self._connections = connections
        self._placer = placer
        self._declarer = declarer
        self._offsets = offsets
        self._tasks = tasks
        # what is to be restored of a changed stream, by stream and the
        # connection whose MetadataUpdate said so (one task each)
        self._changing: dict[tuple[str, StreamsProtocol], set[Held]] = {}

    #
    # the connections' hooks
    #

    async def recover_publisher(self, protocol: StreamsProtocol, publisher: PublisherTrait) -> None:
        """
        Declare a publisher of the client's own connection again after that
        connection, or its stream, recovered. With ``publishers_on_leader``,
        a publisher whose stream's leader is not (or not yet) on the
        connection's node is placed anew instead, on the leader's node,
        asking again with the reconnection delays.
        """
        if self._options.publishers_on_leader:
            try:
                node = await self._placer.leader_node(protocol, publisher.stream, strict=True)
                moved = node is not None
            except StreamNotAvailable:
                moved = True
            if moved:
                logger.info('publisher of %r: placed again on the node of its stream leader',
                            publisher.stream)
                let_go(publisher)
                self.relocate_publisher(publisher)
                return
        elif self._await_leader(protocol, publisher,
                                await metadata.members(protocol.request, publisher.stream)):
            return
        await self.restore_publisher(protocol, publisher)

    async def restore_publisher(self, protocol: StreamsProtocol, publisher: PublisherTrait) -> None:
        """Declare a publisher again on a connection."""
        await self._declarer.restore_publisher(protocol, publisher)

    async def restore_subscription(self, protocol: StreamsProtocol, sub: Subscription) -> None:
        """
        Subscribe again on the client's connection (after a lost connection,
        maybe to another node), or, when the stream has no member on its
        node now (or the subscription may not stay there, a single active
        consumer's on a broker of another version), place it anew.
        """
        placer = self._placer
        found = await metadata.members(protocol.request, sub.stream)
        if self._await_leader(protocol, sub, found):
            return
        if placer.on_own(protocol, sub) \
                and placer.places_of(protocol, sub.stream, found)[0] is None:
            spec = await self._offsets.resume_spec(sub)
            if spec is not None:
                declarer = self._declarer
                await declarer.declare_again(
                    protocol, sub.stream, lambda: declarer.subscribe(protocol, sub, spec),
                )
            return
        let_go(sub)
        detach(sub)
        self.relocate_subscription(sub)

    def _await_leader(
            self, protocol: StreamsProtocol, item: Held, found: metadata.StreamMembers,
    ) -> bool:
        """
        Leave a publisher or subscription of the client's connection
        (``protocol``) whose stream has no leader now (``found``: the
        broker's Metadata for it) to the restore of a changed stream,
        which declares it once Metadata names a leader (see
        :py:meth:`_restore_stream`); true when left so.

        Declared at once, it crashed the broker's connection reader
        while the stream elected a leader (RabbitMQ 4.0.5:
        ``osiris:fetch_writer_seq(undefined, ...)`` on the publisher's
        sequence query, ``noproc`` on a subscription's reader), and the
        connection was lost: the client reconnected and declared it again,
        a connection lost every 0.3-0.5 s, 14 of them while an election
        took 5 s (``tests/cluster``), and the other publishers and
        subscriptions of the connection lost with each. Metadata is
        answered meanwhile. A replica does not serve a subscription then
        either: it restarts to follow the new leader (Metadata lists
        none without one).

        The connection's recovery goes on with what it holds of other
        streams meanwhile. Any other answer (the stream deleted, say) is
        left to the declaration, which ends it as before.
        """
        if found.status is not metadata.Status.NO_LEADER:
            return False
        logger.info('%s of %r: its stream has no leader now; declared again once it has',
                    item.kind[:-1], item.stream)
        self._stream_changed(item.stream, protocol, {item})
        return True

    def placing(self, item: object) -> bool:
        """
        Whether the placer is declaring a publisher or subscription on a
        node's connection now: it alone handles that connection's loss
        (neither :py:meth:`node_lost` nor the connection's giving up
        touches it).
        """
        return self._placer.placing(item)

    def node_lost(self, manager: Manager) -> None:
        """
        A connection to a node was lost: place what it held anew, but for
        what the placer is declaring there now (it tries the next member
        itself: placing it here too subscribed it twice).
        """
        placing = self.placing
        for sub in [s for s in manager.subscriptions if not placing(s)]:
            let_go(sub)
            self.relocate_subscription(sub)
        for publisher in [p for p in manager.publishers if not placing(p)]:
            let_go(publisher)
            self.relocate_publisher(publisher)

    def metadata_update(self, protocol: StreamsProtocol, update: MetadataUpdate) -> None:
        """
        The broker says on a connection that a stream is not available any
        more (deleted, or its leader moved): end or restore the publishers
        and subscriptions of the stream that connection holds now.
        """
        logger.info('metadata update: stream %r, code %d', update.stream, update.code)
        stream = update.stream
        if self._drop_ghosts(protocol, stream):
            return
        held: set[Held] = set()
        for m in self._connections.managers():
            held.update(p for p in m.publishers if p.stream == stream and p.protocol is protocol)
            held.update(s for s in m.subscriptions if s.stream == stream and s.protocol is protocol)
        self._stream_changed(stream, protocol, held)

    def _drop_ghosts(self, protocol: StreamsProtocol, stream: str) -> bool:
        """
        Close a node's connection holding a single active consumer of a
        stream that moved, on a broker that may keep it in its group
        though it dropped it there (RabbitMQ before 4.1.2: see
        :py:func:`~.placement.sac_cleanup_reliable`; there, such a
        connection holds that subscription alone): the broker removes
        every consumer of a closed connection from its groups, a ghost
        included, and the subscription is placed anew (as when its
        connection is lost). True when it is closed (or closing already:
        its loss takes care of what it holds).
        """
        if protocol is self._connections.own.protocol \
                or placement.sac_cleanup_reliable(protocol.broker_version):
            return False
        held = any(
            s.stream == stream and s.activation is not None and s.protocol is protocol
            for m in self._connections.node_managers() for s in m.subscriptions
        )
        if not held:
            return False
        if protocol.is_open:
            logger.info(
                'stream %r moved: the connection of its single active consumer closed, so'
                ' that RabbitMQ %s removes it from its group; subscribing again',
                stream, '.'.join(map(str, protocol.broker_version)),
            )
            protocol.abort(ConnectionLost(
                'stream {!r} moved: single active consumers subscribe again'.format(stream),
            ))
        return True

    def publisher_unknown(self, publisher: PublisherTrait) -> None:
        """The broker does not know a publisher any more: declare it again."""
        protocol = publisher.protocol
        if protocol is not None:  # else it is being declared again already
            self._stream_changed(publisher.stream, protocol, {publisher})

    #
    # placing anew
    #

    def relocate_subscription(self, sub: Subscription) -> None:
        """
        Subscribe again, after the last chunk received, on a member's node
        of the moment.
        """
        sub.lifecycle.move(ResourceState.RECOVERING, 'placed anew on a member of its stream')
        offsets = self._offsets
        placer = self._placer
        own = self._connections.own

        async def place(protocol: StreamsProtocol) -> None:
            spec = await offsets.resume_spec(sub)
            if spec is not None and not sub.closed:  # (ended meanwhile: not placed)
                await placer.place_subscription(protocol, sub, spec, leader=True)
                if sub.closed:  # (ended while subscribing: unsubscribed)
                    placer.end_subscription(sub)

        self._tasks.spawn(self._keep_placing(
            'subscription to {!r}'.format(sub.stream), place,
            sub.fail, lambda: sub.closed, lambda: sub.owner is own,
        ), cancel_at_close=True)

    def resubscribe(self, sub: Subscription, reason: str) -> None:
        """
        Unsubscribe a subscription, and subscribe it again after the last
        chunk received, on a member's node of the moment (its stream
        moved, or its broker reader stalled: see
        :py:mod:`rbfly.streams.subscriptions.stalled`).
        """
        sub.moved(ConnectionLost(reason))
        undeclare(sub, self._declarer.unsubscribe)
        self.relocate_subscription(sub)

    def resubscribe_stalled(self, sub: Subscription, reason: str) -> bool:
        """
        :py:meth:`resubscribe`, unless the subscription is being recovered
        (not on an open connection, being placed, or its stream changed);
        whether it was.
        """
        protocol = sub.protocol
        if protocol is None or not protocol.is_open or self._placer.placing(sub) \
                or any(sub in held for held in self._changing.values()):
            return False
        self.resubscribe(sub, reason)
        return True

    def relocate_publisher(self, publisher: PublisherTrait) -> None:
        """Declare a publisher again on its stream leader's node of the moment."""
        publisher.lifecycle.move(ResourceState.RECOVERING, 'placed anew on its stream leader')
        placer = self._placer
        own = self._connections.own
        self._tasks.spawn(self._keep_placing(
            'publisher of {!r}'.format(publisher.stream),
            lambda protocol: placer.place_publisher(protocol, publisher, initial=False),
            publisher.fail, lambda: publisher.ended,
            lambda: publisher.owner is own,
        ), cancel_at_close=True)

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
        reconnection delays while its stream has no reachable member (or
        the broker fails to answer for it: an internal error, or no answer
        within the request timeout, as :py:meth:`_restore_one` and the
        restore of a changed stream ask again: a slow broker ended it for
        good), until it ends, the delays are used up, or the client
        connection's recovery took it over. Any other
        refusal of the broker's (the stream deleted, access refused) ends
        it with that error: it escaped this task, which ended with the
        publisher or subscription left recovering for ever.
        """
        delays = self._options.reconnect.delays()
        while not ended():
            try:
                await place(await self._connections.get())
                return
            except (ConnectionLost, StreamNotAvailable, InternalError, RequestTimeout) as ex:
                if ended() or recovered_by_client():
                    return
                delay = next(delays, None)
                if delay is None:
                    fail(ex)
                    return
                logger.info('%s not placed (%s); again in %.2fs', what, ex, delay)
                await asyncio.sleep(delay)
            except StreamsError as ex:
                logger.warning('%s not placed: %s', what, ex)
                fail(ex)
                return

    #
    # a changed stream
    #

    def _stream_changed(self, stream: str, protocol: StreamsProtocol, held: set[Held]) -> None:
        """
        Restore ``held`` (what ``protocol`` held of ``stream`` when the
        broker said it changed there). While a restore of the stream on that
        connection runs, it takes them over: again those it declared
        already (the broker forgot them a second time), once more those it
        has still to declare.
        """
        key = (stream, protocol)
        pending = self._changing.get(key)
        if pending is not None:
            pending.update(held)
            return
        self._changing[key] = pending = set(held)
        # cancelled at close: disconnect() waited for it up to
        # STREAM_RECOVERY_TIMEOUT (120 s) while the stream had no leader
        self._tasks.spawn(
            self._restore_changed(key, pending), cancel_at_close=True, awaited=True,
        )

    async def _restore_changed(
            self, key: tuple[str, StreamsProtocol], pending: set[Held],
    ) -> None:
        """
        Restore a changed stream (see :py:meth:`_restore_stream`). Cancelled
        (the client disconnects), what it had still to declare ends with
        :py:class:`~rbfly.streams.error.ConnectionLost` saying so: a
        publisher's messages not confirmed fail (the broker may have stored
        some; none confirmed is undone), a subscription ends.
        """
        stream, protocol = key
        try:
            self._move_stream(stream, protocol, pending)
            await self._restore_stream(stream, protocol, pending)
        except asyncio.CancelledError:
            error = ConnectionLost(
                'client disconnected while stream {!r} was being restored; messages not'
                ' confirmed are not known to be stored'.format(stream),
            )
            self._end_stream(*self._remaining(self._connections.own, pending), error)
            raise
        finally:
            del self._changing[key]

    def _move_stream(self, stream: str, changed_on: StreamsProtocol, held: set[Held]) -> None:
        """
        Place the publishers and subscriptions of a changed stream that a
        node connection held anew.
        """
        for manager in self._connections.node_managers():
            for sub in [s for s in manager.subscriptions
                        if s in held and s.protocol is changed_on]:
                held.discard(sub)
                self.resubscribe(sub, 'stream {!r} moved'.format(stream))
            for publisher in [p for p in manager.publishers
                              if p in held and p.protocol is changed_on]:
                held.discard(publisher)
                undeclare(publisher, self._declarer.drop_publisher)
                publisher.on_connection_lost(ConnectionLost('stream {!r} moved'.format(stream)))
                self.relocate_publisher(publisher)

    async def _restore_stream(
            self, stream: str, changed_on: StreamsProtocol, pending: set[Held],
    ) -> None:
        """
        Declare the publishers and subscriptions of a stream that the
        client's connection held (``pending``, on ``changed_on``; each is
        taken out once declared, and may be put back by a later update)
        again after the broker said there it is not available (its leader
        died or moved, or it is being deleted). One that cannot be declared
        again ends with the broker's error; the others are declared still.

        While the stream elects a leader, the broker answers "not
        available", Metadata names no leader, and a replica restarting
        refuses subscriptions: ask again with :py:data:`STREAM_BACKOFF`'s
        delays, for up to :py:data:`STREAM_RECOVERY_TIMEOUT` seconds. A
        lost connection is left to the connection's recovery, which
        declares them all again; a deleted stream ends them with
        :py:class:`~rbfly.streams.error.StreamDoesNotExist`, a stream the
        user may not use any more with
        :py:class:`~rbfly.streams.error.AccessRefused`; another error code
        of the broker's for the stream is a failure of the moment, asked
        again as "no leader" is.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STREAM_RECOVERY_TIMEOUT
        delays = STREAM_BACKOFF.delays()
        own = self._connections.own
        error: StreamsError = StreamNotAvailable('stream {!r}'.format(stream))

        def ours(item: Held) -> bool:
            # held by the client's connection on the connection that changed
            # (or detached here, not declared again yet)
            return item in pending and item.owner is own and item.protocol in (changed_on, None)

        while True:
            protocol = own.protocol
            if protocol is not changed_on or not protocol.is_open:
                return  # the connection's recovery declares them again
            publishers = [p for p in own.publishers if ours(p)]
            subscriptions = [s for s in own.subscriptions if ours(s)]
            if not publishers and not subscriptions:
                return
            try:
                not_ready = await metadata.leader_known(protocol.request, stream)
                if not_ready is None:
                    for p in publishers:
                        pending.discard(p)
                        old = p.ident
                        detach(p)
                        p.on_connection_lost(ConnectionLost('stream {!r} moved'.format(stream)))
                        await self._restore_one(
                            p, self._declare_changed(protocol, p, old), p.fail, pending,
                        )
                    for s in subscriptions:
                        pending.discard(s)
                        s.moved(ConnectionLost('stream {!r} moved'.format(stream)))
                        detach(s)
                        await self._restore_one(
                            s, self.restore_subscription(protocol, s), s.fail, pending,
                        )
                    continue  # what a later update put back, if anything
                error = not_ready
            except ConnectionLost:
                return  # the connection's recovery declares them again
            except StreamDoesNotExist as ex:
                self._end_stream(*self._remaining(own, pending), ex)
                return
            except (StreamNotAvailable, RequestTimeout) as ex:
                error = ex
            except StreamsError as ex:  # a refusal of the broker's when asked for metadata
                self._end_stream(*self._remaining(own, pending), ex)
                return
            delay = next(delays, STREAM_BACKOFF.maximum)
            if loop.time() > deadline:
                self._end_stream(*self._remaining(own, pending), error)
                return
            logger.info('stream %r not available yet; asking again in %.1fs', stream, delay)
            await asyncio.sleep(delay)

    async def _declare_changed(
            self, protocol: StreamsProtocol, publisher: PublisherTrait, old: int,
    ) -> None:
        """
        Declare a publisher of a changed stream again on the connection
        whose MetadataUpdate said so (``old``: its id there until then).

        RabbitMQ 3.13 and later forget on that update only the publishers
        whose leader failed, and the subscriptions reading from the member
        that failed: the update for a subscription's replica leaves a
        publisher of the stream on the connection in place, and declaring
        it again is refused (``PreconditionFailed``: its id or its name is
        taken). The broker's old publisher is deleted then, and the
        publisher declared again (it sends its unconfirmed messages again;
        the broker drops those it stored), instead of ending it with the
        old one left on the broker.
        """
        try:
            await self.recover_publisher(protocol, publisher)
        except PreconditionFailed:
            if not await self._declarer.delete_stale_publisher(protocol, publisher, old):
                raise
            logger.info('publisher of %r: the broker kept it (id %d); deleted, declared again',
                        publisher.stream, old)
            await self.recover_publisher(protocol, publisher)

    @staticmethod
    def _remaining(
            own: Manager, pending: set[Held],
    ) -> tuple[list[PublisherTrait], list[Subscription]]:
        """What of ``pending`` the client's connection holds still."""
        return (
            [p for p in own.publishers if p in pending],
            [s for s in own.subscriptions if s in pending],
        )

    @staticmethod
    async def _restore_one(
            item: Held, restore: tp.Awaitable[None], fail: tp.Callable[[Exception], None],
            pending: set[Held],
    ) -> None:
        """
        Await ``restore``; a refusal of the broker other than the stream's
        state or a timeout (which the caller handles: ``item`` is pending
        again, to be declared when the caller asks again) ends ``item``
        with it.
        """
        try:
            await restore
        except (ConnectionLost, StreamDoesNotExist, StreamNotAvailable, RequestTimeout,
                asyncio.CancelledError):
            pending.add(item)
            raise
        except StreamsError as ex:
            logger.warning('cannot restore %s of %r: %s', item.kind[:-1], item.stream, ex)
            let_go(item)
            detach(item)
            fail(ex)

    @staticmethod
    def _end_stream(
            publishers: list[PublisherTrait], subscriptions: list[Subscription], error: Exception,
    ) -> None:
        for p in publishers:
            let_go(p)
            detach(p)
            p.fail(error)
        for s in subscriptions:
            let_go(s)
            s.fail(error)

__all__ = ['STREAM_BACKOFF', 'STREAM_RECOVERY_TIMEOUT', 'Recovery']
