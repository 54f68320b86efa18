"""
The sans-IO connection core against a fake broker: no sockets, no clock.
"""

import dataclasses
import typing as tp

import pytest

from rbfly.error import ProtocolError
from rbfly.streams.error import AuthenticationFailure, SaslMechanismNotSupported
from rbfly.streams.protocol import (
    Close,
    CloseResponse,
    ConsumerUpdate,
    ConsumerUpdateResponse,
    Create,
    CreateResponse,
    FrameReader,
    Heartbeat,
    Open,
    OpenResponse,
    PeerProperties,
    PeerPropertiesResponse,
    PublishConfirm,
    SaslAuthenticate,
    SaslAuthenticateResponse,
    SaslHandshake,
    SaslHandshakeResponse,
    Tune,
    TuneResponse,
    decode_frame,
    encode,
)
from rbfly.streams.protocol.base import OffsetSpec
from rbfly.streams.protocol.connection import ConnectionCore
from rbfly.streams.protocol.states import (
    ConnectionClosed,
    ConnectionStateError,
    ConsumerUpdateRequested,
    CoreState,
    HandshakeFailed,
    HeartbeatTimeout,
    Opened,
)

OK = 1

def sent(core: ConnectionCore) -> list[tuple[object, int | None]]:
    """Decode what the core wants to send."""
    reader = FrameReader()
    reader.feed(core.data_to_send())
    return [(d.command, d.correlation_id) for d in map(decode_frame, reader)]

def feed(core: ConnectionCore, data: bytes, mode: str, now: float = 0) -> list[object]:
    events: list[object] = []
    if mode == 'whole':
        events.extend(core.receive_data(data, now))
    elif mode == 'bytes':
        for i in range(len(data)):
            events.extend(core.receive_data(data[i:i + 1], now))
    else:  # split in the middle of a frame, then the rest with trailing data
        half = len(data) // 2 + 1
        events.extend(core.receive_data(data[:half], now))
        events.extend(core.receive_data(data[half:], now))
    return events

def handshake(core: ConnectionCore, mode: str = 'whole', tune: tuple[int, int] = (1 << 20, 60)
              ) -> list[object]:
    core.start(0)
    assert sent(core) == [(PeerProperties({'product': 'test'}), 1)]
    events = feed(core, encode(PeerPropertiesResponse(1, OK, {'version': '3.10.8'})), mode)
    assert sent(core) == [(SaslHandshake(), 2)]
    events += feed(core, encode(SaslHandshakeResponse(2, OK, ['PLAIN', 'AMQPLAIN'])), mode)
    assert sent(core) == [(SaslAuthenticate('PLAIN', b'\0user\0secret'), 3)]
    events += feed(
        core,
        encode(SaslAuthenticateResponse(3, OK, None)) + encode(Tune(*tune)),
        mode,
    )
    out = sent(core)
    assert out[1] == (Open('vh'), 4)
    events += feed(core, encode(OpenResponse(4, OK, {'advertised_host': 'h'})), mode)
    return [out[0][0], *events]

def make_core(**kw: object) -> ConnectionCore:
    options: dict[str, object] = {
        'virtual_host': 'vh', 'username': 'user', 'password': 'secret',
        'client_properties': {'product': 'test'},
    }
    options.update(kw)
    return ConnectionCore(**options)  # type: ignore[arg-type]

@pytest.mark.parametrize('mode', ['whole', 'bytes', 'split'])
def test_handshake(mode: str) -> None:
    """The core runs the whole handshake, fed whole, byte by byte or split."""
    core = make_core(heartbeat=30)
    tune, *events = handshake(core, mode, tune=(131072, 60))
    assert tune == TuneResponse(131072, 30)
    assert events == [Opened({'version': '3.10.8'}, {'advertised_host': 'h'}, 131072, 30)]
    assert core.state is CoreState.OPENED
    assert (core.frame_max, core.heartbeat) == (131072, 30)

def test_requests_and_responses() -> None:
    """Requests get increasing correlation ids; responses and pushes become events."""
    core = make_core()
    handshake(core)
    cid = core.request(Create('s', {}), 1)
    assert sent(core) == [(Create('s', {}), cid)]
    events = core.receive_data(
        encode(CreateResponse(cid, OK)) + encode(PublishConfirm(0, [1, 2])) + encode(Heartbeat()),
        2,
    )
    assert events == [CreateResponse(cid, OK), PublishConfirm(0, (1, 2))]

@pytest.mark.parametrize('mode', ['whole', 'bytes', 'split'])
def test_consumer_update(mode: str) -> None:
    """
    The broker's ConsumerUpdate request becomes an event with its
    correlation id, and the answer carries it back with the offset.
    """
    core = make_core()
    handshake(core)
    events = feed(core, encode(ConsumerUpdate(3, True), 77) + encode(Heartbeat()), mode)
    assert events == [ConsumerUpdateRequested(77, 3, True)]
    core.answer_consumer_update(77, OffsetSpec.offset(12), 1)
    assert sent(core) == [(ConsumerUpdateResponse(77, OK, OffsetSpec.offset(12)), 77)]
    core.answer_consumer_update(78, OffsetSpec.none(), 1)
    assert sent(core) == [(ConsumerUpdateResponse(78, OK, OffsetSpec.none()), 78)]

