"""
A hostile peer: a fake broker misbehaving at each step of a connection's
life, and a proxy flipping bytes of the chunks a real broker delivers.

Each case proves that a public call either goes on (the misbehaviour is
harmless) or raises one exact subclass of :py:class:`rbfly.error.RbFlyError`
naming the cause, within a few seconds; never a hang, never an exception
outside rbfly's hierarchy, never a corrupted message handed out.
"""

from __future__ import annotations

import asyncio
import random
import re
import tracemalloc
import typing as tp
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import pytest

from rbfly.error import ChunkCrcError, FrameDecodeError, ProtocolError, RbFlyError
from rbfly.streams import Offset, PublisherBinBatch, get_message_ctx, streams_client
from rbfly.streams.error import ConnectionLost, FrameTooLarge, RequestTimeout
from rbfly.streams.protocol import (
    DEFAULT_MAX_RECEIVED_FRAME_SIZE,
    Close,
    Create,
    CreateResponse,
    CreditResponse,
    Deliver,
    MetadataUpdate,
    PeerProperties,
    PeerPropertiesResponse,
    PublishConfirm,
    PublishError,
    PublishingError,
    ResponseCode,
    decode_frame,
    encode,
)

from .hostile import SERVER_PROPERTIES, FakeBroker, FlippingProxy, FlipPlan, Session

OK = ResponseCode.OK
TIMEOUT = 5  # seconds any case may take: more is a hang

#
# scripts of the fake broker
#

async def answer_create(session: Session) -> None:
    """Answer the client's Create requests, OK, until it closes."""
    while (cid := await session.next_create()) is not None:
        await session.send(CreateResponse(cid, OK))

async def well_behaved(session: Session) -> None:
    await session.handshake()
    await answer_create(session)

async def never_answers(session: Session) -> None:
    await session.receive()  # PeerProperties, then nothing

GARBAGE = random.Random(0x16).randbytes(64)
FRAMED_GARBAGE = len(GARBAGE).to_bytes(4, 'big') + GARBAGE

async def garbage_first(session: Session) -> None:
    await session.receive()
    await session.write(GARBAGE)

async def framed_garbage_first(session: Session) -> None:
    await session.receive()
    await session.write(FRAMED_GARBAGE)

def size_prefix(size: int) -> bytes:
    return size.to_bytes(4, 'big')

async def truncated_then_close(session: Session) -> None:
    cid = await session.request(PeerProperties)
    await session.write(encode(PeerPropertiesResponse(cid, OK, SERVER_PROPERTIES))[:-7])
    await session.close()

async def absurd_size_first(session: Session) -> None:
    await session.receive()
    await session.write(size_prefix(0xFFFFFFF0) + b'\x80\x11\x00\x01')

async def zero_size_first(session: Session) -> None:
    await session.receive()
    await session.write(size_prefix(0))

async def unknown_key_first(session: Session) -> None:
    cid = await session.request(PeerProperties)
    body = b'\x80\xfe\x00\x01' + cid.to_bytes(4, 'big') + b'\x00\x01'
    await session.write(size_prefix(len(body)) + body)

async def extra_peer_properties(session: Session) -> None:
    await session.handshake({**SERVER_PROPERTIES, 'x-unknown': 'yes', 'zz-\u00e9t\u00e9': ''})
    await answer_create(session)

async def wrong_id_peer_properties(session: Session) -> None:
    cid = await session.request(PeerProperties)
    await session.send(PeerPropertiesResponse(cid + 98, OK, SERVER_PROPERTIES))
    await session.after_peer_properties()
    await answer_create(session)

async def silent_after_open(session: Session) -> None:
    await session.handshake()
    await session.request(Create)  # and no answer
    assert await session.next_create() is None  # (but to Close)

def after_open(data: bytes, then_answer: bool = False) -> Callable[[Session], Awaitable[None]]:
    """Handshake, then ``data`` when the client asks to create a stream."""
    async def script(session: Session) -> None:
        await session.handshake()
        cid = await session.request(Create)
        await session.write(data)
        if then_answer:
            await session.send(CreateResponse(cid, OK))
            await answer_create(session)
    return script

async def truncated_after_open(session: Session) -> None:
    await session.handshake()
    cid = await session.request(Create)
    await session.write(encode(CreateResponse(cid, OK))[:-1])
    await session.close()

