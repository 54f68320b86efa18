"""
The asyncio adapter (:py:class:`~rbfly.streams.aio.connection.StreamsProtocol`)
with a fake transport: the broker's bytes are made by the project's own
codec, what the adapter writes is decoded back. A full handshake, then
requests and their responses, routing of confirmations, errors, chunks
and metadata updates, and the loss of the connection. No sockets; the
loop's clock is the only clock (a heartbeat of 0 sets no timer).
"""

from __future__ import annotations

import asyncio
import time

import pytest

from rbfly.error import FrameDecodeError
from rbfly.streams.aio.connect import open_connection
from rbfly.streams.aio.connection import StreamsProtocol
from rbfly.streams.error import (
    AccessRefused,
    AuthenticationFailure,
    ConnectionLost,
    FeatureNotSupported,
    ResponseError,
    StreamAlreadyExists,
    StreamDoesNotExist,
)
from rbfly.streams.protocol import (
    Close,
    CloseResponse,
    ConsumerUpdate,
    ConsumerUpdateResponse,
    Create,
    CreateResponse,
    Deliver,
    Metadata,
    MetadataResponse,
    MetadataUpdate,
    OpenResponse,
    PeerPropertiesResponse,
    PublishConfirm,
    PublishError,
    SaslAuthenticateResponse,
    SaslHandshakeResponse,
    Tune,
    encode,
)
from rbfly.streams.protocol.base import OffsetSpec, PublishingError
from rbfly.streams.protocol.connection import ConnectionCore
from rbfly.streams.protocol.states import Opened

from ._fakes import (
    OK,
    OPEN_PROPERTIES,
    SERVER,
    Publisher,
    Subscription,
    connect,
    handshake,
    start,
)

#
# handshake
#

async def test_handshake() -> None:
    protocol, transport = handshake()
    assert protocol.opened.result() == Opened(
        {**SERVER, 'version': '3.10.8'}, OPEN_PROPERTIES, 1 << 20, 0,
    )
    assert protocol.is_open
    protocol.check_open()
    assert protocol.server_properties == SERVER
    assert protocol.broker_version == (3, 10, 8)
    assert protocol.connection_properties == OPEN_PROPERTIES
    assert protocol._timer is None  # no heartbeat, no timer
    assert not transport.closing

async def test_handshake_refused() -> None:
    """Refused credentials fail the opening with the typed error; the transport is closed."""
    protocol, transport = connect()
    protocol.data_received(encode(PeerPropertiesResponse(1, OK, SERVER)))
    protocol.data_received(encode(SaslHandshakeResponse(2, OK, ['PLAIN'])))
    protocol.data_received(encode(SaslAuthenticateResponse(3, 0x08, None)))
    with pytest.raises(AuthenticationFailure):
        await protocol.opened
    assert transport.closed
    assert not protocol.is_open
    with pytest.raises(AuthenticationFailure):
        protocol.check_open()
    await protocol.closed  # (the transport ended the connection)

async def test_lost_during_handshake() -> None:
    """A transport lost before the handshake ended fails the opening, naming the step."""
    protocol, _ = connect()
    protocol.data_received(encode(PeerPropertiesResponse(1, OK, SERVER)))
    protocol.connection_lost(None)
    with pytest.raises(ConnectionLost, match='during the handshake'):
        await protocol.opened
    assert protocol.closed.done()

async def test_heartbeat_timer_on_loop_clock() -> None:
    """With a heartbeat, the core's next tick is a timer of the loop; the loss cancels it."""
    loop = asyncio.get_running_loop()
    before = loop.time()
    protocol, _ = handshake(heartbeat=60)
    after = loop.time()
    timer = protocol._timer
    assert timer is not None
    # the core's next tick, from the loop's time (uvloop keeps timers in
    # whole ms: a difference of up to 1 ms, plus the floats' rounding, which
    # made 1e-3 fail once: 26558.427 against 26558.426)
    assert timer.when() == pytest.approx(protocol.core.next_tick(), abs=2e-3)
    assert before + 60 - 2e-3 <= timer.when() <= after + 60 + 2e-3
    protocol.connection_lost(None)
    assert protocol._timer is None and timer.cancelled()

