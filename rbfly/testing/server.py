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
from collections.abc import Mapping

from .config import BrokerConfig
from .core import BrokerCore
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
    single active consumers, super streams and stream statistics. What it
    keeps is in :py:attr:`store`, for a test to look at.

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
    """
    def __init__(
            self, *,
            version: str = '4.3.0',
            users: Mapping[str, str] | None = None,
            virtual_hosts: tp.Iterable[str] = ('/',),
    ) -> None:
        self._config = BrokerConfig(
            version=version,
            users=dict(users) if users is not None else {'guest': 'guest'},
            virtual_hosts=frozenset(virtual_hosts),
        )
        self._core: BrokerCore | None = None
        self._server: asyncio.Server | None = None
        self._connections: set[_Connection] = set()

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
            '127.0.0.1', port,
        )
        core = BrokerCore(config, lambda: int(time.time() * 1000))
        holder.append(core)
        self._core, self._server = core, server

    async def stop(self) -> None:
        """Close the clients' connections and stop listening."""
        server, core = self._server, self._core
        self._server = None
        if server is None or core is None:
            return
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

    def _running(self) -> BrokerCore:
        if self._core is None:
            raise RuntimeError('the fake broker is not started')
        return self._core

    async def __aenter__(self) -> tp.Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

__all__ = ['FakeBroker']
