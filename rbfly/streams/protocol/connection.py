"""
Sans-IO state machine of one RabbitMQ Streams connection.

Handshake (PROTOCOL.adoc "Authentication")::

    Client                      Server
      | PeerProperties  ---------->|
      |<---------- PeerProperties  |
      | SaslHandshake   ---------->|
      |<----------- SaslHandshake  |
      | SaslAuthenticate --------->|
      |<-------- SaslAuthenticate  |
      |<--------------------- Tune |
      | Tune ------------------->  |
      | Open ------------------->  |
      |<--------------------- Open |

:py:class:`ConnectionCore` runs the handshake by itself, answers
heartbeats and the broker's Close, and turns every other frame into an
event (the decoded command). It does no I/O and reads no clock: bytes come
in through :py:meth:`ConnectionCore.receive_data`, bytes to write are taken
with :py:meth:`ConnectionCore.data_to_send`, and the current time is passed
in as ``now`` (seconds, monotonic).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from ...error import FrameDecodeError, ProtocolError
from ..error import (
    HandshakeFrameTooLarge,
    ResponseError,
    SaslMechanismNotSupported,
    error_for_code,
)
from ._frames import FrameReader, decode_hot
from ._publish import PublishEncoder
from .base import OffsetSpec
from .codec import decode_frame, encode
from .commands import (
    Close,
    CloseResponse,
    Command,
    CommandBase,
    ConsumerUpdate,
    ConsumerUpdateResponse,
    Heartbeat,
    Open,
    OpenResponse,
    PeerProperties,
    PeerPropertiesResponse,
    Request,
    SaslAuthenticate,
    SaslAuthenticateResponse,
    SaslHandshake,
    SaslHandshakeResponse,
    Tune,
    TuneResponse,
)
from .constants import (
    DEFAULT_FRAME_MAX,
    DEFAULT_HEARTBEAT,
    DEFAULT_MAX_RECEIVED_FRAME_SIZE,
    INITIAL_FRAME_MAX,
    PRE_OPEN_FRAME_MAX,
    ResponseCode,
)
from .errors import foreign_protocol
from .states import (
    RUNNING,
    TRANSITIONS,
    ConnectionClosed,
    ConnectionStateError,
    ConsumerUpdateRequested,
    CoreState,
    Event,
    HandshakeFailed,
    HeartbeatTimeout,
    Opened,
)

logger = logging.getLogger(__name__)

S = CoreState
_RUNNING = RUNNING

def _negotiate(ours: int, theirs: int) -> int:
    if ours == 0:
        return theirs
    if theirs == 0:
        return ours
    return min(ours, theirs)

def broker_version(properties: Mapping[str, str]) -> tuple[int, ...]:
    """
    The broker's version from its peer properties (``(3, 13, 7)``; ``(0,)``
    when it says none or one that is not numbers).
    """
    try:
        return tuple(int(v) for v in properties.get('version', '0').split('+')[0].split('.')[:3])
    except ValueError:
        return (0,)

def sasl_plain(username: str, password: str) -> bytes:
    """The SASL PLAIN response: no authorization identity, user, password."""
    return b'\0' + username.encode() + b'\0' + password.encode()

MECHANISMS = ('PLAIN', 'EXTERNAL', 'ANONYMOUS')
"""SASL mechanisms of the client."""

class ConnectionCore:
    """
    Protocol state of one connection, without I/O.

    :param virtual_host: Virtual host to open.
    :param username: User name for SASL PLAIN.
    :param password: Password for SASL PLAIN (never logged).
    :param mechanism: ``PLAIN``, ``EXTERNAL`` (TLS client certificate) or
        ``ANONYMOUS`` (RabbitMQ 4.0+: the broker's ``anonymous_login_user``).
    :param frame_max: Largest frame we accept (0: no limit); the broker's
        value is taken when lower.
    :param heartbeat: Heartbeat interval we ask for, in seconds (0: none).
    :param client_properties: Peer properties sent to the broker.
    """
    def __init__(
            self,
            *,
            virtual_host: str = '/',
            username: str | None = 'guest',
            password: str | None = 'guest',
            mechanism: str = 'PLAIN',
            frame_max: int = DEFAULT_FRAME_MAX,
            heartbeat: int = DEFAULT_HEARTBEAT,
            client_properties: Mapping[str, str] | None = None,
    ) -> None:
        if mechanism not in MECHANISMS:
            raise ValueError('unsupported SASL mechanism {!r}'.format(mechanism))
        self._virtual_host = virtual_host
        self._username = username or ''
        self._password = password or ''
        self._mechanism = mechanism
        self._frame_max = frame_max
        self._heartbeat = heartbeat
        self._client_properties = dict(client_properties or {})
        self._check_handshake_frames()
        self._state = CoreState.IDLE
        self._reader = FrameReader(PRE_OPEN_FRAME_MAX)  # until the connection is open
        # the server's first bytes, to name the protocol of a server that
        # does not speak this one (see foreign_protocol)
        self._head = b''
        self._out: list[bytes | memoryview] = []
        self._correlation_id = 0
        self._server_properties: Mapping[str, str] = {}
        self.frame_max = 0
        self.heartbeat = 0
        # encodes Publish frames that fit frame_max (from Tune on)
        self.publish_encoder: PublishEncoder | None = None
        self._last_received = 0.0
        self._last_sent = 0.0

    def _check_handshake_frames(self) -> None:
        """
        :raises HandshakeFrameTooLarge: When a frame of the handshake would
            exceed :py:data:`INITIAL_FRAME_MAX` (a broker closes the
            connection without a word, so say it before connecting).
        """
        frames = [('peer properties', encode(PeerProperties(self._client_properties), 0))]
        if self._mechanism == 'PLAIN':
            data = sasl_plain(self._username, self._password)
            frames.append((
                'SASL PLAIN response (the user name and the password or OAuth 2 token)',
                encode(SaslAuthenticate(self._mechanism, data), 0),
            ))
        for what, frame in frames:
            if len(frame) > INITIAL_FRAME_MAX:
                raise HandshakeFrameTooLarge(
                    '{}: a frame of {:,} bytes; brokers accept at most {:,} bytes'
                    ' before the connection is open (RabbitMQ 4.3:'
                    ' stream.initial_frame_max)'.format(what, len(frame), INITIAL_FRAME_MAX),
                )

    @property
    def state(self) -> CoreState:
        return self._state

    @property
    def buffered(self) -> int:
        """Bytes received of a frame not complete yet."""
        return self._reader.buffered

    def _set_state(self, state: CoreState) -> None:
        if state not in TRANSITIONS[self._state]:
            raise ConnectionStateError(
                'illegal connection state transition {} -> {}'.format(
                    self._state.value, state.value
                )
            )
        logger.debug('connection state %s -> %s', self._state.value, state.value)
        self._state = state

    #
    # output
    #

    def data_to_send(self) -> bytes | memoryview:
        """
        Take the bytes queued for the broker.
        """
        out = self._out
        if not out:
            return b''
        self._out = []
        return out[0] if len(out) == 1 else b''.join(out)

    def _send(self, frame: bytes | memoryview, now: float | None = None) -> None:
        self._out.append(frame)
        if now is not None:
            self._last_sent = now

    def _next_id(self) -> int:
        self._correlation_id = (self._correlation_id + 1) & 0xffffffff
        return self._correlation_id

    def start(self, now: float) -> None:
        """
        Begin the handshake (queue the PeerProperties request).
        """
        self._set_state(CoreState.PEER_PROPERTIES)
        self._last_received = now
        self._send(encode(PeerProperties(self._client_properties), self._next_id()), now)

    def request(self, command: Request[CommandBase], now: float) -> int:
        """
        Queue a request; return its correlation id (the response, with
        it, is an event of class ``command.RESPONSE``).

        :raises ConnectionStateError: When the connection is not open.
        :raises rbfly.streams.error.FrameTooLarge: When the request's frame
            exceeds the negotiated frame size.
        """
        self._check_open()
        correlation_id = self._next_id()
        frame = encode(command, correlation_id)
        self._check_size(frame)
        self._send(frame, now)
        return correlation_id

    def send(self, command: Command, now: float) -> None:
        """
        Queue a command without a response (Credit, StoreOffset,
        ConsumerUpdateResponse, ...).
        """
        self._check_open()
        frame = encode(command)
        self._check_size(frame)
        self._send(frame, now)

    def send_frame(self, frame: bytes | memoryview, now: float) -> None:
        """
        Queue an already encoded frame (Publish frames are encoded by the
        Cython publish encoder, which keeps to the frame size itself).
        """
        self._check_open()
        self._send(frame, now)

    def answer_consumer_update(
            self, correlation_id: int, offset_spec: OffsetSpec, now: float,
    ) -> None:
        """
        Answer a :py:class:`~rbfly.streams.protocol.states.ConsumerUpdateRequested` event: where the
        consumer starts reading when it becomes active
        (``OffsetSpec.none()`` when it becomes inactive).
        """
        self._check_open()
        self._send(encode(ConsumerUpdateResponse(
            correlation_id, ResponseCode.OK, offset_spec,
        )), now)

    def close(self, now: float, code: int = ResponseCode.OK, reason: str = 'OK') -> int | None:
        """
        Start closing the connection; return the Close request's
        correlation id, or ``None`` when there is nothing to close.
        """
        if self._state is not CoreState.OPENED:
            if self._state is not CoreState.CLOSED:
                self._set_state(CoreState.CLOSED)
            return None
        correlation_id = self._next_id()
        self._send(encode(Close(code, reason), correlation_id), now)
        self._set_state(CoreState.CLOSING)
        return correlation_id

    def connection_lost(self) -> None:
        """
        Mark the connection closed after its transport was lost.
        """
        if self._state is not CoreState.CLOSED:
            self._set_state(CoreState.CLOSED)

    def _check_open(self) -> None:
        if self._state is not CoreState.OPENED:
            raise ConnectionStateError(
                'connection is not open (state: {})'.format(self._state.value)
            )

    def _check_size(self, frame: bytes) -> None:
        if self.frame_max and len(frame) > self.frame_max:
            raise error_for_code(
                ResponseCode.FRAME_TOO_LARGE,
                'frame of {} bytes exceeds the maximum of {}'.format(len(frame), self.frame_max),
            )

    #
    # timers
    #

    def tick(self, now: float) -> list[Event]:
        """
        Send a heartbeat when nothing was sent for a heartbeat interval;
        report a silent broker after two intervals without data.
        """
        if self._state is not CoreState.OPENED or not self.heartbeat:
            return []
        silence = now - self._last_received
        if silence >= 2 * self.heartbeat:
            return [HeartbeatTimeout(silence)]
        if now - self._last_sent >= self.heartbeat:
            self._send(encode(Heartbeat()), now)
        return []

    def next_tick(self) -> float | None:
        """
        Time at which :py:meth:`tick` should be called next.
        """
        if not self.heartbeat:
            return None
        return min(self._last_sent + self.heartbeat, self._last_received + 2 * self.heartbeat)

    #
    # input
    #

    def receive_data(self, data: bytes, now: float) -> list[Event]:
        """
        Feed bytes received from the broker; return the events they make.

        :raises rbfly.error.FrameDecodeError: When a frame is malformed; the
            connection cannot be used any more.
        """
        self._last_received = now
        if self._state is CoreState.CLOSED:
            return []  # the broker may still send a few frames; ignore them
        self._reader.feed(data)
        events: list[Event] = []
        opened = self._state in _RUNNING
        if not opened and len(self._head) < 8:
            self._head += data[:8 - len(self._head)]
        try:
            for frame in self._reader:
                command: Command
                correlation_id: int | None = None
                hot = decode_hot(frame)  # Deliver, PublishConfirm, Heartbeat
                if hot is not None:
                    command = hot
                else:
                    decoded = decode_frame(frame)
                    command = decoded.command
                    correlation_id = decoded.correlation_id
                if opened:
                    if type(command) is Heartbeat:
                        continue
                    if type(command) is Close:
                        events.append(self._closed_by_broker(command, correlation_id, now))
                        continue
                    if type(command) is ConsumerUpdate and correlation_id is not None:
                        events.append(ConsumerUpdateRequested(
                            correlation_id, command.subscription_id, command.active,
                        ))
                        continue
                    if type(command) is CloseResponse and self._state is CoreState.CLOSING:
                        self._set_state(CoreState.CLOSED)
                        events.append(ConnectionClosed(ResponseCode.OK, 'OK', False))
                        continue
                    events.append(command)
                elif self.state is CoreState.CLOSED:  # set by an earlier frame
                    break
                else:
                    event = self._handshake(command, correlation_id, now)
                    if event is not None:
                        events.append(event)
                    opened = self._state in _RUNNING
        except FrameDecodeError as ex:
            if opened or (foreign := foreign_protocol(self._head)) is None:
                raise
            raise foreign from ex
        return events

    def _closed_by_broker(
            self, command: Close, correlation_id: int | None, now: float,
    ) -> ConnectionClosed:
        logger.info('broker closed the connection: code=%s reason=%s',
                    command.code, command.reason)
        if correlation_id is not None:
            self._send(encode(CloseResponse(correlation_id, ResponseCode.OK)), now)
        if self._state is not CoreState.CLOSED:
            self._set_state(CoreState.CLOSED)
        return ConnectionClosed(command.code, command.reason, True)

    def _fail(self, error: ResponseError | ProtocolError) -> HandshakeFailed:
        self._set_state(CoreState.CLOSED)
        return HandshakeFailed(error)

    def _refused(self, code: int, state: CoreState) -> str:
        """
        The context of a handshake the broker refused: the step, and for a
        login or a virtual host refused, the user and what to check (the
        broker says no more than the code; never the password).
        """
        step = 'connection handshake ({})'.format(state.value)
        user = self._username
        if code == ResponseCode.AUTHENTICATION_FAILURE and self._mechanism == 'PLAIN':
            return (
                '{}: the broker refused user {!r}: check the user name and the password'
                ' (or OAuth 2 token) of the connection URI, and that the user exists on'
                ' this broker (rabbitmqctl list_users)'.format(step, user)
            )
        if code == ResponseCode.AUTHENTICATION_FAILURE:
            return '{}: the broker refused the SASL {} login: check what the broker' \
                ' accepts for it'.format(step, self._mechanism)
        if code == ResponseCode.SASL_AUTHENTICATION_FAILURE_LOOPBACK:
            return (
                '{}: user {!r} may log in only from the broker\'s own host (RabbitMQ\'s'
                ' loopback_users, guest by default): connect with another user'.format(
                    step, user)
            )
        if code == ResponseCode.VIRTUAL_HOST_ACCESS_FAILURE:
            return (
                '{}: user {!r} may not open virtual host {!r}: check the path of the'
                ' connection URI (the default virtual host / is the path /),'
                ' that the virtual host exists, and the user\'s permissions on it'
                ' (rabbitmqctl list_permissions -p VHOST)'.format(step, user, self._virtual_host)
            )
        return step

    def _handshake(
            self, command: Command, correlation_id: int | None, now: float,
    ) -> Event | None:
        state = self._state
        if type(command) is Heartbeat:
            return None
        if type(command) is Close:
            return self._closed_by_broker(command, correlation_id, now)
        if correlation_id is not None and correlation_id != self._correlation_id:
            # one request at a time during the handshake: the answer to
            # anything else is not the broker's answer to it
            return self._fail(ProtocolError(
                '{} for correlation id {}, not requested; the client asked with {}'
                ' (connection handshake: {})'.format(
                    type(command).__name__, correlation_id, self._correlation_id, state.value,
                )
            ))
        code = getattr(command, 'code', ResponseCode.OK)
        if code != ResponseCode.OK:
            return self._fail(error_for_code(code, self._refused(code, state)))

        if state is S.PEER_PROPERTIES and isinstance(command, PeerPropertiesResponse):
            self._server_properties = dict(command.properties)
            self._set_state(S.SASL_HANDSHAKE)
            self._send(encode(SaslHandshake(), self._next_id()), now)
        elif state is S.SASL_HANDSHAKE and isinstance(command, SaslHandshakeResponse):
            if self._mechanism not in command.mechanisms:
                return self._fail(SaslMechanismNotSupported(
                    'SASL mechanism {} not offered by the broker (offered: {})'.format(
                        self._mechanism, ', '.join(command.mechanisms)
                    ),
                ))
            if self._mechanism == 'PLAIN':
                data = sasl_plain(self._username, self._password)
            else:
                data = b''
            self._set_state(S.SASL_AUTHENTICATE)
            self._send(encode(SaslAuthenticate(self._mechanism, data), self._next_id()), now)
        elif state is S.SASL_AUTHENTICATE and isinstance(command, SaslAuthenticateResponse):
            self._set_state(S.TUNE)
        elif state in (S.SASL_AUTHENTICATE, S.TUNE) and type(command) is Tune:
            if state is S.SASL_AUTHENTICATE:
                self._set_state(S.TUNE)
            self.frame_max = _negotiate(self._frame_max, command.frame_max)
            self.heartbeat = _negotiate(self._heartbeat, command.heartbeat)
            self.publish_encoder = PublishEncoder(self.frame_max)
            self._send(encode(TuneResponse(self.frame_max, self.heartbeat)), now)
            self._set_state(S.OPEN)
            self._send(encode(Open(self._virtual_host), self._next_id()), now)
        elif state is S.OPEN and isinstance(command, OpenResponse):
            self._set_state(S.OPENED)
            self._reader.max_frame_size = DEFAULT_MAX_RECEIVED_FRAME_SIZE
            return Opened(
                self._server_properties, dict(command.properties),
                self.frame_max, self.heartbeat,
            )
        else:
            return self._fail(ProtocolError(
                'unexpected {} during connection handshake ({})'.format(
                    type(command).__name__, state.value
                )
            ))
        return None

# (the states and events are re-exported: they were defined here before)
__all__ = [
    'MECHANISMS', 'ConnectionClosed', 'ConnectionCore', 'ConnectionStateError',
    'ConsumerUpdateRequested', 'CoreState', 'Event', 'HandshakeFailed', 'HeartbeatTimeout',
    'Opened', 'broker_version', 'sasl_plain',
]