#
# requests
#

async def test_request_resolves() -> None:
    protocol, transport = handshake()
    task, cid = await start(protocol, transport, Create('orders', {}), "stream 'orders'")
    assert not task.done()
    protocol.data_received(encode(CreateResponse(cid, OK)))
    assert await task == CreateResponse(cid, OK)
    assert len(protocol.requests) == 0

async def test_responses_in_any_order() -> None:
    """Responses find their requests by correlation id."""
    protocol, transport = handshake()
    first, cid1 = await start(protocol, transport, Create('a', {}))
    second, cid2 = await start(protocol, transport, Metadata(('b',)))
    assert cid1 != cid2
    protocol.data_received(
        encode(MetadataResponse(cid2, (), ())) + encode(CreateResponse(cid1, OK)),
    )
    assert await first == CreateResponse(cid1, OK)
    assert await second == MetadataResponse(cid2, (), ())

ERRORS = {
    'stream exists': (0x05, StreamAlreadyExists),
    'stream does not exist': (0x02, StreamDoesNotExist),
    'access refused': (0x10, AccessRefused),
    'unknown code': (0x7e, ResponseError),
}

@pytest.mark.parametrize(('code', 'error'), ERRORS.values(), ids=ERRORS.keys())
async def test_error_response(code: int, error: type[ResponseError]) -> None:
    """A response with an error code raises its typed error, with the request's context."""
    protocol, transport = handshake()
    task, cid = await start(protocol, transport, Create('orders', {}), "stream 'orders'")
    protocol.data_received(encode(CreateResponse(cid, code)))
    with pytest.raises(error, match="stream 'orders'") as info:
        await task
    assert type(info.value) is error
    assert info.value.code == code
    assert protocol.is_open  # the connection stays usable
    task, cid = await start(protocol, transport, Create('orders', {}))
    protocol.data_received(encode(CreateResponse(cid, OK)))
    assert await task == CreateResponse(cid, OK)

async def test_late_response_ignored() -> None:
    """A response to a cancelled request is dropped; the connection stays usable."""
    protocol, transport = handshake()
    task, cid = await start(protocol, transport, Create('orders', {}))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(protocol.requests) == 0
    protocol.data_received(encode(CreateResponse(cid, OK)) + encode(CreateResponse(999, OK)))
    assert protocol.is_open

async def test_request_before_open() -> None:
    protocol, transport = connect()
    with pytest.raises(ConnectionLost, match='not open'):
        await protocol.request(Create('orders', {}))
    with pytest.raises(ConnectionLost, match='not open'):
        protocol.send(Create('orders', {}))
    transport.sent()

#
# routing
#

async def test_publish_confirm_and_error_routed() -> None:
    """Confirmations and errors go to the publisher registered under their id."""
    protocol, _ = handshake()
    mine, other = Publisher(), Publisher()
    protocol.publishers[3] = mine
    protocol.publishers[4] = other
    protocol.data_received(
        encode(PublishConfirm(3, [1, 2]))
        + encode(PublishConfirm(9, [7]))  # nobody's: dropped
        + encode(PublishError(3, [PublishingError(5, 0x12), PublishingError(6, 0x02)]))
        + encode(PublishConfirm(4, [8])),
    )
    assert mine.calls == [('confirm', [1, 2]), ('error', [(5, 0x12), (6, 0x02)])]
    assert other.calls == [('confirm', [8])]

async def test_deliver_routed() -> None:
    """A chunk goes to the subscription registered under its id, undecoded."""
    protocol, _ = handshake()
    sub = Subscription()
    protocol.subscriptions[2] = sub
    protocol.data_received(encode(Deliver(2, b'chunk-bytes')) + encode(Deliver(5, b'other')))
    assert sub.calls == [('chunk', b'chunk-bytes', None)]
    assert protocol.is_open

