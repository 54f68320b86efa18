"""
Opening connections: to one of the client's brokers, or to a given node of
a cluster (through an address resolver when the nodes' names are not
reachable addresses), with the handshake, the login of the moment and the
negotiation of command versions done.

Nodes are named as the broker advertises them (``advertised_host`` and
``advertised_port`` in the Open response, the names Metadata uses).
"""

from __future__ import annotations

import asyncio
import dataclasses as dtc
import functools
import logging
import platform
import typing as tp

from ..aio.connect import open_connection
from ..aio.connection import StreamsProtocol
from ..error import AuthenticationFailure, ClientClosed, ConnectionLost, RequestTimeout
from ..metrics import Counters
from ..protocol.commands import CommandVersion, ExchangeCommandVersions, MetadataUpdate
from ..protocol.connection import ConnectionCore
from ..protocol.constants import Key
from ..url import ConnectionInfo
from .credentials import Credentials
from .options import ClientOptions

logger = logging.getLogger('rbfly.streams.client')

Node: tp.TypeAlias = tuple[str, int]
Where: tp.TypeAlias = Node | None
"""Where a connection goes: a node, or ``None`` for the client's own broker."""

OnUpdate: tp.TypeAlias = tp.Callable[[StreamsProtocol, MetadataUpdate], None]

NODE_ATTEMPTS = 20
"""
Connections opened through an address resolver until one reaches the node
wanted: a load balancer in front of three nodes picking at random misses
20 times in a row once in 3,300 (round robin hits within 3).
"""

def node_of(protocol: StreamsProtocol) -> Node | None:
    """The node a connection is open to, as the broker names it."""
    props = protocol.connection_properties
    host = props.get('advertised_host')
    port = props.get('advertised_port')
    if host is None or port is None or not port.isdigit():
        return None
    try:
        return (host, int(port))
    except ValueError:  # digits int() does not take, e.g. '²', or too many
        return None

class Connector:
    """
    Opens the client's connections.

    :param options: The client's options.
    :param credentials: The brokers and the login.
    :param counters: The client's metrics (connections opened).
    """
    def __init__(
            self, options: ClientOptions, credentials: Credentials, counters: Counters,
    ) -> None:
        self._options = options
        self._credentials = credentials
        self._counters = counters
        self._last = -1  # index of the broker connected to last
        # the client's async with block ended: it opens nothing more
        # (until entered again)
        self.closed = False

    def _check_open(self) -> None:
        if self.closed:
            raise ClientClosed(
                'the client was closed at the end of its async with block: use it inside'
                ' the block, or enter it again (disconnect() instead keeps a client'
                ' usable: it connects again on its next call)'
            )

    async def connect(self, on_update: OnUpdate) -> StreamsProtocol:
        """
        Connect to one of the client's brokers: the one after the broker
        connected to last (after a lost connection, another node of a
        cluster is tried first), then the others in turn.

        :raises ConnectionLost: When no broker can be reached.
        """
        credentials = self._credentials
        infos = credentials.infos
        n = len(infos)
        error: ConnectionLost | None = None
        for k in range(n):
            i = (self._last + 1 + k) % n
            try:
                protocol = await self.open(infos[i], on_update)
            except ConnectionLost as ex:
                if n > 1:
                    logger.warning('%s', ex)
                error = ex
            else:
                self._last = i
                credentials.info = infos[i]
                return protocol
        assert error is not None
        if n == 1:
            raise error
        raise ConnectionLost('cannot connect to any of {} brokers; last error: {}'.format(
            n, error,
        )) from error

    async def connect_node(
            self, where: Where, home: StreamsProtocol | None, on_update: OnUpdate,
    ) -> StreamsProtocol:
        """
        Connect to a node (``None``: the client's broker, at the client's
        address; ``home`` is the client's own connection, if open), with the
        login of the moment. Through an address resolver (a load balancer,
        say), connect again until the node answering is the one wanted.

        :raises ConnectionLost: When the node was not reached in
            :py:data:`NODE_ATTEMPTS` connections.
        """
        resolver = self._options.address_resolver
        current = self._credentials.info
        node: Node | None = None
        if where is None:
            info = current
            if resolver is not None and home is not None:
                node = node_of(home)  # the client's node
        elif resolver is None:
            info = dtc.replace(current, host=where[0], port=where[1])
        else:
            host, port = resolver(*where)
            info = dtc.replace(current, host=host, port=port)
            node = where
        for _ in range(NODE_ATTEMPTS if node is not None else 1):
            protocol = await self.open(info, on_update)
            reached = node_of(protocol)
            if node is None or reached == node:
                return protocol
            logger.info('connected to node %s through %s, not %s; again', reached, info, node)
            await protocol.close()
        assert node is not None
        raise ConnectionLost('node {}:{} not reached through {} in {} connections'.format(
            node[0], node[1], info, NODE_ATTEMPTS,
        ))

    async def open(self, info: ConnectionInfo, on_update: OnUpdate) -> StreamsProtocol:
        """
        Open a connection to a broker: handshake, login, and the command
        versions both sides know (RabbitMQ 3.11+); the broker's
        MetadataUpdate commands go to ``on_update``.

        :raises ConnectionLost: When the broker cannot be reached or does
            not answer.
        :raises AuthenticationFailure: When the broker refuses the login.
        """
        self._check_open()
        options = self._options
        credentials = self._credentials
        login = await credentials.login(info)
        core = ConnectionCore(
            virtual_host=info.virtual_host,
            username=login.username,
            password=login.password,
            mechanism=login.mechanism,
            frame_max=options.frame_max,
            heartbeat=options.heartbeat,
            client_properties=self.client_properties(),
        )
        logger.info('connecting to %s', info)
        try:
            protocol = await open_connection(
                info.host, info.port, core, ssl=info.ssl, timeout=options.connect_timeout,
                buffers=(options.receive_buffer, options.send_buffer),
            )
        except AuthenticationFailure:
            credentials.refused()
            raise
        credentials.opened()
        protocol.address = (info.host, info.port)
        protocol.request_timeout = options.request_timeout
        # a client that polls (spin) reads at once: it is awake anyway
        protocol.read_pause = 0.0 if options.spin else options.read_pause
        # the connection that received it: the broker forgot what that
        # connection held of the stream, and nothing else
        protocol.on_metadata_update = functools.partial(on_update, protocol)
        if protocol.broker_version >= (3, 11):
            try:
                await protocol.request(ExchangeCommandVersions([
                    CommandVersion(Key.PUBLISH, 1, 2),
                    CommandVersion(Key.DELIVER, 1, 2),
                ]))
            except RequestTimeout as ex:
                # a node that does not answer is not reachable
                protocol.abort(ConnectionLost(str(ex)))
                raise ConnectionLost('{}: {}'.format(info, ex)) from ex
            except asyncio.CancelledError:
                protocol.abort(ConnectionLost('cancelled while connecting'))
                raise
        self._counters.connections_opened += 1
        logger.info('connected to %s (RabbitMQ %s)', info,
                    protocol.server_properties.get('version', 'unknown'))
        return protocol

    def client_properties(self) -> dict[str, str]:
        """Peer properties the client tells the broker."""
        props = {
            'product': 'rbfly',
            'platform': 'Python {}'.format(platform.python_version()),
            'information': 'RabbitMQ Streams client for Python (asyncio)',
        }
        name = self._options.connection_name
        if name is not None:
            props['connection_name'] = name
        props.update(self._options.client_properties or {})
        return props

__all__ = ['NODE_ATTEMPTS', 'Connector', 'Node', 'Where', 'node_of']
