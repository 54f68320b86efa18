"""
Hostile brokers and corrupted bytes.

- A fake server answers the client's handshake with garbage, truncated
  frames, absurd frame sizes, unknown command keys or nothing at all: the
  client raises a typed rbfly error, within its connect timeout, with a
  message naming the cause, and never anything outside rbfly's hierarchy.
- A broker that misbehaves after the handshake (responses to requests
  never sent, Deliver for a subscription never made, garbage): the client
  drops the connection and reconnects, or ignores what it cannot place.
- A TCP proxy in front of a real broker flips bytes inside the chunks it
  delivers: a corrupted chunk's messages are never handed out; by default
  the subscription ends with ``ChunkCrcError``, with ``crc_failure='skip'``
  the chunk is dropped and counted and consumption goes on.

Every test is deterministic: the servers are scripted and the flipped
bytes are chosen by a seeded random generator.
"""

from __future__ import annotations

import asyncio
import random
import struct
import typing as tp
from collections.abc import AsyncIterator, Awaitable, Callable
from urllib.parse import urlsplit

import pytest

from rbfly.error import ChunkCrcError, RbFlyError
from rbfly.streams import Offset, PublisherBatchFast, StreamsClient, streams_client
from rbfly.streams.aio.connect import ANSWERS
from rbfly.streams.error import ConnectionLost
from rbfly.streams.protocol import (
    FrameReader,
    OpenResponse,
    PeerPropertiesResponse,
    QueryOffsetResponse,
    ResponseCode,
    SaslAuthenticateResponse,
    SaslHandshakeResponse,
    Tune,
    decode_frame,
    encode,
)
from rbfly.streams.protocol.commands import Close, CloseResponse, Deliver, Heartbeat
from rbfly.testing import FakeBroker, connect

from .proxy import Proxy

RC = ResponseCode
Script: tp.TypeAlias = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]

async def read_frame(reader: asyncio.StreamReader) -> tuple[object, int | None]:
    """The next frame the client sent, decoded, with its correlation id."""
    size = struct.unpack('>I', await reader.readexactly(4))[0]
    decoded = decode_frame(await reader.readexactly(size))
    return decoded.command, decoded.correlation_id

async def handshake(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    properties: dict[str, str] | None = None) -> None:
    """A correct handshake, as RabbitMQ 3.10 answers it."""
    props = {'product': 'RabbitMQ', 'version': '3.10.0'} | (properties or {})
    _, corr = await read_frame(reader)
    writer.write(encode(PeerPropertiesResponse(tp.cast(int, corr), RC.OK, props)))
    _, corr = await read_frame(reader)
    writer.write(encode(SaslHandshakeResponse(tp.cast(int, corr), RC.OK, ['PLAIN'])))
    _, corr = await read_frame(reader)
    writer.write(encode(SaslAuthenticateResponse(tp.cast(int, corr), RC.OK, None)))
    writer.write(encode(Tune(1024 * 1024, 60)))
    await read_frame(reader)  # the client's Tune
    _, corr = await read_frame(reader)
    writer.write(encode(OpenResponse(tp.cast(int, corr), RC.OK, {})))

