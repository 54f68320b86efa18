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
from collections.abc import Awaitable, Callable, Iterator

from ..backoff import Backoff
from ..error import ConnectionLost, StreamsError
from ..events import ConnectionState
from .records import Held, let_go

if tp.TYPE_CHECKING:
    from .connection import StreamsProtocol

logger = logging.getLogger(__name__)

STABLE = 10.0
"""
Seconds a recovered connection must last for its loss to start a recovery
with fresh delays; lost sooner, the loss is a failed attempt of the last
recovery.
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
    """
    def __init__(
            self,
            connect: Callable[[], Awaitable[StreamsProtocol]],
            backoff: Backoff,
            restore_publisher: Callable[[StreamsProtocol, P], Awaitable[None]],
            restore_subscription: Callable[[StreamsProtocol, S], Awaitable[None]],
            on_lost: Callable[[ConnectionManager[P, S]], None] | None = None,
            notify: Notify | None = None,
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
        # the delays of the last recovery, and when it ended: a connection
        # lost again soon after continues them (see _recover)
        self._delays: Iterator[float] | None = None
        self._recovered_at: float | None = None

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
                protocol = await self._open()
                self._report(ConnectionState.OPEN, protocol, None)
        return protocol

    def _report(
            self, state: ConnectionState, protocol: StreamsProtocol | None,
            error: Exception | None,
    ) -> None:
        if self._notify is not None:
            self._notify(self, state, protocol, error)

    async def _open(self) -> StreamsProtocol:
        protocol = await self._connect()
        protocol.on_lost = self._on_lost
        self.protocol = protocol
        return protocol

    def _on_lost(self, protocol: StreamsProtocol, error: Exception) -> None:
        if protocol is not self.protocol or self._closing:
            return
        self.protocol = None
        logger.warning('connection lost: %s', error)
        self._report(ConnectionState.LOST, protocol, error)
        if self._lost_hook is not None:
            self._closing = True
            self._lost_hook(self)
        elif self.publishers or self.subscriptions:
            self.start_recovery()

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
        attempts as the backoff policy says; a connection lost again while
        restoring counts as a failed attempt (a broker that accepts
        connections and drops them is not reconnected to in a tight loop).

        So does a connection lost within :py:data:`STABLE` seconds of its
        recovery: the delays continue from the last recovery's, and the
        first attempt waits the next one. A connection that fails on what
        it receives once restored (a chunk the client refuses, say) was
        otherwise reconnected to at once, again and again: 47,000 times in
        a minute, measured.
        """
        loop = asyncio.get_running_loop()
        delays = self._delays
        recovered_at = self._recovered_at
        if delays is None or recovered_at is None or loop.time() - recovered_at >= STABLE:
            delays = self._delays = self._backoff.delays()
        else:
            delay = next(delays, None)
            if delay is None:
                error = ConnectionLost('cannot keep a connection: lost {:.1f}s after its'
                                       ' recovery, again'.format(loop.time() - recovered_at))
                self._report(ConnectionState.FAILED, None, error)
                self._give_up(error)
                return
            logger.info('connection lost %.2fs after its recovery; reconnecting in %.2fs',
                        loop.time() - recovered_at, delay)
            await asyncio.sleep(delay)
        while not self._closing:
            try:
                protocol = await self._open()
                await self._restore_all(protocol)
            except (ConnectionLost, StreamsError, OSError) as ex:
                delay = next(delays, None)
                if delay is None:
                    error = ConnectionLost('cannot reconnect: {}'.format(ex))
                    self._report(ConnectionState.FAILED, None, error)
                    self._give_up(error)
                    return
                logger.info('reconnection failed (%s); next attempt in %.2fs', ex, delay)
                await asyncio.sleep(delay)
                continue
            logger.info('connection recovered: %d publishers, %d subscriptions',
                        len(self.publishers), len(self.subscriptions))
            self._recovered_at = loop.time()
            self._report(ConnectionState.RECOVERED, protocol, None)
            return

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

    def _give_up(self, error: Exception) -> None:
        """Fail what the manager holds, and let go of it (nobody restores it)."""
        for publisher in list(self.publishers):
            publisher.fail(error)
            let_go(publisher)
        for subscription in list(self.subscriptions):
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
        if protocol is not None:
            await protocol.close()
            self._report(ConnectionState.CLOSED, protocol, None)
        # nobody will reconnect: callers still waiting must not hang
        self._give_up(ConnectionLost('client disconnected'))

__all__ = ['ConnectionManager']