async def unrequested_ids(session: Session) -> None:
    await session.handshake()
    while (cid := await session.next_create()) is not None:
        # answers to requests never made: an OK, an error, a foreign type
        await session.send(CreateResponse(cid + 1000, OK))
        await session.send(CreateResponse(cid + 1001, ResponseCode.ACCESS_REFUSED))
        await session.send(PeerPropertiesResponse(0xFFFFFFFF, OK, {}))
        await session.send(CreateResponse(cid, OK))

async def deliver_unknown_subscription(session: Session) -> None:
    await session.handshake()
    while (cid := await session.next_create()) is not None:
        await session.send(Deliver(7, b'\x50' + bytes(47)))  # never subscribed
        await session.send(Deliver(200, GARBAGE))
        await session.send(CreateResponse(cid, OK))

def tuned(frame_max: int, heartbeat: int) -> Callable[[Session], Awaitable[None]]:
    """A broker proposing ``frame_max`` and ``heartbeat`` in Tune."""
    async def script(session: Session) -> None:
        await session.handshake(tune=(frame_max, heartbeat))
        await answer_create(session)
    return script

async def close_during_handshake(session: Session) -> None:
    await session.request(PeerProperties)
    await session.write(encode(Close(ResponseCode.FRAME_TOO_LARGE, 'go away'), 5))
    await session.receive()  # the client's CloseResponse

async def commands_for_unknown_ids(session: Session) -> None:
    await session.handshake()
    while (cid := await session.next_create()) is not None:
        # for a publisher, a subscription, a stream the client never had
        await session.send(PublishConfirm(9, [1, 2]))
        await session.send(PublishError(9, [PublishingError(1, ResponseCode.ACCESS_REFUSED)]))
        await session.send(CreditResponse(ResponseCode.SUBSCRIPTION_ID_DOES_NOT_EXIST, 8))
        await session.send(MetadataUpdate(ResponseCode.STREAM_NOT_AVAILABLE, 'never-asked'))
        await session.send(CreateResponse(cid, OK))

@dataclass(frozen=True)
class Case:
    """
    A misbehaviour, and what ``create_stream`` does then: succeeds
    (``error`` is ``None``), or raises exactly ``error`` with a message
    matching ``match`` (and ``cause`` as its ``__cause__``).
    """
    script: Callable[[Session], Awaitable[None]]
    error: type[RbFlyError] | None = None
    match: str = ''
    cause: type[BaseException] | None = None

def frame_error(frame: bytes) -> str:
    """The decoder's own message for a malformed frame (without its size)."""
    try:
        decode_frame(frame)
    except FrameDecodeError as ex:
        return re.escape(str(ex))
    raise AssertionError('the frame decodes')

LOST_DURING_REQUEST = 'malformed data from the broker: '
NOT_STREAMS = r'127\.0\.0\.1:\d+ does not speak the stream protocol \(a TLS port.*\): '