async def answer_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Until the client goes away: answer its Close, ignore the rest."""
    while True:
        command, corr = await read_frame(reader)
        if isinstance(command, Close):
            writer.write(encode(CloseResponse(tp.cast(int, corr), RC.OK)))
            await writer.drain()
            return

class Server:
    """A scripted server on a free local port; each connection runs the script."""
    def __init__(self, script: Script) -> None:
        self._script = script
        self._server: asyncio.Server | None = None
        self.connections = 0

    async def __aenter__(self) -> str:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            try:
                await self._script(reader, writer)
                await answer_close(reader, writer)
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            finally:
                writer.close()

        self._server = await asyncio.start_server(serve, '127.0.0.1', 0)
        port = self._server.sockets[0].getsockname()[1]
        # the port may be one an earlier test's broker answered on: a new server
        ANSWERS.forget('127.0.0.1', port)
        return 'rabbitmq-stream://guest:guest@127.0.0.1:{}/'.format(port)

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

async def first_frame_then(data: bytes, close: bool = False) -> Script:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_frame(reader)
        writer.write(data)
        if close:
            await writer.drain()
            writer.close()
    return script

def unknown_key() -> bytes:
    body = struct.pack('>HHI', 0x7F42, 1, 1)
    return struct.pack('>I', len(body)) + body

HANDSHAKE_CASES: dict[str, tuple[bytes, bool, str]] = {
    # bytes answered to PeerProperties, then close?, what the error names
    'garbage': (bytes(random.Random(1).randrange(256) for _ in range(64)), False,
                'stream protocol'),
    'http': (b'HTTP/1.1 400 Bad Request\r\n\r\n', True, 'stream protocol'),
    'truncated frame': (struct.pack('>IHH', 40, 0x8011, 1) + b'\0\0', True,
                        'in the middle of a frame'),
    'absurd frame size': (struct.pack('>I', 0xFFFFFFF0) + b'\x80\x11', False,
                          'stream protocol'),
    'frame size 0': (struct.pack('>I', 0) * 4, False, 'stream protocol'),
    'unknown command key': (unknown_key(), False, 'stream protocol'),
    # nothing ever answered on the port: it may not be a stream port
    'closed at once': (b'', True, r'closed the connection without answering \(is it a RabbitMQ'
                                  r' Streams port\?'),
}

@pytest.mark.parametrize('case', HANDSHAKE_CASES)
async def test_hostile_handshake(case: str) -> None:
    """Each bad answer to the handshake: ConnectionLost naming it, within the timeout."""
    data, close, named = HANDSHAKE_CASES[case]
    async with Server(await first_frame_then(data, close)) as url:
        client = streams_client(url, connect_timeout=3)
        try:
            async with asyncio.timeout(10):
                with pytest.raises(ConnectionLost, match='(?i){}'.format(named)):
                    await client.create_stream('s')
        finally:
            await client.disconnect()

async def test_dropped_by_a_broker_that_answered() -> None:
    """
    A broker that answered on its port, then drops new connections before
    a word (as RabbitMQ out of file descriptors does): the error names the
    broker that answered and what drops connections so, not the port.
    """
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if server.connections == 1:
            await handshake(reader, writer, {'version': '3.10.8'})
        else:
            writer.close()

    server = Server(script)
    async with server as url:
        client = streams_client(url, connect_timeout=3)
        try:
            await connect(client)   # a first connection, answered
            await client.disconnect()
            client = streams_client(url, connect_timeout=3)
            with pytest.raises(ConnectionLost) as info:
                await client.create_stream('s')
        finally:
            await client.disconnect()
    message = str(info.value)
    assert ': the server closed the connection without answering, though a broker' \
        ' (RabbitMQ 3.10.8) answered on this address' in message
    assert 'file descriptors' in message and 'Streams port' not in message

async def test_silent_server() -> None:
    """A server that never answers: ConnectionLost after the connect timeout, no hang."""
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # until the client goes away

    async with Server(silent) as url:
        client = streams_client(url, connect_timeout=1)
        try:
            async with asyncio.timeout(10):
                with pytest.raises(ConnectionLost, match='timed out after 1'):
                    await client.create_stream('s')
        finally:
            await client.disconnect()

async def test_unknown_peer_properties_accepted() -> None:
    """Unknown keys in the broker's peer properties are kept, not an error."""
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await handshake(reader, writer, {'x-unheard-of': '\u2603' * 100, '': ''})
        _, corr = await read_frame(reader)
        writer.write(encode(QueryOffsetResponse(tp.cast(int, corr), RC.OK, 42)))

    async with Server(script) as url:
        client = streams_client(url, connect_timeout=3)
        try:
            async with asyncio.timeout(10):
                assert await client.query_offset('s', 'r') == 42
            assert client.server_properties['x-unheard-of'] == '\u2603' * 100
        finally:
            await client.disconnect()

