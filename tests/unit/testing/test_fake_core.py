"""
The fake broker's sans-IO core, without sockets: rbfly's own client core
(:py:class:`~rbfly.streams.protocol.connection.ConnectionCore`) talks to a
broker session through two byte buffers.
"""

import struct
import zlib

import pytest

from rbfly.amqp import MessageCtx, encode_message
from rbfly.error import FrameDecodeError
from rbfly.streams.error import AuthenticationFailure
from rbfly.streams.protocol import (
    Close,
    Create,
    CreateResponse,
    Credit,
    CreditResponse,
    DeclarePublisher,
    DeclarePublisherResponse,
    Deliver,
    FrameReader,
    OffsetSpec,
    Publish,
    PublishConfirm,
    PublishError,
    QueryOffset,
    QueryOffsetResponse,
    ResponseCode,
    SaslAuthenticate,
    SaslAuthenticateResponse,
    StoreOffset,
    Subscribe,
    SubscribeResponse,
    Unsubscribe,
    decode,
    encode,
)
from rbfly.streams.protocol._chunk import decode_chunk
from rbfly.streams.protocol.connection import ConnectionCore
from rbfly.streams.protocol.states import (
    ConsumerUpdateRequested,
    CoreState,
    HandshakeFailed,
    Opened,
)
from rbfly.testing.core import BrokerConfig, BrokerCore, Session
from rbfly.testing.publish import read_publish
from rbfly.testing.store import Entry, StreamLog

RC = ResponseCode

class Pair:
    """A client core and a broker session joined by buffers."""
    def __init__(self, broker: BrokerCore, user: str = 'guest', password: str = 'guest') -> None:
        self.to_client = bytearray()
        self.closed = False
        self.session: Session = broker.open_session(self.to_client.extend, self._close)
        self.client = ConnectionCore(username=user, password=password)
        self.events: list[object] = []

    def _close(self) -> None:
        self.closed = True

    def run(self) -> list[object]:
        """Exchange bytes until both sides are quiet; return the client's events."""
        events: list[object] = []
        while True:
            out = self.client.data_to_send()
            if out:
                self.session.receive_data(bytes(out))
            if not self.to_client:
                if not out:
                    return events
                continue
            data = bytes(self.to_client)
            self.to_client.clear()
            events.extend(self.client.receive_data(data, 0.0))

    def open(self) -> None:
        self.client.start(0.0)
        events = self.run()
        assert any(isinstance(e, Opened) for e in events)
        assert self.client.state is CoreState.OPENED

def message(n: int) -> bytes:
    return encode_message(MessageCtx('m{}'.format(n)))

@pytest.fixture
def broker() -> BrokerCore:
    times = iter(range(1_700_000_000_000, 1_800_000_000_000, 1000))
    return BrokerCore(BrokerConfig(port=5999), lambda: next(times))

def test_handshake(broker: BrokerCore) -> None:
    """The client's core finishes its handshake; the broker advertises itself."""
    pair = Pair(broker)
    pair.open()
    assert pair.session.opened and pair.session.user == 'guest'

def test_wrong_password(broker: BrokerCore) -> None:
    """A refused login is answered, then the connection closed."""
    pair = Pair(broker, password='nope')
    pair.client.start(0.0)
    events = pair.run()
    assert len(events) == 1 and isinstance(events[0], HandshakeFailed)
    assert isinstance(events[0].error, AuthenticationFailure)
    assert pair.closed and pair.session not in broker.sessions

def test_publish_confirm_deliver(broker: BrokerCore) -> None:
    """A Publish frame is one chunk, confirmed, and delivered with credit."""
    pair = Pair(broker)
    pair.open()
    c = pair.client
    c.request(Create('s', {}), 0.0)
    c.request(DeclarePublisher(1, 'p', 's'), 0.0)
    c.request(Subscribe(0, 's', OffsetSpec.first(), 1, {}), 0.0)
    events = pair.run()
    assert [type(e) for e in events] == [CreateResponse, DeclarePublisherResponse,
                                         SubscribeResponse]
    c.send(Publish(1, [(1, message(0)), (2, message(1))]), 0.0)
    c.send(Publish(1, [(3, message(2))]), 0.0)
    events = pair.run()
    assert [type(e) for e in events] == [PublishConfirm, Deliver, PublishConfirm]
    info, msgs = decode_chunk(bytes(tp_cast_deliver(events[1]).chunk))
    assert (info.first_offset, [m.body for m in msgs]) == (0, ['m0', 'm1'])
    # one credit used; the second chunk waits for more
    c.send(Credit(0, 1), 0.0)
    events = pair.run()
    info, msgs = decode_chunk(bytes(tp_cast_deliver(events[0]).chunk))
    assert (info.first_offset, [m.body for m in msgs]) == (2, ['m2'])

