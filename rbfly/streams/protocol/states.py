"""
What a connection's sans-IO core (:py:mod:`rbfly.streams.protocol.connection`)
is in, and what it tells its adapter: its states and their transitions,
and the events :py:meth:`~rbfly.streams.protocol.connection.ConnectionCore.receive_data`
and ``tick`` return beside the decoded commands (as h11 keeps its events
in a module of their own).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from ...error import ProtocolError
from ..error import ResponseError
from .commands import Command

class CoreState(enum.Enum):
    """
    State of a connection's core: the steps of the handshake, open,
    closing, closed (what happens to a client's connections, as the
    application sees it, is :py:class:`rbfly.streams.events.ConnectionState`).
    """
    IDLE = 'idle'
    PEER_PROPERTIES = 'peer-properties'
    SASL_HANDSHAKE = 'sasl-handshake'
    SASL_AUTHENTICATE = 'sasl-authenticate'
    TUNE = 'tune'
    OPEN = 'open'
    OPENED = 'opened'
    CLOSING = 'closing'
    CLOSED = 'closed'

S = CoreState
TRANSITIONS: Mapping[CoreState, frozenset[CoreState]] = {
    S.IDLE: frozenset({S.PEER_PROPERTIES, S.CLOSED}),
    S.PEER_PROPERTIES: frozenset({S.SASL_HANDSHAKE, S.CLOSED}),
    S.SASL_HANDSHAKE: frozenset({S.SASL_AUTHENTICATE, S.CLOSED}),
    S.SASL_AUTHENTICATE: frozenset({S.TUNE, S.CLOSED}),
    S.TUNE: frozenset({S.OPEN, S.CLOSED}),
    S.OPEN: frozenset({S.OPENED, S.CLOSED}),
    S.OPENED: frozenset({S.CLOSING, S.CLOSED}),
    S.CLOSING: frozenset({S.CLOSED}),
    S.CLOSED: frozenset(),
}

RUNNING = frozenset({S.OPENED, S.CLOSING})

class ConnectionStateError(ProtocolError):
    """
    An operation is not allowed in the connection's current state (e.g. a
    request before the handshake finished, or after close).
    """

@dataclass(frozen=True, slots=True)
class Opened:
    """
    Event: the handshake finished and the connection is open.

    :param server_properties: Broker's peer properties (``version``, ...).
    :param connection_properties: Properties of the Open response
        (``advertised_host``, ``advertised_port``).
    :param frame_max: Negotiated maximum frame size (0: no limit).
    :param heartbeat: Negotiated heartbeat interval in seconds (0: none).
    """
    server_properties: Mapping[str, str]
    connection_properties: Mapping[str, str]
    frame_max: int
    heartbeat: int

@dataclass(frozen=True, slots=True)
class HandshakeFailed:
    """
    Event: the broker refused the handshake; the connection is closed.
    """
    error: ResponseError | ProtocolError

@dataclass(frozen=True, slots=True)
class HeartbeatTimeout:
    """
    Event: nothing was received for two heartbeat intervals; the peer is
    considered gone and the connection must be dropped.
    """
    silence: float

@dataclass(frozen=True, slots=True)
class ConnectionClosed:
    """
    Event: the connection was closed by the broker (``code`` and
    ``reason`` from its Close) or at our request.
    """
    code: int
    reason: str
    by_broker: bool

@dataclass(frozen=True, slots=True)
class ConsumerUpdateRequested:
    """
    Event: the broker tells a single active consumer whether it is active,
    and waits for an answer with the offset to resume from
    (``ConnectionCore.answer_consumer_update``).
    """
    correlation_id: int
    subscription_id: int
    active: bool

Event = (
    Command | Opened | HandshakeFailed | HeartbeatTimeout | ConnectionClosed
    | ConsumerUpdateRequested
)

__all__ = [
    'RUNNING',
    'TRANSITIONS',
    'ConnectionClosed',
    'ConnectionStateError',
    'ConsumerUpdateRequested',
    'CoreState',
    'Event',
    'HandshakeFailed',
    'HeartbeatTimeout',
    'Opened',
]