async def after_handshake(
        send: Callable[[asyncio.StreamWriter], None],
) -> tuple[Script, list[object]]:
    """A script: the handshake; at the first request the bytes of ``send``, then answers."""
    requests: list[object] = []

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await handshake(reader, writer)
        while True:
            command, corr = await read_frame(reader)
            requests.append(command)
            if isinstance(command, Close):
                writer.write(encode(CloseResponse(tp.cast(int, corr), RC.OK)))
                return
            if isinstance(command, Heartbeat):
                continue
            if len(requests) == 1:
                send(writer)  # on an open connection, with a request waiting
            writer.write(encode(QueryOffsetResponse(tp.cast(int, corr), RC.OK, 42)))
    return script, requests

@pytest.mark.parametrize('case', ['response never asked for', 'deliver to no subscription'])
async def test_stray_frames_ignored(case: str) -> None:
    """
    A response to a request never sent, or a Deliver for a subscription
    never made: ignored; the connection goes on and answers the next
    request.
    """
    def send(writer: asyncio.StreamWriter) -> None:
        if case == 'response never asked for':
            writer.write(encode(QueryOffsetResponse(999_999, RC.OK, 7)))
        else:
            writer.write(encode(Deliver(77, b'\x50' + bytes(47))))

    script, _ = await after_handshake(send)
    async with Server(script) as url:
        client = streams_client(url, connect_timeout=3)
        try:
            async with asyncio.timeout(10):
                assert await client.query_offset('s', 'r') == 42
        finally:
            await client.disconnect()

async def test_garbage_after_handshake_reconnects() -> None:
    """
    Garbage on an open connection: the client drops it and connects again
    (the second connection is well behaved), and the request is answered.
    """
    server: Server

    def send(writer: asyncio.StreamWriter) -> None:
        if server.connections == 1:
            writer.write(struct.pack('>I', 6) + b'\xde\xad\xbe\xef\x00\x01')
            writer.close()

    script, _ = await after_handshake(send)
    server = Server(script)
    async with server as url:
        client = streams_client(url, connect_timeout=3)
        try:
            async with asyncio.timeout(10):
                assert await client.query_offset('s', 'r') == 42
            assert server.connections == 2
        finally:
            await client.disconnect()

#
# corrupted chunks from a real broker
#
class ChunkFlipper:
    """
    Flips one byte in the data of every ``every``-th chunk a broker
    delivers (its header and the frames around it stay intact), as a
    faulty network card or memory would; the positions come from a seeded
    generator. Frames are passed on whole.
    """
    def __init__(self, every: int, seed: int) -> None:
        self._rng = random.Random(seed)
        self._every = every
        self._buffer = b''
        self._delivers = 0
        self.flipped: list[tuple[int, int]] = []  # first offset, records

    def __call__(self, data: bytes) -> bytes:
        buf = self._buffer + data
        out = []
        while len(buf) >= 4:
            size = struct.unpack_from('>I', buf)[0]
            if len(buf) < 4 + size:
                break
            frame, buf = bytearray(buf[:4 + size]), buf[4 + size:]
            key, version = struct.unpack_from('>HH', frame, 4)
            if key == 0x0008:
                self._flip(frame, 9 if version == 1 else 17)
            out.append(bytes(frame))
        self._buffer = buf
        return b''.join(out)

    def _flip(self, frame: bytearray, chunk: int) -> None:
        records, = struct.unpack_from('>I', frame, chunk + 4)
        first, = struct.unpack_from('>Q', frame, chunk + 24)
        data = chunk + 48
        if frame[chunk + 1] != 0 or len(frame) <= data:
            return  # not user data
        self._delivers += 1
        if self._delivers % self._every:
            return
        frame[self._rng.randrange(data, len(frame))] ^= self._rng.randrange(1, 256)
        self.flipped.append((first, records))