async def test_metadata_update() -> None:
    protocol, _ = handshake()
    protocol.data_received(encode(MetadataUpdate(0x06, 'orders')))  # no callback: dropped
    updates: list[MetadataUpdate] = []
    protocol.on_metadata_update = updates.append
    protocol.data_received(encode(MetadataUpdate(0x06, 'orders')))
    assert updates == [MetadataUpdate(0x06, 'orders')]

async def test_consumer_update() -> None:
    """
    The broker's ConsumerUpdate goes to its subscription; one for a
    subscription gone meanwhile is answered at once, with no offset.
    """
    protocol, transport = handshake()
    sub = Subscription()
    protocol.subscriptions[1] = sub
    protocol.data_received(encode(ConsumerUpdate(1, True), 77))
    assert sub.calls == [('consumer-update', protocol, 77, True)]
    assert transport.sent() == []
    protocol.data_received(encode(ConsumerUpdate(9, False), 78))
    assert transport.sent() == [(ConsumerUpdateResponse(78, OK, OffsetSpec.none()), 78)]
    protocol.answer_consumer_update(77, OffsetSpec.offset(5))
    assert transport.sent() == [(ConsumerUpdateResponse(77, OK, OffsetSpec.offset(5)), 77)]

@pytest.mark.parametrize('with_close_response', [False, True])
async def test_consumer_update_while_closing(with_close_response: bool) -> None:
    """
    A ConsumerUpdate for a subscription gone, arriving while the
    connection closes (with the broker's CloseResponse in the same read,
    or before it), is not answered and raises nothing: the broker removes
    a closed connection's consumers from their groups. It raised
    ConnectionLost out of ``data_received`` (uvloop: "Fatal error on
    transport", seen as a consumer group's members closed on RabbitMQ
    4.0.5, where one member's leaving activates another's subscription).
    """
    protocol, transport = handshake()
    closing = asyncio.ensure_future(protocol.close())
    await asyncio.sleep(0)
    [(command, cid)] = transport.sent()
    assert type(command) is Close and cid is not None
    data = encode(ConsumerUpdate(1, True), 78)
    if with_close_response:
        data = encode(CloseResponse(cid, OK)) + data
    protocol.data_received(data)
    assert transport.sent() == []
    assert not transport.aborted
    if not with_close_response:
        protocol.data_received(encode(CloseResponse(cid, OK)))
    await closing
    assert transport.closed and not transport.aborted

#
# the end of a connection
#

async def test_connection_lost() -> None:
    """
    A lost transport fails the pending requests with ConnectionLost, tells
    the publishers and subscriptions, and calls ``on_lost`` once.
    """
    protocol, transport = handshake()
    pub, sub = Publisher(), Subscription()
    protocol.publishers[0] = pub
    protocol.subscriptions[0] = sub
    lost: list[tuple[StreamsProtocol, Exception]] = []
    protocol.on_lost = lambda p, e: lost.append((p, e))
    task, _ = await start(protocol, transport, Create('orders', {}))

    protocol.connection_lost(ConnectionResetError('reset by peer'))
    with pytest.raises(ConnectionLost, match='connection to broker lost: reset by peer') as info:
        await task
    error = info.value
    assert lost == [(protocol, error)]
    assert pub.calls == [('lost', error)]
    assert sub.calls == [('lost', error)]
    assert protocol.closed.done()
    assert len(protocol.requests) == 0
    assert not protocol.is_open
    with pytest.raises(ConnectionLost):
        protocol.check_open()
    with pytest.raises(ConnectionLost):
        await protocol.request(Create('orders', {}))
    with pytest.raises(ConnectionLost):
        protocol.send_frame(b'frame')
    assert transport.sent() == []

async def test_broker_closes() -> None:
    """The broker's Close is answered, and what was pending fails naming its reason."""
    protocol, transport = handshake()
    task, _ = await start(protocol, transport, Create('orders', {}))
    protocol.data_received(encode(Close(0x0e, 'shutting down'), 9))
    assert transport.sent() == [(CloseResponse(9, OK), 9)]
    assert transport.closed
    assert not protocol.is_open
    with pytest.raises(ConnectionLost, match='broker closed the connection: shutting down'):
        await task
    assert protocol.closed.done()