CASES = {
    'garbage-first': Case(
        garbage_first, ConnectionLost,
        NOT_STREAMS + 'frame size {} exceeds the maximum of 65536 bytes'.format(
            int.from_bytes(GARBAGE[:4], 'big')),
        FrameDecodeError,
    ),
    'framed-garbage-first': Case(
        framed_garbage_first, ConnectionLost, NOT_STREAMS + frame_error(GARBAGE),
        FrameDecodeError,
    ),
    'truncated-then-close': Case(
        truncated_then_close, ConnectionLost,
        r'closed the connection in the middle of a frame \(\d+ bytes of it\)',
    ),
    'size-0xfffffff0-first': Case(
        absurd_size_first, ConnectionLost,
        NOT_STREAMS + 'frame size 4294967280 exceeds the maximum of 65536 bytes',
        FrameDecodeError,
    ),
    'size-0-first': Case(
        zero_size_first, ConnectionLost, NOT_STREAMS + frame_error(b''), FrameDecodeError,
    ),
    'unknown-key-first': Case(
        unknown_key_first, ConnectionLost, NOT_STREAMS + 'unknown command key 0x80fe',
        FrameDecodeError,
    ),
    'peer-properties-extra-keys': Case(extra_peer_properties),
    'peer-properties-unrequested-id': Case(
        wrong_id_peer_properties, ConnectionLost,
        NOT_STREAMS + 'PeerPropertiesResponse for correlation id 99, not requested;'
        ' the client asked with 1', ProtocolError,
    ),
    'never-answers': Case(never_answers, ConnectionLost, 'timed out after 0.5s', TimeoutError),
    'silent-after-open': Case(
        silent_after_open, RequestTimeout, r'no response to Create in 0\.5s',
    ),
    'garbage-after-open': Case(
        after_open(FRAMED_GARBAGE), ConnectionLost,
        LOST_DURING_REQUEST + frame_error(GARBAGE), FrameDecodeError,
    ),
    'size-0xfffffff0-after-open': Case(
        after_open(size_prefix(0xFFFFFFF0)), ConnectionLost,
        LOST_DURING_REQUEST + 'frame size 4294967280 exceeds the maximum of {} bytes'.format(
            DEFAULT_MAX_RECEIVED_FRAME_SIZE,
        ),
        FrameDecodeError,
    ),
    'size-0-after-open': Case(
        after_open(size_prefix(0)), ConnectionLost,
        LOST_DURING_REQUEST + frame_error(b''), FrameDecodeError,
    ),
    'unknown-command-after-open': Case(
        after_open(size_prefix(12) + b'\x00\x77\x00\x01' + bytes(8)), ConnectionLost,
        LOST_DURING_REQUEST + 'unknown command key 0x0077', FrameDecodeError,
    ),
    'truncated-after-open': Case(
        truncated_after_open, ConnectionLost,
        r'connection to broker lost in the middle of a frame \(\d+ bytes of it\)',
    ),
    'close-during-handshake': Case(
        close_during_handshake, ConnectionLost,
        r'^broker closed the connection: go away \(code 14\)$',
    ),
    'tune-frame-max-1': Case(
        tuned(1, 0), FrameTooLarge, 'frame of 19 bytes exceeds the maximum of 1$',
    ),
    'tune-max-values': Case(tuned(0xFFFFFFFF, 0xFFFFFFFF)),
    'tune-no-limits': Case(tuned(0, 0)),
    'commands-for-unknown-ids': Case(commands_for_unknown_ids),
    'unrequested-correlation-ids': Case(unrequested_ids),
    'deliver-unknown-subscription': Case(deliver_unknown_subscription),
}

@pytest.fixture
async def fake_broker(request: pytest.FixtureRequest) -> AsyncIterator[FakeBroker]:
    case: Case = CASES[request.param]
    broker = FakeBroker(case.script)
    await broker.start()
    yield broker
    await broker.close()

@pytest.mark.parametrize(('name', 'fake_broker'), [(n, n) for n in CASES], indirect=['fake_broker'])
async def test_hostile_broker(name: str, fake_broker: FakeBroker) -> None:
    """
    A broker misbehaving at one step (see ``CASES``): ``create_stream``
    succeeds when the misbehaviour is harmless (and the connection stays
    the one opened first), else raises the case's exact rbfly error,
    naming the cause, well within the client's own timeouts; never a hang.
    """
    case = CASES[name]
    client = streams_client(fake_broker.url, connect_timeout=0.5, request_timeout=0.5)
    try:
        async with asyncio.timeout(TIMEOUT):
            if case.error is None:
                await client.create_stream('s')
                await client.create_stream('t')  # the connection still works
                assert fake_broker.connections == 1
            else:
                with pytest.raises(RbFlyError) as info:
                    await client.create_stream('s')
                assert type(info.value) is case.error, repr(info.value)
                assert re.search(case.match, str(info.value)), str(info.value)
                if case.cause is not None:
                    assert type(info.value.__cause__) is case.cause, repr(info.value.__cause__)
    finally:
        await client.disconnect()
    assert not fake_broker.errors, fake_broker.errors

@pytest.mark.parametrize(('where', 'fake_broker'), [
    ('handshake', 'size-0xfffffff0-first'), ('open', 'size-0xfffffff0-after-open'),
], indirect=['fake_broker'])
async def test_absurd_frame_size_not_allocated(where: str, fake_broker: FakeBroker) -> None:
    """
    A size prefix of 0xFFFFFFF0 (during the handshake, or on the open
    connection) fails at once by its size: the client allocates nothing
    like it (the peak of Python's allocations stays under 4 MiB) and does
    not wait for 4 GiB to arrive.
    """
    client = streams_client(fake_broker.url, connect_timeout=3, request_timeout=3)
    tracemalloc.start()
    try:
        # the frame's size is the error, not the connect or request timeout
        # that waiting for 4 GiB would end in
        async with asyncio.timeout(TIMEOUT):
            with pytest.raises(ConnectionLost, match='frame size 4294967280 exceeds'):
                await client.create_stream('s')
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        await client.disconnect()
    assert peak < 4 * 1024 * 1024, peak

