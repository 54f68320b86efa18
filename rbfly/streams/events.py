"""
Connection events: what happens to a client's connections, for an
application's health checks, metrics and logs.

``streams_client(uri, on_connection=callback)`` calls ``callback(event)``
with a :py:class:`ConnectionEvent` when a connection opens, is lost, is
back (its publishers and subscriptions restored), is given up, or is
closed. Connections to the nodes of a cluster where publishers and
subscriptions are placed (see :py:mod:`rbfly.streams.parts.placement`) report
too, with ``placement=True``; such a connection is not reopened when lost:
what it held moves to other connections.

The callback runs in the event loop, synchronously: it must not block. An
exception it raises is logged and otherwise ignored: reporting never stops
the client.
"""

from __future__ import annotations

import dataclasses as dtc
import enum

class ConnectionState(enum.Enum):
    """What happened to a connection."""
    OPEN = 'open'
    """Connected and handshake done (a first connection, or a new one after close)."""
    LOST = 'lost'
    """The connection was lost; the client reconnects when it has publishers or subscriptions."""
    RECOVERED = 'recovered'
    """
    Connected again after a loss, publishers and subscriptions restored
    (those of a stream without a leader now are declared once it has one).
    """
    FAILED = 'failed'
    """Reconnection given up (the backoff policy's attempts are used up)."""
    CLOSED = 'closed'
    """Closed by the application (``disconnect``, the end of ``async with``)."""

@dtc.dataclass(frozen=True)
class ConnectionEvent:
    """
    A change of a connection's state.

    :ivar state: What happened.
    :ivar node: The broker node, ``(host, port)`` as the broker advertises
        it, or as connected to; ``None`` when not known.
    :ivar error: The cause of ``LOST`` and ``FAILED``.
    :ivar placement: The connection is one to a node where publishers or
        subscriptions are placed, not the client's own.
    """
    state: ConnectionState
    node: tuple[str, int] | None
    error: Exception | None = None
    placement: bool = False

__all__ = ['ConnectionEvent', 'ConnectionState']
