"""
Connection manager: one connection per client, opened lazily and opened
again after it is lost.

The manager keeps the registry of publishers and subscriptions to replay.
When the connection is lost while any of them exists, one recovery task
reconnects (waiting between attempts as the backoff policy says) and then
restores each publisher and subscription through the callbacks the client
gives; callers waiting for a connection wait for that task.
"""

from __future__ import annotations

import asyncio
import logging
import typing as tp
from collections.abc import Awaitable, Callable

from ..backoff import Backoff, Pace
from ..error import ConnectionLost, RecoveryStalled, StreamsError
from ..events import ConnectionState
from .records import Held, let_go

if tp.TYPE_CHECKING:
    from .connection import StreamsProtocol

logger = logging.getLogger(__name__)

STABLE = 10.0
"""
Seconds after which a connection counts as having made progress even
without a confirmation or a chunk: an idle publisher, or a subscription to
a quiet stream, cut by a load balancer's idle timeout is not a broker that
drops what the client restores. Losses that come sooner, before any
progress, are paced by the backoff (see
:py:class:`~rbfly.streams.backoff.Pace`).
"""

P = tp.TypeVar('P', bound=Held)
S = tp.TypeVar('S', bound=Held)

Notify: tp.TypeAlias = Callable[
    ['ConnectionManager[tp.Any, tp.Any]', ConnectionState, 'StreamsProtocol | None',
     'Exception | None'],
    None,
]