def test_trailing_partial_frame() -> None:
    """A partial frame stays buffered until the rest arrives."""
    core = make_core()
    handshake(core)
    data = encode(PublishConfirm(1, [7])) * 2
    assert core.receive_data(data[:-3], 0) == [PublishConfirm(1, (7,))]
    assert core.receive_data(data[-3:], 0) == [PublishConfirm(1, (7,))]

def test_partial_frame_counted() -> None:
    """The bytes of a frame not complete yet are counted (named when the peer goes)."""
    core = make_core()
    handshake(core)
    assert core.buffered == 0
    core.receive_data(encode(PublishConfirm(1, [7]))[:-3], 0)
    assert core.buffered == len(encode(PublishConfirm(1, [7]))) - 3

HANDSHAKE_STEPS = ['peer-properties', 'sasl-handshake', 'sasl-authenticate']

@pytest.mark.parametrize('step', range(3))
def test_handshake_unrequested_correlation_id(step: int) -> None:
    """
    An answer of the handshake with a correlation id the client did not
    ask with (one request at a time then) ends the handshake with a
    ProtocolError naming both ids; nothing more is sent.
    """
    answers: list[PeerPropertiesResponse | SaslHandshakeResponse | SaslAuthenticateResponse] = [
        PeerPropertiesResponse(1, OK, {}),
        SaslHandshakeResponse(2, OK, ['PLAIN']),
        SaslAuthenticateResponse(3, OK, None),
    ]
    core = make_core()
    core.start(0)
    for answer in answers[:step]:
        assert core.receive_data(encode(answer), 0) == []
    sent(core)
    wrong = dataclasses.replace(answers[step], correlation_id=step + 41)
    [event] = core.receive_data(encode(wrong), 0)
    assert isinstance(event, HandshakeFailed)
    assert type(event.error) is ProtocolError
    assert str(event.error) == (
        '{} for correlation id {}, not requested; the client asked with {}'
        ' (connection handshake: {})'.format(
            type(wrong).__name__, step + 41, step + 1, HANDSHAKE_STEPS[step],
        )
    )
    assert core.state is CoreState.CLOSED
    assert sent(core) == []

def test_authentication_failure() -> None:
    """Refused credentials end the handshake with a typed error."""
    core = make_core()
    core.start(0)
    core.receive_data(encode(PeerPropertiesResponse(1, OK, {})), 0)
    core.receive_data(encode(SaslHandshakeResponse(2, OK, ['PLAIN'])), 0)
    sent(core)
    events = core.receive_data(encode(SaslAuthenticateResponse(3, 0x08, None)), 0)
    assert len(events) == 1 and isinstance(events[0], HandshakeFailed)
    assert isinstance(events[0].error, AuthenticationFailure)
    assert 'secret' not in str(events[0].error)
    assert core.state is CoreState.CLOSED
    # the user and what to check, since the broker says no more than 0x08
    assert str(events[0].error) == (
        "Authentication failure (response code 0x08): connection handshake"
        " (sasl-authenticate): the broker refused user 'user': check the user name and"
        " the password (or OAuth 2 token) of the connection URI, and that the user"
        " exists on this broker (rabbitmqctl list_users)"
    )

def test_loopback_and_virtual_host_refused() -> None:
    """
    A user allowed only on the broker's host, and a virtual host refused:
    the user (and the virtual host) named, with what to do.
    """
    core = make_core(username='guest')
    core.start(0)
    core.receive_data(encode(PeerPropertiesResponse(1, OK, {})), 0)
    core.receive_data(encode(SaslHandshakeResponse(2, OK, ['PLAIN'])), 0)
    [event] = core.receive_data(encode(SaslAuthenticateResponse(3, 0x0B, None)), 0)
    assert isinstance(event, HandshakeFailed)
    assert "user 'guest' may log in only from the broker's own host" in str(event.error)

    core = make_core()
    core.start(0)
    core.receive_data(encode(PeerPropertiesResponse(1, OK, {})), 0)
    core.receive_data(encode(SaslHandshakeResponse(2, OK, ['PLAIN'])), 0)
    core.receive_data(encode(SaslAuthenticateResponse(3, OK, None)) + encode(Tune(0, 0)), 0)
    [event] = core.receive_data(encode(OpenResponse(4, 0x0C, {})), 0)
    assert isinstance(event, HandshakeFailed)
    assert str(event.error) == (
        "Virtual host access failure (response code 0x0c): connection handshake (open):"
        " user 'user' may not open virtual host 'vh': check the path of the connection"
        " URI (the default virtual host / is the path /), that the virtual host exists,"
        " and the user's permissions on it (rabbitmqctl list_permissions -p VHOST)"
    )
    assert 'secret' not in str(event.error)