def tp_cast_deliver(event: object) -> Deliver:
    assert isinstance(event, Deliver)
    return event

def test_deduplication_and_errors(broker: BrokerCore) -> None:
    """Named publishers' duplicates are confirmed, not stored; unknown ids are errors."""
    pair = Pair(broker)
    pair.open()
    c = pair.client
    c.request(Create('s', {}), 0.0)
    c.request(DeclarePublisher(1, 'p', 's'), 0.0)
    pair.run()
    c.send(Publish(1, [(1, message(0)), (2, message(1))]), 0.0)
    c.send(Publish(1, [(2, message(1)), (3, message(2))]), 0.0)
    c.send(Publish(9, [(1, message(0))]), 0.0)
    c.send(Credit(7, 1), 0.0)
    events = pair.run()
    assert events[:2] == [PublishConfirm(1, (1, 2)), PublishConfirm(1, (2, 3))]
    assert isinstance(events[2], PublishError)
    assert events[2].errors[0].code == RC.PUBLISHER_DOES_NOT_EXIST
    assert events[3] == CreditResponse(RC.SUBSCRIPTION_ID_DOES_NOT_EXIST, 7)
    log = broker.store.streams['s']
    assert log.next_offset == 3 and len(log.chunks) == 2
    assert broker.store.sequences[('s', 'p')] == 3

def test_offsets(broker: BrokerCore) -> None:
    pair = Pair(broker)
    pair.open()
    c = pair.client
    c.request(Create('s', {}), 0.0)
    c.request(QueryOffset('app', 's'), 0.0)
    c.send(StoreOffset('app', 's', 42), 0.0)
    c.request(QueryOffset('app', 's'), 0.0)
    c.request(QueryOffset('app', 'missing'), 0.0)
    events = pair.run()
    assert [(type(e), getattr(e, 'code', None)) for e in events[1:]] == [
        (QueryOffsetResponse, RC.NO_OFFSET), (QueryOffsetResponse, RC.OK),
        (QueryOffsetResponse, RC.STREAM_DOES_NOT_EXIST),
    ]
    assert isinstance(events[2], QueryOffsetResponse) and events[2].offset == 42

def test_bad_frame_closes(broker: BrokerCore) -> None:
    """A frame the broker cannot read: Close with UNKNOWN_FRAME, connection closed."""
    pair = Pair(broker)
    pair.open()
    pair.session.receive_data(struct.pack('>IHH', 4, 0x7777, 1))
    assert pair.closed
    assert pair.to_client  # the Close frame

def test_request_before_open(broker: BrokerCore) -> None:
    """Requests before the handshake are refused by closing the connection."""
    pair = Pair(broker)
    pair.session.receive_data(encode(Create('s', {}), 1))
    assert pair.closed and 's' not in broker.store.streams

def test_read_publish_sub_batch() -> None:
    """A sub-entry batch is stored as it is, counting its records."""
    body = b'\x00\x00\x00\x01a\x00\x00\x00\x01b'
    batch = struct.pack('>BHII', 0x80, 2, len(body), len(body)) + body
    frame = struct.pack('>HHBI', 2, 1, 5, 2) + struct.pack('>QI', 1, 3) + b'abc' \
        + struct.pack('>Q', 2) + batch
    pid, messages = read_publish(memoryview(frame))
    assert pid == 5
    assert messages == [(1, Entry(b'\x00\x00\x00\x03abc', 1)), (2, Entry(batch, 2))]
    with pytest.raises(FrameDecodeError, match='truncated'):
        read_publish(memoryview(frame[:-1]))
    with pytest.raises(FrameDecodeError, match='left'):
        read_publish(memoryview(frame + b'x'))

def test_chunk_format() -> None:
    """Chunks carry the CRC32 of their data, offsets and records as RabbitMQ's."""
    log = StreamLog('s')
    log.append([Entry(b'\x00\x00\x00\x01x', 1), Entry(b'\x00\x00\x00\x01y', 1)], 1234)
    chunk = log.chunks[0].data
    assert chunk[0] == 0x50
    assert struct.unpack_from('>I', chunk, 32)[0] == zlib.crc32(chunk[48:])
    info, msgs = decode_chunk(chunk, amqp=False)
    assert (info.num_records, [m.body for m in msgs]) == (2, [b'x', b'y'])

@pytest.mark.parametrize(('spec', 'index', 'resolved'), [
    (OffsetSpec.first(), 0, 0), (OffsetSpec.last(), 2, 5), (OffsetSpec.next(), 3, 7),
    (OffsetSpec.offset(3), 1, 3), (OffsetSpec.offset(0), 0, 0), (OffsetSpec.offset(99), 3, 99),
    (OffsetSpec.timestamp(2000), 1, 2), (OffsetSpec.timestamp(9999), 3, 7),
])
def test_offset_specs(spec: OffsetSpec, index: int, resolved: int) -> None:
    """Where each offset specification starts, in chunks and in offsets."""
    log = StreamLog('s')
    one = Entry(b'\x00\x00\x00\x01x', 1)
    log.append([one, one], 1000)      # offsets 0-1
    log.append([one, one, one], 2000)  # 2-4
    log.append([one, one], 3000)      # 5-6
    assert log.start(spec) == index
    assert log.resolve(spec) == resolved

