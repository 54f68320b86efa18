"""
A fake transport and recorders of what the asyncio adapter
(:py:class:`~rbfly.streams.aio.connection.StreamsProtocol`) calls, and a
connection taken through the handshake as the broker answers it: the
broker's bytes are made by the project's own codec, what the adapter
writes is decoded back. No sockets.
"""

from __future__ import annotations

import asyncio
import typing as tp

from rbfly.streams.aio.connection import StreamsProtocol
from rbfly.streams.protocol import (
    FrameReader,
    Open,
    OpenResponse,
    PeerProperties,
    PeerPropertiesResponse,
    SaslAuthenticate,
    SaslAuthenticateResponse,
    SaslHandshake,
    SaslHandshakeResponse,
    Tune,
    TuneResponse,
    decode_frame,
    encode,
)
from rbfly.streams.protocol.connection import ConnectionCore

OK = 1
SERVER = {'product': 'RabbitMQ', 'version': '3.10.8'}
OPEN_PROPERTIES = {'advertised_host': 'node-1', 'advertised_port': '5552'}

class Transport:
    """
    A fake transport: keeps what is written; closing or aborting it ends
    the connection on the next loop iteration, as asyncio's transports do.
    """
    def __init__(self, protocol: StreamsProtocol) -> None:
        self.protocol = protocol
        self.written = bytearray()
        self.writes = 0
        self.closing = False
        self.closed = False
        self.aborted = False
        self.reading = True
        self.paused = 0
        self.resumed = 0

    def write(self, data: bytes) -> None:
        assert not self.closing, 'written after close'
        self.written += data
        self.writes += 1

    def is_closing(self) -> bool:
        return self.closing

    def pause_reading(self) -> None:
        assert not self.closing, 'paused after close'
        self.reading = False
        self.paused += 1

    def resume_reading(self) -> None:
        assert not self.closing, 'resumed after close'
        self.reading = True
        self.resumed += 1

    def close(self) -> None:
        self.closed = True
        self._end()

    def abort(self) -> None:
        self.aborted = True
        self._end()

    def _end(self) -> None:
        if not self.closing:
            self.closing = True
            asyncio.get_running_loop().call_soon(self.protocol.connection_lost, None)

    def sent(self) -> list[tuple[object, int | None]]:
        """Decode (and take) what the adapter wrote."""
        reader = FrameReader()
        reader.feed(bytes(self.written))
        del self.written[:]
        return [(d.command, d.correlation_id) for d in map(decode_frame, reader)]

class Publisher:
    """Records what the connection calls on a publisher."""
    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def on_confirm(self, publishing_ids: tp.Sequence[int]) -> None:
        self.calls.append(('confirm', list(publishing_ids)))

    def on_error(self, errors: tp.Sequence[tuple[int, int]]) -> None:
        self.calls.append(('error', list(errors)))

    def on_connection_lost(self, error: Exception) -> None:
        self.calls.append(('lost', error))

class Subscription:
    """Records what the connection calls on a subscription."""
    def __init__(self) -> None:
        self.calls: list[tuple[object, ...]] = []

    def on_chunk(
            self, chunk: bytes | bytearray | memoryview, committed_chunk_id: int | None,
    ) -> None:
        self.calls.append(('chunk', bytes(chunk), committed_chunk_id))

    def on_connection_lost(self, error: Exception) -> None:
        self.calls.append(('lost', error))

    def on_consumer_update(
            self, protocol: StreamsProtocol, correlation_id: int, active: bool,
    ) -> None:
        self.calls.append(('consumer-update', protocol, correlation_id, active))

def connect(heartbeat: int = 0) -> tuple[StreamsProtocol, Transport]:
    """A connection made, before the broker answered anything."""
    core = ConnectionCore(
        virtual_host='vh', username='user', password='secret', heartbeat=heartbeat,
        client_properties={'product': 'test'},
    )
    protocol = StreamsProtocol(core)
    transport = Transport(protocol)
    protocol.connection_made(tp.cast(asyncio.Transport, transport))
    return protocol, transport

def handshake(
        version: str = '3.10.8', heartbeat: int = 0,
) -> tuple[StreamsProtocol, Transport]:
    """A connection through the whole handshake, as the broker answers it."""
    protocol, transport = connect(heartbeat)
    assert transport.sent() == [(PeerProperties({'product': 'test'}), 1)]
    protocol.data_received(encode(PeerPropertiesResponse(1, OK, {**SERVER, 'version': version})))
    assert transport.sent() == [(SaslHandshake(), 2)]
    protocol.data_received(encode(SaslHandshakeResponse(2, OK, ['PLAIN', 'AMQPLAIN'])))
    assert transport.sent() == [(SaslAuthenticate('PLAIN', b'\0user\0secret'), 3)]
    assert not protocol.opened.done()
    protocol.data_received(
        encode(SaslAuthenticateResponse(3, OK, None)) + encode(Tune(1 << 20, heartbeat)),
    )
    assert transport.sent() == [(TuneResponse(1 << 20, heartbeat), None), (Open('vh'), 4)]
    assert not protocol.is_open
    protocol.data_received(encode(OpenResponse(4, OK, OPEN_PROPERTIES)))
    assert transport.sent() == []
    return protocol, transport

async def start(
        protocol: StreamsProtocol, transport: Transport, command: tp.Any, context: str = '',
) -> tuple[asyncio.Task[tp.Any], int]:
    """Send a request from a task; return the task and the request's correlation id."""
    task = asyncio.ensure_future(protocol.request(command, context))
    await asyncio.sleep(0)  # the task runs up to waiting for its response
    [(sent, correlation_id)] = transport.sent()
    assert sent == command and correlation_id is not None
    return task, correlation_id