def test_mechanism_not_offered() -> None:
    """EXTERNAL not offered by the broker is a clear error."""
    core = make_core(mechanism='EXTERNAL')
    core.start(0)
    core.receive_data(encode(PeerPropertiesResponse(1, OK, {})), 0)
    events = core.receive_data(encode(SaslHandshakeResponse(2, OK, ['PLAIN'])), 0)
    assert isinstance(events[0], HandshakeFailed)
    assert isinstance(events[0].error, SaslMechanismNotSupported)

@pytest.mark.parametrize('mechanism', ['EXTERNAL', 'ANONYMOUS'])
def test_mechanism_without_secret(mechanism: str) -> None:
    """EXTERNAL and ANONYMOUS send an empty response, no credentials."""
    core = make_core(mechanism=mechanism)
    core.start(0)
    core.receive_data(encode(PeerPropertiesResponse(1, OK, {})), 0)
    sent(core)
    core.receive_data(encode(SaslHandshakeResponse(2, OK, ['PLAIN', mechanism])), 0)
    assert sent(core) == [(SaslAuthenticate(mechanism, b''), 3)]
    with pytest.raises(ValueError, match='unsupported SASL mechanism'):
        make_core(mechanism='AMQPLAIN')

def test_request_before_open() -> None:
    """Requests before the handshake finished are refused."""
    core = make_core()
    with pytest.raises(ConnectionStateError):
        core.request(Create('s', {}), 0)

def test_broker_close() -> None:
    """The broker's Close is answered and reported."""
    core = make_core()
    handshake(core)
    sent(core)
    events = core.receive_data(encode(Close(0x06, 'bye'), 9), 0)
    assert events == [ConnectionClosed(0x06, 'bye', True)]
    assert sent(core) == [(CloseResponse(9, OK), 9)]
    assert core.state is CoreState.CLOSED

def test_client_close() -> None:
    """Our Close waits for the broker's response."""
    core = make_core()
    handshake(core)
    sent(core)
    cid = core.close(0)
    assert cid is not None
    assert sent(core) == [(Close(OK, 'OK'), cid)]
    assert core.receive_data(encode(CloseResponse(cid, OK)), 0) == [
        ConnectionClosed(OK, 'OK', False),
    ]

def test_heartbeats() -> None:
    """Idle: a heartbeat is sent; silent broker: reported after two intervals."""
    core = make_core(heartbeat=10)
    handshake(core, tune=(0, 10))
    sent(core)
    assert core.tick(5) == []
    assert sent(core) == []
    assert core.tick(10) == []
    assert sent(core) == [(Heartbeat(), None)]
    core.receive_data(encode(Heartbeat()), 15)
    assert core.tick(30) == []
    events = core.tick(36)
    assert events == [HeartbeatTimeout(21)]

def test_frame_limit_before_open() -> None:
    """
    Before the connection is open, a frame larger than PRE_OPEN_FRAME_MAX
    is refused (an HTTP server's answer reads as a 1.2 GB frame); once
    open, frames up to DEFAULT_MAX_RECEIVED_FRAME_SIZE are read.
    """
    import struct

    from rbfly.error import FrameDecodeError
    from rbfly.streams.protocol.constants import PRE_OPEN_FRAME_MAX

    core = make_core()
    core.start(0)
    # (a ForeignProtocol, a FrameDecodeError, naming the HTTP server)
    with pytest.raises(FrameDecodeError, match='HTTP server') as info:
        core.receive_data(b'HTTP/1.1 400 Bad Request\r\n\r\n', 0)
    assert 'exceeds the maximum of 65536' in str(info.value.__cause__)

    core = make_core()
    core.start(0)
    with pytest.raises(FrameDecodeError, match='exceeds the maximum of 65536'):
        core.receive_data(struct.pack('>I', PRE_OPEN_FRAME_MAX + 1), 0)

    core = make_core()
    handshake(core)
    big = 1 << 20  # a frame bigger than the limit before open: buffered, not refused
    assert core.receive_data(struct.pack('>I', big) + b'\0' * 100, 0) == []

@pytest.mark.parametrize('options, what', [
    ({'password': 'p' * 8200}, 'SASL PLAIN response'),
    ({'username': 'u' * 8200}, 'SASL PLAIN response'),
    ({'client_properties': {'connection_name': 'n' * 8200}}, 'peer properties'),
], ids=['password', 'username', 'peer-properties'])
def test_handshake_frames_capped(options: dict[str, tp.Any], what: str) -> None:
    """
    A handshake frame over INITIAL_FRAME_MAX (8,192 bytes, RabbitMQ 4.3's
    stream.initial_frame_max) is refused before connecting, naming it.
    """
    from rbfly.streams.error import HandshakeFrameTooLarge
    with pytest.raises(HandshakeFrameTooLarge, match=what):
        ConnectionCore(**options)

def test_handshake_frames_cap_not_for_external() -> None:
    """SASL EXTERNAL sends no password: a long one configured is not sent."""
    ConnectionCore(password='p' * 9000, mechanism='EXTERNAL')