async def test_close() -> None:
    """``close`` sends Close, and ends when the broker answered and the transport closed."""
    protocol, transport = handshake()
    closing = asyncio.ensure_future(protocol.close())
    await asyncio.sleep(0)
    [(command, cid)] = transport.sent()
    assert type(command) is Close and cid is not None
    assert not closing.done()
    protocol.data_received(encode(CloseResponse(cid, OK)))
    await closing
    assert transport.closed and not transport.aborted
    assert protocol.closed.done()
    assert not protocol.is_open
    await protocol.close()  # again: nothing to do
    assert transport.sent() == []

async def test_abort() -> None:
    """``abort`` drops the connection at once; what was pending fails with the given error."""
    protocol, transport = handshake()
    task, _ = await start(protocol, transport, Create('orders', {}))
    error = ConnectionLost('cancelled while connecting')
    protocol.abort(error)
    assert transport.aborted
    assert not protocol.is_open
    await protocol.closed
    with pytest.raises(ConnectionLost) as info:
        await task
    assert info.value is error

async def test_malformed_frame_drops_connection() -> None:
    """A malformed frame from the broker aborts the transport; the connection is gone."""
    protocol, transport = handshake()
    lost: list[Exception] = []
    protocol.on_lost = lambda p, e: lost.append(e)
    task, _ = await start(protocol, transport, Create('orders', {}))
    protocol.data_received(b'\x00\x00\x00\x04\x00\x03\x00\x01')  # a PublishConfirm cut short
    assert transport.aborted
    assert not protocol.is_open
    await protocol.closed
    assert task.done()
    task.exception()  # (retrieved)
    assert len(lost) == 1

async def test_malformed_frame_is_connection_lost() -> None:
    """What was pending on a connection dropped for a malformed frame fails with ConnectionLost."""
    protocol, transport = handshake()
    lost: list[Exception] = []
    protocol.on_lost = lambda p, e: lost.append(e)
    task, _ = await start(protocol, transport, Create('orders', {}))
    protocol.data_received(b'\x00\x00\x00\x04\x00\x03\x00\x01')
    await protocol.closed
    error = task.exception()
    assert not isinstance(error, FrameDecodeError)
    assert isinstance(error, ConnectionLost)
    assert isinstance(lost[0], ConnectionLost)

#
# versions and the encoder
#

@pytest.mark.parametrize(('version', 'supported'), [
    ('3.10.8', False), ('3.12.99', False), ('3.13.0', True), ('3.13.7+rc.1', True),
    ('4.0.1', True), ('not-a-version', False),
])
async def test_require(version: str, supported: bool) -> None:
    protocol, _ = handshake(version)
    if supported:
        protocol.require((3, 13), 'stream filtering')
    else:
        with pytest.raises(FeatureNotSupported, match=r'stream filtering needs RabbitMQ 3\.13') \
                as info:
            protocol.require((3, 13), 'stream filtering')
        assert 'the broker is {}'.format(version) in str(info.value)
    if version == 'not-a-version':  # a version not known refuses every feature
        assert protocol.broker_version == (0,)
        with pytest.raises(FeatureNotSupported):
            protocol.require((3, 9), 'anything')
    else:
        protocol.require((3, 9), 'anything older')

async def test_require_before_open() -> None:
    protocol, _ = connect()
    with pytest.raises(FeatureNotSupported, match='the broker is unknown'):
        protocol.require((3, 11), 'stream statistics')

async def test_publish_encoder() -> None:
    """No encoder before the frame size is negotiated; the core's own after."""
    protocol, transport = connect()
    with pytest.raises(ConnectionLost, match='not open'):
        protocol.publish_encoder  # noqa: B018
    protocol.data_received(encode(PeerPropertiesResponse(1, OK, SERVER)))
    protocol.data_received(encode(SaslHandshakeResponse(2, OK, ['PLAIN'])))
    protocol.data_received(encode(SaslAuthenticateResponse(3, OK, None)))
    with pytest.raises(ConnectionLost):
        protocol.publish_encoder  # noqa: B018
    protocol.data_received(encode(Tune(4096, 0)) + encode(OpenResponse(4, OK, {})))
    encoder = protocol.publish_encoder
    assert encoder is protocol.core.publish_encoder
    transport.sent()