def test_close_from_client(broker: BrokerCore) -> None:
    pair = Pair(broker)
    pair.open()
    pair.session.receive_data(encode(Close(RC.OK, 'bye'), 9))
    assert pair.closed and pair.session not in broker.sessions

def test_first_publishing_id_zero_is_stored(broker: BrokerCore) -> None:
    """A named publisher's first id 0 is no duplicate (RabbitMQ stores it)."""
    pair = Pair(broker)
    pair.open()
    c = pair.client
    c.request(Create('s', {}), 0.0)
    c.request(DeclarePublisher(1, 'p', 's'), 0.0)
    c.send(Publish(1, [(0, message(0)), (0, message(0)), (1, message(1))]), 0.0)
    pair.run()
    assert broker.store.streams['s'].next_offset == 2
    assert broker.store.sequences[('s', 'p')] == 1

def test_publisher_name_per_connection(broker: BrokerCore) -> None:
    """One publisher per name and stream on a connection; another connection may take it."""
    one, two = Pair(broker), Pair(broker)
    one.open()
    two.open()
    one.client.request(Create('s', {}), 0.0)
    one.client.request(DeclarePublisher(1, 'p', 's'), 0.0)
    one.client.request(DeclarePublisher(2, 'p', 's'), 0.0)
    two.client.request(DeclarePublisher(1, 'p', 's'), 0.0)
    codes = [getattr(e, 'code', None) for e in one.run() + two.run()]
    assert codes == [RC.OK, RC.OK, RC.PRECONDITION_FAILED, RC.OK]

@pytest.mark.parametrize(('frame', 'code'), [
    (struct.pack('>HH', 2, 1)[:3], RC.UNKNOWN_FRAME),  # Publish cut inside its version
    (struct.pack('>HHBIQh', 2, 2, 1, 1, 1, 2) + b'\xff\xfe', RC.UNKNOWN_FRAME),  # not UTF-8
    (bytes(2 * 1024 * 1024), RC.FRAME_TOO_LARGE),
])
def test_bad_frames_close(broker: BrokerCore, frame: bytes, code: int) -> None:
    """A bad frame closes the connection with a Close naming the cause, never an exception."""
    pair = Pair(broker)
    pair.open()
    pair.session.receive_data(struct.pack('>I', len(frame)) + frame)
    assert pair.closed and pair.session not in broker.sessions
    events = pair.client.receive_data(bytes(pair.to_client), 0.0)
    assert [type(e).__name__ for e in events] == ['ConnectionClosed']
    assert getattr(events[0], 'code', code) == code

def test_sasl_not_utf8(broker: BrokerCore) -> None:
    """Credentials that are not UTF-8 are refused, not an exception."""
    pair = Pair(broker)
    pair.session.receive_data(encode(SaslAuthenticate('PLAIN', b'\0\xff\0\xfe'), 1))
    assert pair.closed and pair.session.user is None
    frames = FrameReader()
    frames.feed(bytes(pair.to_client))
    response = decode(next(iter(frames)))
    assert isinstance(response, SaslAuthenticateResponse)
    assert response.code == RC.AUTHENTICATION_FAILURE

def test_late_consumer_update_answer(broker: BrokerCore) -> None:
    """
    An answer to a ConsumerUpdate of a subscription gone meanwhile starts
    nothing, even when a new subscription took its id.
    """
    pair = Pair(broker)
    pair.open()
    c = pair.client
    c.request(Create('s', {}), 0.0)
    sac = {'single-active-consumer': 'true', 'name': 'g'}
    c.request(Subscribe(0, 's', OffsetSpec.first(), 10, sac), 0.0)
    events = pair.run()
    update = next(e for e in events if isinstance(e, ConsumerUpdateRequested))
    c.request(Unsubscribe(0), 0.0)
    c.request(Subscribe(1, 's', OffsetSpec.first(), 10, sac), 0.0)  # active now
    c.request(Subscribe(0, 's', OffsetSpec.first(), 10, sac), 0.0)  # waits
    pair.run()
    old = broker.groups[('s', 'g')].members[1]
    assert not old.active and not old.reading
    c.answer_consumer_update(update.correlation_id, OffsetSpec.first(), 0.0)
    pair.run()
    assert not old.active and not old.reading
    assert not pair.session._updates or all(
        v.sub is not old for v in pair.session._updates.values()
    )
