"""
Hostile peers for tests: a fake stream broker that follows a script (it
answers the handshake, or misbehaves at a chosen step), and a TCP proxy in
front of a real broker that flips bytes of the chunks it delivers.

Both speak the protocol through rbfly's own sans-IO codec
(:py:func:`rbfly.streams.protocol.encode` for what they send,
:py:func:`rbfly.streams.protocol.decode_frame` for what the client sends).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from rbfly.streams.protocol import (
    Close,
    CloseResponse,
    Command,
    Create,
    DecodedFrame,
    FrameReader,
    OpenResponse,
    PeerProperties,
    PeerPropertiesResponse,
    ResponseCode,
    SaslAuthenticate,
    SaslAuthenticateResponse,
    SaslHandshake,
    SaslHandshakeResponse,
    Tune,
    TuneResponse,
    decode_frame,
    encode,
)
from rbfly.streams.protocol.connection import sasl_plain

# a broker older than 3.11: the client asks no command versions after Open
SERVER_PROPERTIES = {'product': 'RabbitMQ', 'version': '3.10.7', 'platform': 'Erlang'}

class Session:
    """
    One client connection to :py:class:`FakeBroker`, as its script sees
    it: read the client's frames, write frames or raw bytes.
    """
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self._frames = FrameReader()

    async def receive(self) -> DecodedFrame:
        """The client's next frame, decoded."""
        while (frame := self._frames.next_frame()) is None:
            data = await self.reader.read(65536)
            if not data:
                raise EOFError('client closed the connection')
            self._frames.feed(data)
        return decode_frame(frame)

    async def request(self, kind: type[Command]) -> int:
        """Read the client's next frame, a ``kind`` request; its correlation id."""
        decoded = await self.receive()
        assert type(decoded.command) is kind, decoded
        assert decoded.correlation_id is not None
        return decoded.correlation_id

    async def next_create(self) -> int | None:
        """
        The correlation id of the client's next Create request; ``None``
        when the client closes the connection instead (its Close answered).
        """
        decoded = await self.receive()
        if type(decoded.command) is Close and decoded.correlation_id is not None:
            await self.send(CloseResponse(decoded.correlation_id, ResponseCode.OK))
            return None
        assert type(decoded.command) is Create and decoded.correlation_id is not None, decoded
        return decoded.correlation_id

    async def send(self, command: Command) -> None:
        await self.write(encode(command))

    async def write(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def handshake(
            self, properties: Mapping[str, str] = SERVER_PROPERTIES,
            tune: tuple[int, int] = (1048576, 60),
    ) -> None:
        """
        Answer the client's handshake as a broker does (PLAIN, guest),
        with ``properties`` as the peer properties, and ``tune``
        (frame_max, heartbeat) proposed in Tune.
        """
        cid = await self.request(PeerProperties)
        await self.send(PeerPropertiesResponse(cid, ResponseCode.OK, dict(properties)))
        await self.after_peer_properties(tune)

    async def after_peer_properties(self, tune: tuple[int, int] = (1048576, 60)) -> None:
        """The rest of the handshake: SASL, Tune, Open."""
        cid = await self.request(SaslHandshake)
        await self.send(SaslHandshakeResponse(cid, ResponseCode.OK, ('PLAIN',)))
        decoded = await self.receive()
        auth = decoded.command
        assert type(auth) is SaslAuthenticate and decoded.correlation_id is not None
        assert auth.data == sasl_plain('guest', 'guest')
        await self.send(SaslAuthenticateResponse(decoded.correlation_id, ResponseCode.OK, None))
        await self.send(Tune(*tune))
        assert type((await self.receive()).command) is TuneResponse
        decoded = await self.receive()
        assert decoded.correlation_id is not None
        await self.send(OpenResponse(decoded.correlation_id, ResponseCode.OK, {}))

    async def close(self) -> None:
        """Close the connection (it may be gone already)."""
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()

Script = Callable[[Session], Awaitable[None]]

class FakeBroker:
    """
    A server on ``127.0.0.1:<port>`` running ``script`` for each client
    connection; the connection is kept open after the script returns (a
    peer that stops answering) until :py:meth:`close`.

    :ivar port: Port it listens on (after :py:meth:`start`).
    :ivar errors: Exceptions the scripts raised (a test checks it is empty:
        the client sent what the script expected).
    """
    def __init__(self, script: Script) -> None:
        self._script = script
        self._server: asyncio.Server | None = None
        self._sessions: list[Session] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0
        self.errors: list[BaseException] = []

    @property
    def url(self) -> str:
        return 'rabbitmq-stream://guest:guest@127.0.0.1:{}/'.format(self.port)

    @property
    def connections(self) -> int:
        """Client connections accepted so far."""
        return len(self._sessions)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, '127.0.0.1', 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session = Session(reader, writer)
        self._sessions.append(session)
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._script(session)
        except (EOFError, ConnectionError):
            pass  # the client gave up on a misbehaving server; expected
        except Exception as ex:  # noqa: BLE001 - the test reports it
            self.errors.append(ex)
        finally:
            self._tasks.discard(task)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for session in self._sessions:
            session.writer.transport.abort()
        if self._tasks:  # the scripts see the end of their connections
            await asyncio.wait(self._tasks)
        if self._server is not None:
            await self._server.wait_closed()

@dataclass
class Flip:
    """
    A byte flipped by :py:class:`FlippingProxy`: in the data of the chunk
    at ``first_offset`` (``records`` messages), at ``position`` of the
    chunk.
    """
    first_offset: int
    records: int
    position: int

@dataclass
class FlipPlan:
    """
    Which Deliver frames :py:class:`FlippingProxy` corrupts: once
    ``after`` bytes of chunk data went through, every ``every``-th chunk
    (at most ``count`` chunks), at a position in the chunk's data part
    chosen by ``rng`` (its header stays intact).
    """
    rng: random.Random
    after: int
    every: int = 1
    count: int = 1
    flips: list[Flip] = field(default_factory=list)
    passed: int = 0  # chunk data bytes forwarded
    chunks: int = 0  # chunks seen since flipping started

class FlippingProxy:
    """
    TCP proxy to ``host:port`` that splits what the broker sends into
    frames and, as ``plan`` says, XORs one byte of a Deliver frame's chunk
    data (never of a frame header or chunk header); what the client sends
    passes as is.
    """
    # Deliver v1 frame: key, version, subscription id; v2: a committed
    # chunk id more; then the chunk: a 48-byte header
    _CHUNK_HEADER = 48

    def __init__(self, host: str, port: int, plan: FlipPlan) -> None:
        self._target = (host, port)
        self.plan = plan
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0
        self.connections = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, '127.0.0.1', 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def url(self, broker_url: str) -> str:
        """``broker_url`` (its credentials and virtual host) through the proxy."""
        head, _, rest = broker_url.partition('@')
        _, _, path = rest.partition('/')
        return '{}@127.0.0.1:{}/{}'.format(head, self.port, path)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.close()
            return
        self._writers += [writer, up_writer]
        for task in (
                asyncio.create_task(self._pipe(reader, up_writer)),
                asyncio.create_task(self._frames(up_reader, writer))):
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pipe(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
        dst.close()

    async def _frames(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while True:
                head = await src.readexactly(4)
                frame = bytearray(await src.readexactly(int.from_bytes(head, 'big')))
                self._corrupt(frame)
                dst.write(head + frame)
                await dst.drain()
        dst.close()

    def _corrupt(self, frame: bytearray) -> None:
        if len(frame) < 4 or int.from_bytes(frame[:2], 'big') != 0x0008:
            return
        start = 5 if int.from_bytes(frame[2:4], 'big') == 1 else 13  # the chunk
        data_start = start + self._CHUNK_HEADER
        data_size = int.from_bytes(frame[start + 36:start + 40], 'big')
        plan = self.plan
        if plan.passed < plan.after or len(plan.flips) >= plan.count or data_size == 0:
            plan.passed += data_size
            return
        plan.chunks += 1
        if (plan.chunks - 1) % plan.every:
            return
        position = plan.rng.randrange(data_size)
        frame[data_start + position] ^= 1 << plan.rng.randrange(8)
        plan.flips.append(Flip(
            int.from_bytes(frame[start + 24:start + 32], 'big'),
            int.from_bytes(frame[start + 4:start + 8], 'big'),
            position,
        ))

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in self._writers:
            writer.transport.abort()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks)
        if self._server is not None:
            await self._server.wait_closed()