async def test_send_frame_written() -> None:
    """A Publish frame from the encoder is written to the transport as is."""
    protocol, transport = handshake()
    count, frame = protocol.publish_encoder.encode(3, [b'm1', b'm2'], 0, 11, False, None, None)
    assert count == 2
    protocol.send_frame(frame)
    assert bytes(transport.written) == frame


@pytest.mark.parametrize(('host', 'port', 'message'), [
    # Metadata's port is an uint32: 70000 would connect to port 4464
    ('localhost', 70000, 'port out of range'),
    ('localhost', 0, 'port out of range'),
    # host names a broker may advertise that asyncio refuses (ValueError)
    ('a\x00b', 5552, 'embedded null'),
    ('a..b', 5552, 'idna'),
])
async def test_open_connection_bad_address(host: str, port: int, message: str) -> None:
    """An address the broker sent that cannot be connected to is ConnectionLost."""
    if host != 'localhost' and type(asyncio.get_running_loop()).__module__.startswith('uvloop'):
        pytest.skip('uvloop asks the resolver, which may go to the network')
    with pytest.raises(ConnectionLost, match=message):
        await open_connection(host, port, ConnectionCore(), timeout=5)

#
# reading paused after a chunk of history
#

def chunk_written(seconds_ago: float) -> bytes:
    """A chunk's header (no records) with its timestamp ``seconds_ago`` before now."""
    ms = int((time.time() - seconds_ago) * 1000)
    return bytes([0x50, 0, 0, 0, 0, 0, 0, 0]) + ms.to_bytes(8, 'big') + bytes(40)

async def test_history_pauses_reading() -> None:
    """
    A read that brought a chunk written a second or more ago stops reading
    for ``read_pause``, once, then reading resumes; the chunk is delivered
    at once.
    """
    protocol, transport = handshake()
    protocol.read_pause = 0.01
    sub = Subscription()
    protocol.subscriptions[1] = sub
    protocol.data_received(
        encode(Deliver(1, chunk_written(5))) + encode(Deliver(1, chunk_written(4))),
    )
    assert len(sub.calls) == 2
    assert transport.paused == 1
    protocol.data_received(encode(Deliver(1, chunk_written(3))))  # read while pausing
    assert transport.paused == 1 and transport.reading is False
    await asyncio.sleep(0.05)
    assert transport.reading is True and transport.resumed == 1

async def test_live_chunk_does_not_pause() -> None:
    """Chunks written just now (a live consumer) and other frames never pause reading."""
    protocol, transport = handshake()
    protocol.read_pause = 0.01
    sub = Subscription()
    protocol.subscriptions[1] = sub
    protocol.data_received(encode(Deliver(1, chunk_written(0))))
    protocol.data_received(encode(PublishConfirm(0, [1])))
    assert len(sub.calls) == 1
    assert transport.paused == 0 and transport.reading

async def test_no_pause_when_off() -> None:
    """``read_pause`` 0 (the adapter's own default, the client sets its option): never."""
    protocol, transport = handshake()
    assert protocol.read_pause == 0
    protocol.subscriptions[1] = Subscription()
    protocol.data_received(encode(Deliver(1, chunk_written(5))))
    assert transport.paused == 0

async def test_connection_lost_while_paused() -> None:
    """The resume timer is cancelled with the connection: nothing touches a closed transport."""
    protocol, transport = handshake()
    protocol.read_pause = 0.01
    protocol.subscriptions[1] = Subscription()
    protocol.data_received(encode(Deliver(1, chunk_written(5))))
    assert transport.paused == 1
    resume = protocol.reads._resume
    assert resume is not None
    transport.abort()
    await asyncio.sleep(0)  # the transport's connection_lost
    assert resume.cancelled()
    assert protocol.reads._resume is None
    await asyncio.sleep(0.05)
    assert transport.resumed == 0