BODIES = ['m{:05d}'.format(i) for i in range(2000)]

async def publish_bodies(client: StreamsClient, stream: str) -> None:
    async with client.publisher(stream, cls=PublisherBatchFast) as pub:
        for i, body in enumerate(BODIES):
            pub.batch(body)
            if i % 50 == 49:
                await pub.flush()

@pytest.fixture
async def flipping(any_url: str, stream: str) -> AsyncIterator[tuple[Proxy, ChunkFlipper]]:
    """The test's stream with BODIES, and a proxy to its broker that flips chunk bytes."""
    direct = streams_client(any_url)
    await direct.create_stream(stream)
    await publish_bodies(direct, stream)
    p = urlsplit(any_url)
    proxy = Proxy(p.hostname or 'localhost', p.port or 5552)
    flipper = ChunkFlipper(every=5, seed=16)
    proxy.mangle = flipper
    await proxy.start()
    try:
        yield proxy, flipper
    finally:
        await proxy.close()
        await direct.delete_stream(stream)
        await direct.disconnect()

def via(proxy: Proxy, url: str) -> str:
    return 'rabbitmq-stream://guest:guest@127.0.0.1:{}/'.format(proxy.port)

async def test_corrupted_chunk_ends_subscription(
        flipping: tuple[Proxy, ChunkFlipper], any_url: str, stream: str,
) -> None:
    """
    By default a chunk failing its CRC ends the subscription with
    ChunkCrcError; every message handed out before it is the one published.
    """
    proxy, flipper = flipping
    client = streams_client(via(proxy, any_url))
    received: list[object] = []
    try:
        async with asyncio.timeout(30):
            with pytest.raises(ChunkCrcError):
                async for body in client.subscribe(stream, offset=Offset.FIRST):
                    received.append(body)
    finally:
        await client.disconnect()
    first_bad = flipper.flipped[0][0]
    assert received == BODIES[:first_bad]

async def test_corrupted_chunks_skipped(
        flipping: tuple[Proxy, ChunkFlipper], any_url: str, stream: str,
) -> None:
    """
    With ``crc_failure='skip'`` the corrupted chunks are dropped and
    counted; every other message comes, in order, intact, once.
    """
    proxy, flipper = flipping
    client = streams_client(via(proxy, any_url), crc_failure='skip')
    received: list[object] = []
    try:
        async with asyncio.timeout(30):
            with pytest.raises(TimeoutError):
                async for body in client.subscribe(stream, offset=Offset.FIRST, timeout=2):
                    received.append(body)
        skipped = client.metrics().chunks_skipped
    finally:
        await client.disconnect()
    assert flipper.flipped, 'nothing was flipped'
    lost = {i for first, records in flipper.flipped for i in range(first, first + records)}
    assert received == [b for i, b in enumerate(BODIES) if i not in lost]
    assert skipped == len(flipper.flipped)

async def test_public_errors_are_rbfly_errors() -> None:
    """The errors above all derive from rbfly's base error, as every public call's."""
    assert issubclass(ConnectionLost, RbFlyError)
    assert issubclass(ChunkCrcError, RbFlyError)

async def test_fake_broker_survives_bad_client_bytes() -> None:
    """The fake broker closes a connection sending garbage, and serves the next one."""
    async with FakeBroker() as broker:
        reader, writer = await asyncio.open_connection('127.0.0.1', broker.port)
        writer.write(struct.pack('>I', 6) + b'\xde\xad\xbe\xef\x00\x01')
        async with asyncio.timeout(5):
            data = await reader.read()
        frames = FrameReader()
        frames.feed(data)
        assert [type(decode_frame(f).command).__name__ for f in frames] == ['Close']
        writer.close()
        client = streams_client(broker.url)
        try:
            await client.create_stream('s')
            assert await client.stream_exists('s')
        finally:
            await client.disconnect()