#
# a real broker behind a proxy flipping bits of the chunks
#

COUNT = 2000
BATCH = 100

@pytest.fixture
async def published(url: str) -> AsyncIterator[tuple[str, list[bytes]]]:
    """A stream of the 3.10 broker with COUNT distinct bodies, in batches."""
    stream = 'rbfly-hostile-{}'.format(uuid.uuid4().hex[:12])
    bodies = [b'hostile-%06d-' % i + bytes([i % 251]) * (i % 37) for i in range(COUNT)]
    client = streams_client(url)
    try:
        await client.create_stream(stream)
        async with client.publisher(stream, cls=PublisherBinBatch) as publisher:
            for start in range(0, COUNT, BATCH):
                for body in bodies[start:start + BATCH]:
                    publisher.batch(body)
                await publisher.flush()
        yield stream, bodies
    finally:
        await client.delete_stream(stream)
        await client.disconnect()

@pytest.fixture
async def flipping(url: str, request: pytest.FixtureRequest) -> AsyncIterator[FlippingProxy]:
    every, count = request.param
    p = urlsplit(url)
    plan = FlipPlan(random.Random(0x16_2), after=40_000, every=every, count=count)
    proxy = FlippingProxy(p.hostname or 'localhost', p.port or 5552, plan)
    await proxy.start()
    yield proxy
    await proxy.close()

async def consume(
        client_url: str, stream: str, crc_failure: tp.Literal['fail', 'skip'], until: int,
) -> tuple[list[tuple[int, bytes]], BaseException | None, int]:
    """
    Read a stream until the message at offset ``until - 1``, or an error;
    return the (offset, body) pairs, the error, and the chunks skipped.
    """
    received: list[tuple[int, bytes]] = []
    error: BaseException | None = None
    client = streams_client(client_url, crc_failure=crc_failure)
    try:
        async with asyncio.timeout(20):
            async for body in client.subscribe(stream, offset=Offset.FIRST, amqp=False):
                assert isinstance(body, bytes)
                received.append((get_message_ctx().stream_offset, body))
                if received[-1][0] == until - 1:
                    break
    except RbFlyError as ex:
        error = ex
    finally:
        skipped = client.metrics().chunks_skipped
        await client.disconnect()
    return received, error, skipped

@pytest.mark.parametrize('flipping', [(1, 1)], indirect=True)
async def test_flipped_chunk_fails(
        url: str, published: tuple[str, list[bytes]], flipping: FlippingProxy,
) -> None:
    """
    One bit flipped in the data of a chunk on its way from the broker
    (crc_failure='fail', the default): the subscription hands out every
    message before that chunk, exact and in order, then raises
    ChunkCrcError; none of the corrupted chunk's messages is handed out.
    """
    stream, bodies = published
    received, error, _ = await consume(flipping.url(url), stream, 'fail', COUNT)
    [flip] = flipping.plan.flips
    assert 0 < flip.first_offset < COUNT
    assert type(error) is ChunkCrcError, repr(error)
    assert str(error).startswith('chunk CRC mismatch')
    assert received == list(enumerate(bodies))[:flip.first_offset]

@pytest.mark.parametrize("flipping", [(3, 3)], indirect=True)
async def test_flipped_chunks_skipped(
        url: str, published: tuple[str, list[bytes]], flipping: FlippingProxy,
) -> None:
    """
    Bits flipped in the data of three chunks, every third one
    (crc_failure='skip'): the subscription goes on, and hands out exactly
    the messages of the intact chunks, in order, without duplicates; the
    corrupted chunks are counted as skipped.
    """
    stream, bodies = published
    received, error, skipped = await consume(flipping.url(url), stream, 'skip', COUNT)
    assert error is None, repr(error)
    flips = flipping.plan.flips
    assert len(flips) == 3 and skipped == 3
    assert max(f.first_offset + f.records for f in flips) < COUNT
    lost = {o for f in flips for o in range(f.first_offset, f.first_offset + f.records)}
    assert lost
    assert received == [(i, b) for i, b in enumerate(bodies) if i not in lost]
