"""
The fake broker on the event loop: a TCP server on the loopback interface
feeding the sans-IO core (:py:mod:`rbfly.testing.core`).

The server listens on ``127.0.0.1`` on a port the system picks, so that
tests running at the same time never collide; :py:attr:`FakeBroker.url`
is what to give :py:func:`rbfly.streams.streams_client`.
"""

from __future__ import annotations

import asyncio
import time
import typing as tp
from collections.abc import Callable, Mapping

from .config import BrokerConfig
from .core import BrokerCore
from .groups import GroupMember
from .session import Session
from .store import Store

class _Connection(asyncio.Protocol):
    def __init__(self, core: BrokerCore, live: set[_Connection]) -> None:
        self._core = core
        self._live = live
        self._transport: asyncio.Transport | None = None
        self._session: Session | None = None
        self.closed = asyncio.get_running_loop().create_future()
        live.add(self)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = tp.cast(asyncio.Transport, transport)
        self._session = self._core.open_session(self._transport.write, self._transport.close)

    def data_received(self, data: bytes) -> None:
        assert self._session is not None
        self._session.receive_data(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._session is not None:
            self._session.connection_lost()
        self._live.discard(self)
        if not self.closed.done():
            self.closed.set_result(None)

class FakeBroker:
    """
    An in-memory RabbitMQ Streams broker for an application's unit tests.

    It speaks the stream protocol to any client, so that the code under
    test runs unchanged: create and delete streams, publish (named
    publishers are deduplicated as RabbitMQ does), confirm, subscribe from
    any offset specification with credit, filter, store and query offsets,
    single active consumers (of super streams' partitions too, spread over
    a group's members as RabbitMQ 4.3 does: :py:mod:`rbfly.testing.groups`),
    super streams and stream statistics. What it keeps is in
    :py:attr:`store`, for a test to look at; :py:meth:`group_members` shows
    a group of single active consumers (:py:meth:`wait_group` waits for
    one to be as a test needs), and :py:meth:`hand_off` hands one over to
    its next member, to test an application's hand-off.

    It is one node with no replicas, and everything is committed at once:
    tests of failover, retention or TLS need RabbitMQ.

    Example::

        async with FakeBroker() as broker:
            client = streams_client(broker.url)
            ...

    :param version: RabbitMQ version the broker claims (rbfly enables
        features by it).
    :param users: User names and passwords it accepts (default
        ``guest``/``guest``).
    :param virtual_hosts: Virtual hosts it accepts (default ``/``).
    :param request_timeout: Seconds a client may leave a
        ``ConsumerUpdate`` unanswered before its connection is closed
        (without a ``Close`` frame), as RabbitMQ closes it after its
        ``request_timeout`` (60 s, checked on a timer of that period: 60 to
        120 s); the fake broker checks four times a period, at most a
        second apart. ``None``: never.
    """
    def __init__(
            self, *,
            version: str = '4.3.0',
            users: Mapping[str, str] | None = None,
            virtual_hosts: tp.Iterable[str] = ('/',),
            request_timeout: float | None = 60,
    ) -> None:
        if request_timeout is not None and not request_timeout > 0:
            raise ValueError('request_timeout must be positive or None, got {!r}'.format(
                request_timeout,
            ))
        self._config = BrokerConfig(
            version=version,
            users=dict(users) if users is not None else {'guest': 'guest'},
            virtual_hosts=frozenset(virtual_hosts),
            request_timeout=None if request_timeout is None else int(request_timeout * 1000),
        )
        self._core: BrokerCore | None = None
        self._server: asyncio.Server | None = None
        self._connections: set[_Connection] = set()
        self._expiry: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        """The port it listens on (after :py:meth:`start`)."""
        return self._running().config.port

    @property
    def url(self) -> str:
        """URL of the broker for :py:func:`rbfly.streams.streams_client`, as the first user."""
        user, password = next(iter(self._config.users.items()), ('', ''))
        return 'rabbitmq-stream://{}:{}@127.0.0.1:{}/'.format(user, password, self.port)

    @property
    def store(self) -> Store:
        """The streams, publishers' sequences, offsets and super streams it keeps."""
        return self._running().store

    async def start(self) -> None:
        """Listen on a free port of the loopback interface."""
        if self._server is not None:
            raise RuntimeError('the fake broker is running already')
        loop = asyncio.get_running_loop()
        holder: list[BrokerCore] = []
        live = self._connections
        server = await loop.create_server(lambda: _Connection(holder[0], live), '127.0.0.1', 0)
        port = server.sockets[0].getsockname()[1]
        config = BrokerConfig(
            self._config.version, self._config.users, self._config.virtual_hosts,
            '127.0.0.1', port, self._config.request_timeout,
        )
        core = BrokerCore(config, lambda: int(time.time() * 1000))
        holder.append(core)
        self._core, self._server = core, server
        if config.request_timeout is not None:
            period = min(config.request_timeout / 4000, 1.0)
            self._expiry = asyncio.create_task(_expire(core, period))

    async def stop(self) -> None:
        """Close the clients' connections and stop listening."""
        server, core = self._server, self._core
        self._server = None
        if server is None or core is None:
            return
        if self._expiry is not None:
            self._expiry.cancel()
            await asyncio.wait([self._expiry])
            self._expiry = None
        server.close()
        for session in list(core.sessions):
            session.drop()
        # the transports are closed once their buffers are written; wait
        # for that, so that nothing of the broker outlives stop()
        closing = [c.closed for c in self._connections]
        if closing:
            await asyncio.wait(closing, timeout=5)
        await server.wait_closed()

    def drop_connections(self) -> int:
        """
        Close every client connection at once (as a broker that goes
        away would), to test an application's recovery; the data stays.
        Returns the number of connections closed.
        """
        core = self._running()
        sessions = list(core.sessions)
        for session in sessions:
            session.drop()
        return len(sessions)

    def group_members(self, stream: str, name: str) -> list[GroupMember]:
        """
        The members of a single-active-consumer group, the subscriptions
        named ``name`` on ``stream`` (a partition of a super stream has a
        group of its own), in the group's order (the order they joined),
        each with its state (``active``, ``waiting``, ``deactivating``) and
        the ``connection_name`` its client gave; none when there is no
        such group.
        """
        return self._running().group_members(stream, name)

    async def wait_group(
            self, stream: str, name: str, condition: Callable[[list[GroupMember]], bool],
    ) -> list[GroupMember]:
        """
        Wait until the members of a single-active-consumer group (as
        :py:meth:`group_members` gives them) satisfy ``condition``,
        checked now and at each change of a group, and return them. A
        client's subscription is a member once the broker answered it,
        which the client does not tell; so a test waits for it here::

            await broker.wait_group('orders', 'orders-app', lambda m: len(m) == 2)

        Wrap it in ``asyncio.timeout`` not to wait forever.
        """
        core = self._running()
        loop = asyncio.get_running_loop()
        while not condition(members := core.group_members(stream, name)):
            changed = loop.create_future()

            def wake(changed: asyncio.Future[None] = changed) -> None:
                if not changed.done():
                    changed.set_result(None)

            core.watch_groups(wake)
            await changed
        return members

    async def hand_off(self, stream: str, name: str) -> GroupMember | None:
        """
        Hand a single-active-consumer group over to its next member, as
        RabbitMQ moves a super stream's partition to another member (it
        has no such request of its own): the active member steps down (its
        client is told ``ConsumerUpdate(active=false)`` and gets no more
        chunks), and once its client answered (after storing its offset,
        say), the next member is activated (``ConsumerUpdate(active=true)``)
        and starts where its client's answer says.

        The next member is the one after the active one in the group's
        order (after the last: the first): the order turns by one, the
        first member going last, as if it left and joined again (for a
        partition, the member chosen by the partition's index is then the
        next one). A group of one member stays as it is.

        It returns once the hand-off ended: the old member answered, and
        the new one answered its activation (it receives chunks from then
        on); or once the group is gone. A client that does not answer
        holds it, until the broker closes its connection
        (``request_timeout``); wrap it in ``asyncio.timeout`` to fail
        sooner. Returns the active member then (``None`` if none).

        :raises LookupError: When there is no such group.
        """
        group = self._running().hand_off(stream, name)
        settled = asyncio.get_running_loop().create_future()

        def done() -> None:
            if not settled.done():
                settled.set_result(None)

        group.when_settled(done)
        await settled
        return next((m for m in group.snapshot() if m.active), None)

    def _running(self) -> BrokerCore:
        if self._core is None:
            raise RuntimeError('the fake broker is not started')
        return self._core

    async def __aenter__(self) -> tp.Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

async def _expire(core: BrokerCore, period: float) -> None:
    """Close the connections that left a ``ConsumerUpdate`` unanswered too long."""
    while True:
        await asyncio.sleep(period)
        core.expire()

__all__ = ['FakeBroker']
