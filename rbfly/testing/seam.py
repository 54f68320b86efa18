"""
A test's view inside a :py:class:`~rbfly.streams.StreamsClient`: its
connections and what each holds, the broker it connects to, its options,
the SASL mechanism a connection logged in with, and the work it runs in
the background.

It is for tests, rbfly's own and an application's: the client's API has
none of this, as a program has no use for it. This module is the one
place that reads the client's private parts, so that no test does; when
they change, this module changes with them, and what it promises stays:

- it reads the client and changes nothing in it, but
  :py:func:`connect`, which opens the client's own connection as the
  client's first request would;
- :py:class:`ConnectionView` is a snapshot: a connection opened, lost or
  closed later, or a publisher or subscription added or gone, does not
  change one taken before;
- the objects it hands out (a connection, the client's options, a
  publisher, a subscription) are the client's own: a test looks at them
  (their state, the broker's properties, the transport's socket), and
  changes them at its own risk.

The connections are ``StreamsProtocol`` objects of rbfly's asyncio adapter
(``rbfly.streams.aio.connection``): ``is_open``, ``server_properties``,
``connection_properties``, ``transport``, and the ``publishers`` and
``subscriptions`` each has by its own ids on the broker.
"""

from __future__ import annotations

import typing as tp
from dataclasses import dataclass

if tp.TYPE_CHECKING:
    from ..streams.aio.connection import StreamsProtocol
    from ..streams.aio.manager import ConnectionManager
    from ..streams.client import StreamsClient
    from ..streams.parts.options import ClientOptions
    from ..streams.publishers.base import PublisherTrait
    from ..streams.subscriptions.subscription import Subscription
    from ..streams.url import ConnectionInfo

@dataclass(frozen=True)
class ConnectionView:
    """
    One of a client's connections, as it was when a test asked.

    :ivar protocol: The connection, or ``None`` when there is none (not
        opened yet, lost and not recovered yet, or closed by
        :py:meth:`~rbfly.streams.StreamsClient.disconnect`).
    :ivar publishers: The client's publishers it holds (declared on it,
        or to be declared on it again after a loss).
    :ivar subscriptions: The client's subscriptions it holds (subscribed
        on it, or to be subscribed again after a loss).
    """
    protocol: StreamsProtocol | None
    publishers: frozenset[PublisherTrait]
    subscriptions: frozenset[Subscription]

def _view(manager: ConnectionManager[PublisherTrait, Subscription]) -> ConnectionView:
    return ConnectionView(
        manager.protocol, frozenset(manager.publishers), frozenset(manager.subscriptions),
    )

async def connect(client: StreamsClient) -> StreamsProtocol:
    """
    The client's own connection, open: opened now when there is none (as
    the client's first request opens it, raising what that would raise,
    ``AuthenticationFailure`` or ``ConnectionLost`` say), or once its
    recovery ends when it was lost. The same object while the connection
    lasts.
    """
    return await client._connections.get()

def own_connection(client: StreamsClient) -> ConnectionView:
    """
    The client's own connection as it is now (this opens nothing, see
    :py:func:`connect`): the one its requests go on, and its publishers
    and subscriptions first.
    """
    return _view(client._connections.own)

def node_connections(
        client: StreamsClient,
) -> dict[tuple[str, int] | None, list[ConnectionView]]:
    """
    The client's connections besides its own, by where they go: a node of
    a cluster, ``(host, port)`` as the broker names it, where publishers
    or subscriptions are placed; or ``None``, more connections to the
    client's own broker, opened when its own holds as many publishers (or
    subscriptions) as one may (``publishers_per_connection``,
    ``subscriptions_per_connection``). Each closes with the last of what
    it holds: the mapping is empty when there are none.
    """
    nodes = client._connections.nodes
    return {where: [_view(m) for m in managers] for where, managers in nodes.items()}

async def wait_background(client: StreamsClient) -> None:
    """
    Wait until the steps the client took on its own in the background
    ended: deleting on the broker a publisher or subscription whose
    declaration timed out or was cancelled, closing a node's connection
    with the last of what it held, restoring a stream's publishers and
    subscriptions after the broker said it changed. (What retries until
    :py:meth:`~rbfly.streams.StreamsClient.disconnect`, as placing a
    subscription anew on a member's node or renewing an OAuth 2 token, is
    not waited for.)
    """
    await client._tasks.wait()

def current_broker(client: StreamsClient) -> ConnectionInfo:
    """
    The broker the client connects to: the first of those it was given,
    until connecting to it fails and the client moves to the next one; the
    broker of its last connection after that.
    """
    return client._credentials.info

def client_options(client: StreamsClient) -> ClientOptions:
    """The client's options, as its constructor checked and kept them."""
    return client._options

def sasl_mechanism(protocol: StreamsProtocol) -> str:
    """The SASL mechanism a connection logged in with (``PLAIN``, ``EXTERNAL``)."""
    return protocol.core._mechanism

__all__ = [
    'ConnectionView',
    'client_options',
    'connect',
    'current_broker',
    'node_connections',
    'own_connection',
    'sasl_mechanism',
    'wait_background',
]