class ConnectionManager(tp.Generic[P, S]):
    """
    Owner of a client's connection.

    Generic in what it holds, publishers (``P``) and subscriptions
    (``S``): the adapter sees them only as
    :py:class:`~rbfly.streams.aio.records.Held`; the layers above give the
    types they define.

    :param connect: Opens a new connection (handshake included).
    :param backoff: Delays between reconnection attempts.
    :param restore_publisher: Declares a publisher again on a connection.
    :param restore_subscription: Subscribes again on a connection.
    :param on_lost: Called instead of reconnecting when the connection is
        lost (a connection to a given node of a cluster: its subscriptions
        are placed anew, maybe on another node).
    :param notify: Called on each change of state (see
        :py:mod:`rbfly.streams.events`).
    :param pace: The pace of reconnections, when shared with other
        managers (the connections to one node, each opened anew after a
        loss); by default the manager's own, of ``backoff``.
    :param claimed: Whether another part handles the loss of a publisher
        or subscription held here now (the client's placer, declaring it
        on this connection, tries the next member's node): giving up
        leaves it to that part. Failing it too ended it with
        :py:class:`~rbfly.streams.error.RecoveryStalled` while the placer
        declared it elsewhere, a subscription left on the broker with
        nobody to end it.
    """
    def __init__(
            self,
            connect: Callable[[], Awaitable[StreamsProtocol]],
            backoff: Backoff,
            restore_publisher: Callable[[StreamsProtocol, P], Awaitable[None]],
            restore_subscription: Callable[[StreamsProtocol, S], Awaitable[None]],
            on_lost: Callable[[ConnectionManager[P, S]], None] | None = None,
            notify: Notify | None = None,
            pace: Pace | None = None,
            claimed: Callable[[Held], bool] | None = None,
    ) -> None:
        self._connect = connect
        self._backoff = backoff
        self._restore_publisher = restore_publisher
        self._restore_subscription = restore_subscription
        self._lost_hook = on_lost
        self._notify = notify
        self.protocol: StreamsProtocol | None = None
        self.publishers: set[P] = set()
        self.subscriptions: set[S] = set()
        self._lock: asyncio.Lock | None = None
        self._recovery: asyncio.Task[None] | None = None
        self._closing = False
        self._pace = Pace(backoff) if pace is None else pace
        self._claimed = claimed
        # when the connection was opened (see STABLE)
        self._opened_at = 0.0
        # when the connection was lost, and why (None: open, never
        # opened, or closed by the client); the last one opened
        self._lost: tuple[float, Exception] | None = None
        self._last: StreamsProtocol | None = None

    async def get(self) -> StreamsProtocol:
        """
        Return an open connection, connecting when there is none.

        A first connection is attempted once (its error goes to the
        caller); after a lost connection this waits for the recovery.
        """
        protocol = self.protocol
        if protocol is not None and protocol.is_open:
            return protocol
        if self._recovery is not None and not self._recovery.done():
            if asyncio.current_task() is self._recovery:
                # asked while restoring (a resume callback's stored offset,
                # say): the recovery's own connection was lost; it tries
                # again, instead of waiting for itself
                raise ConnectionLost('connection lost during its recovery')
            await self._wait_for_recovery()
            protocol = self.protocol
            if protocol is not None and protocol.is_open:
                return protocol
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            protocol = self.protocol
            if protocol is None or not protocol.is_open:
                self._closing = False
                await self._hold()
                protocol = await self._open()
                self._report(ConnectionState.OPEN, protocol, None)
        return protocol

    def _report(
            self, state: ConnectionState, protocol: StreamsProtocol | None,
            error: Exception | None,
    ) -> None:
        if self._notify is not None:
            self._notify(self, state, protocol, error)

    async def _hold(self) -> None:
        """Wait as the pace says before opening a connection."""
        delay = self._pace.wait(asyncio.get_running_loop().time())
        if delay > 0:
            await asyncio.sleep(delay)

    async def _open(self) -> StreamsProtocol:
        protocol = await self._connect()
        protocol.on_lost = self._on_lost
        self.protocol = protocol
        self._opened_at = asyncio.get_running_loop().time()
        self._lost = None
        self._last = protocol
        return protocol

    @property
    def opened_at(self) -> float:
        """When the connection was last opened (the event loop's clock; 0: never)."""
        return self._opened_at

    @property
    def lost(self) -> tuple[float, Exception] | None:
        """
        When the connection was lost (the event loop's clock), and why;
        ``None`` while it is open, before it was first opened and once the
        client closed it.
        """
        return self._lost

    @property
    def last(self) -> StreamsProtocol | None:
        """The connection opened last, open or not (``None``: never opened)."""
        return self._last

    def _on_lost(self, protocol: StreamsProtocol, error: Exception) -> None:
        if protocol is not self.protocol or self._closing:
            return
        self.protocol = None
        self._lost = (asyncio.get_running_loop().time(), error)
        logger.warning('connection lost: %s', error)
        self._report(ConnectionState.LOST, protocol, error)
        held = bool(self.publishers or self.subscriptions)
        if held and not self._restoring():
            self._pace_loss(protocol, error)
        if self._lost_hook is not None:
            self._closing = True
            self._lost_hook(self)
        elif self.publishers or self.subscriptions:
            self.start_recovery()

    def _restoring(self) -> bool:
        """Whether the recovery runs (it counts a loss while restoring)."""
        return self._recovery is not None and not self._recovery.done()

    def _pace_loss(self, protocol: StreamsProtocol, error: Exception) -> None:
        """
        Pace the next connection by the lost one's progress; give up, with
        :py:class:`~rbfly.streams.error.RecoveryStalled`, after the
        backoff's stalls over its stall time (or its attempts).
        """
        if protocol.progressed or self._age() >= STABLE:
            self._pace.progressed()
            return
        stalled = self._stall(error)
        if stalled is not None:
            self._fail(stalled)

    def _age(self) -> float:
        """Seconds since the connection was opened."""
        return asyncio.get_running_loop().time() - self._opened_at

    def _stall(self, error: Exception) -> RecoveryStalled | None:
        """
        A connection was lost before any progress: a failed attempt (the
        pace sets when the next one may open), or the error to give up with.
        """
        age = self._age()
        delay = self._pace.stall(asyncio.get_running_loop().time())
        if delay is not None:
            logger.info('connection lost %.2fs after it was opened, before any progress;'
                        ' next connection in %.2fs', age, delay)
            return None
        stalled = RecoveryStalled(
            'giving up: {} connections in a row lost before any progress (no confirmation,'
            ' no chunk); the last {:.1f}s after it was opened: {}'.format(
                self._pace.gave_up_after, age, error),
        )
        stalled.__cause__ = error
        return stalled

    def start_recovery(self) -> None:
        """
        Start the recovery task unless it runs already.
        """
        if self._recovery is None or self._recovery.done():
            self._recovery = asyncio.get_running_loop().create_task(self._recover())

    async def wait_recovery(self) -> None:
        """
        Wait until a lost connection is back (starting the recovery when
        needed).
        """
        if self._closing:
            raise ConnectionLost('client is disconnected')
        protocol = self.protocol
        if protocol is None or not protocol.is_open:
            self.start_recovery()
        await self._wait_for_recovery()

    async def _wait_for_recovery(self) -> None:
        """
        Wait for the recovery task, if any.

        :raises ConnectionLost: When the manager was closed meanwhile (its
            recovery cancelled: the waiter is not).
        """
        recovery = self._recovery
        if recovery is None:
            return
        # wait() neither raises the task's cancellation nor hides ours
        await asyncio.wait([recovery])
        if recovery.cancelled():
            raise ConnectionLost('client disconnected')
        error = recovery.exception()
        if error is not None:
            raise error

    async def _recover(self) -> None:
        """
        Reconnect and restore what the manager holds, waiting between
        attempts as the backoff policy says.

        The first attempt waits as the pace says: at once after a
        connection that made progress, the backoff's next delay after one
        lost before any (see :py:meth:`_pace_loss`). A connection that
        fails on what it receives once restored (a chunk the client
        refuses, say) was otherwise reconnected to at once, again and
        again: 47,000 times in a minute, measured. A connection that
        cannot be opened is a failed attempt; one opened and lost while
        restoring is a stall too (a broker that accepts connections and
        drops them as the client declares its publishers is given up on
        as one that drops them later).
        """
        loop = asyncio.get_running_loop()
        await self._hold()
        while not self._closing:
            try:
                protocol = await self._open()
            except (ConnectionLost, StreamsError, OSError) as ex:
                delay = self._pace.failed(loop.time())
                if delay is None:
                    self._fail(ConnectionLost('cannot reconnect: {}'.format(ex)))
                    return
                logger.info('reconnection failed (%s); next attempt in %.2fs', ex, delay)
                await asyncio.sleep(delay)
                continue
            try:
                await self._restore_all(protocol)
            except (ConnectionLost, StreamsError, OSError) as ex:
                if protocol.progressed:
                    self._pace.progressed()
                elif (stalled := self._stall(ex)) is not None:
                    self._fail(stalled)
                    return
                await self._hold()
                continue
            logger.info('connection recovered: %d publishers, %d subscriptions',
                        len(self.publishers), len(self.subscriptions))
            self._report(ConnectionState.RECOVERED, protocol, None)
            return

    def _fail(self, error: Exception) -> None:
        """
        Give up: FAILED, and what the manager holds ends with ``error``,
        but for what another part claims (see ``claimed``): that part
        alone decides what becomes of it.
        """
        self._report(ConnectionState.FAILED, None, error)
        self._give_up(error, self._claimed)

    async def _restore_all(self, protocol: StreamsProtocol) -> None:
        for publisher in list(self.publishers):
            try:
                await self._restore_publisher(protocol, publisher)
            except ConnectionLost:
                raise
            except StreamsError as ex:  # e.g. the stream was deleted meanwhile
                logger.warning('cannot restore publisher of %r: %s', publisher.stream, ex)
                publisher.fail(ex)
                let_go(publisher)
        for subscription in list(self.subscriptions):
            try:
                await self._restore_subscription(protocol, subscription)
            except ConnectionLost:
                raise
            except StreamsError as ex:
                logger.warning('cannot restore subscription to %r: %s', subscription.stream, ex)
                subscription.fail(ex)
                let_go(subscription)

    def _give_up(
            self, error: Exception, spare: Callable[[Held], bool] | None = None,
    ) -> None:
        """
        Fail what the manager holds, and let go of it (nobody restores it),
        but for what ``spare`` says another part handles.
        """
        for publisher in list(self.publishers):
            if spare is None or not spare(publisher):
                publisher.fail(error)
                let_go(publisher)
        for subscription in list(self.subscriptions):
            if spare is None or not spare(subscription):
                subscription.fail(error)
                let_go(subscription)

    async def close(self) -> None:
        """
        Close the connection and stop any recovery; publishers and
        subscriptions still open end with :py:class:`ConnectionLost`.
        """
        self._closing = True
        recovery = self._recovery
        if recovery is not None and not recovery.done():
            recovery.cancel()
            # wait() neither raises the task's cancellation nor hides ours
            await asyncio.wait([recovery])
        protocol = self.protocol
        self.protocol = None
        self._lost = None
        if protocol is not None:
            await protocol.close()
            self._report(ConnectionState.CLOSED, protocol, None)
        # nobody will reconnect: callers still waiting must not hang
        self._give_up(ConnectionLost('client disconnected'))

__all__ = ['ConnectionManager']
