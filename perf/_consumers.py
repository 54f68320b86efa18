"""
The consumers measured by bench_consume.py: rbfly (this version or RbFly
0.10, the same code running in the child process) and rstream read a
stream from its first offset and return the run's figures; the ceiling
consumer measures what the broker delivers to a client that decodes nothing.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any
from typing import cast as tp_cast

from _common import (
    JsonDict,
)
from _streams import (
    Endpoint,
    Stopwatch,
    VerificationError,
    endpoint,
    message,
    run_result,
)

class Received:
    """What a run received: count, last body and its offset (if known)."""

    def __init__(self) -> None:
        self.count = 0
        self.last: Any = None
        self.offset: int | None = None

    def check(self, impl: str, count: int) -> None:
        body = self.last
        if isinstance(body, bytes | bytearray | memoryview):
            body = bytes(body).decode()   # rstream decodes AMQP strings as bytes
        expected = message(count - 1)
        if self.count != count or body != expected or self.offset not in (None, count - 1):
            raise VerificationError(
                '{}: received {} messages, the last {!r} at offset {}; expected {}'
                ' messages, the last {!r} at offset {}'.format(
                    impl, self.count, self.last, self.offset, count, expected, count - 1,
                )
            )


#
# rbfly (this version or 0.10; the same code runs in the child process)
#

async def consume_rbfly(url: str, stream: str, count: int, chunks: bool) -> JsonDict:
    from rbfly.streams import Offset, get_message_ctx, streams_client

    client = streams_client(url)   # RbFly 0.10 clients are no context managers
    watch = Stopwatch()
    received = Received()
    try:
        # connect before the timing (RbFly 0.10: get_protocol)
        connect: Any = getattr(client, '_get_protocol', None) \
            or getattr(client, 'get_protocol', None)
        await connect()
        n = 0
        watch.start()
        if chunks:
            it: Any = client.subscribe_chunks(stream, offset=Offset.FIRST)
            try:
                async for chunk in it:
                    n += len(chunk)
                    if n >= count:
                        break
                watch.stop()
            finally:
                await it.aclose()
            last = chunk[-1]
            received.last, received.offset = last.body, last.stream_offset
        else:
            it = client.subscribe(stream, offset=Offset.FIRST)
            try:
                body = None
                async for body in it:  # noqa: B007 (the last body is checked)
                    n += 1
                    if n >= count:
                        break
                watch.stop()
                received.last, received.offset = body, get_message_ctx().stream_offset
            finally:
                await it.aclose()
        received.count = n
    finally:
        await client.disconnect()
    received.check('rbfly', count)
    return run_result(count, watch)


#
# rstream
#

async def consume_rstream(url: str, stream: str, count: int) -> JsonDict:
    from rstream import Consumer, ConsumerOffsetSpecification, OffsetType, amqp_decoder

    ep = endpoint(url)
    watch = Stopwatch()
    received = Received()
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def on_message(msg: Any, ctx: Any) -> None:
        received.count += 1
        if received.count == count:
            received.last, received.offset = msg.value, ctx.offset
            done.set_result(None)

    consumer = Consumer(
        ep.host, ep.port, username=ep.username, password=ep.password, vhost=ep.vhost,
    )
    await consumer.start()
    try:
        watch.start()
        await consumer.subscribe(
            stream, on_message, decoder=amqp_decoder,
            offset_specification=ConsumerOffsetSpecification(OffsetType.FIRST, None),
        )
        await done
        watch.stop()
    finally:
        await consumer.close()
    received.check('rstream', count)
    return run_result(count, watch)


#
# the broker's ceiling: a consumer that decodes nothing
#

class CeilingError(Exception):
    """The broker refused the ceiling consumer's handshake or subscription."""


class _Counter(asyncio.Protocol):
    """
    The smallest stream consumer: the handshake (SASL PLAIN, no TLS), one
    subscription from the first offset, and then only the frame lengths and
    the record counts of user chunks are read; a credit goes back per chunk
    as it arrives. Written from the protocol specification and sharing no
    code with rbfly, so that what it measures is the broker.
    """

    def __init__(self, ep: Endpoint, stream: str, count: int, credit: int) -> None:
        self.ep = ep
        self.stream = stream
        self.count = count
        self.credit = credit
        self.received = 0
        self.last_offset: int | None = None
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        loop = asyncio.get_running_loop()
        self.opened: asyncio.Future[None] = loop.create_future()
        self.done: asyncio.Future[None] = loop.create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = tp_cast(asyncio.Transport, transport)
        self._request(0x0011, struct.pack('>i', 0))   # PeerProperties, no properties

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(CeilingError('connection lost: {}'.format(exc)))

    def _fail(self, error: Exception) -> None:
        for fut in (self.opened, self.done):
            if not fut.done():
                fut.set_exception(error)

    def _write(self, key: int, payload: bytes) -> None:
        assert self.transport is not None
        self.transport.write(struct.pack('>IHH', len(payload) + 4, key, 1) + payload)

    def _request(self, key: int, payload: bytes) -> None:
        self._write(key, struct.pack('>I', 1) + payload)   # correlation id 1

    def data_received(self, data: bytes) -> None:
        buf = self.buffer
        buf += data
        pos, end = 0, len(buf)
        while end - pos >= 6:
            size, key = struct.unpack_from('>IH', buf, pos)
            if end - pos - 4 < size:
                break
            if key == 0x0008:   # Deliver v1: subscription id, then the chunk header
                _, kind, _, records, _, _, first = struct.unpack_from('>BBHIqQQ', buf, pos + 9)
                if kind == 0:   # user records
                    self.received += records
                    self.last_offset = first + records - 1
                self._write(0x0009, struct.pack('>BH', 0, 1))   # Credit: one more chunk
                if self.last_offset is not None and self.last_offset >= self.count - 1 \
                        and not self.done.done():
                    self.done.set_result(None)
            else:
                self._control(key, bytes(buf[pos + 8:pos + 4 + size]))
            pos += 4 + size
        del buf[:pos]

    def _control(self, key: int, body: bytes) -> None:
        if key & 0x8000 and len(body) >= 6 and struct.unpack_from('>H', body, 4)[0] != 1:
            code = struct.unpack_from('>H', body, 4)[0]
            self._fail(CeilingError('command 0x{:04x} answered with code {}'.format(key, code)))
        elif key == 0x8011:   # PeerProperties -> SaslHandshake
            self._request(0x0012, b'')
        elif key == 0x8012:   # SaslHandshake -> SaslAuthenticate
            secret = b'\0' + self.ep.username.encode() + b'\0' + self.ep.password.encode()
            self._request(0x0013, _string('PLAIN') + struct.pack('>i', len(secret)) + secret)
        elif key == 0x0014:   # Tune: accept the broker's values, then Open
            self._write(0x0014, body)
            self._request(0x0015, _string(self.ep.vhost))
        elif key == 0x8015 and not self.opened.done():
            self.opened.set_result(None)

    def subscribe(self) -> None:
        # Subscribe: subscription id 0, offset spec FIRST (1), credit, no properties
        self._request(0x0007, struct.pack('>B', 0) + _string(self.stream)
                      + struct.pack('>HHi', 1, self.credit, 0))


def _string(value: str) -> bytes:
    data = value.encode()
    return struct.pack('>h', len(data)) + data


async def consume_ceiling(url: str, stream: str, count: int, credit: int = 64) -> JsonDict:
    """
    Read a stream with :py:class:`_Counter`, polling the event loop without
    sleeping until the last message arrived (as rbfly's subscriptions do
    while chunks arrive quickly: a client asleep between chunks makes the
    broker slower, see doc/perf.rst).
    """
    if not url.startswith('rabbitmq-stream:'):
        raise CeilingError('the ceiling consumer has no TLS')
    ep = endpoint(url)
    loop = asyncio.get_running_loop()
    transport, counter = await loop.create_connection(
        lambda: _Counter(ep, stream, count, credit), ep.host, ep.port,
    )
    watch = Stopwatch()
    try:
        await asyncio.wait_for(counter.opened, 30)
        watch.start()
        counter.subscribe()
        while not counter.done.done():   # noqa: ASYNC110 (polling on purpose, see above)
            await asyncio.sleep(0)
        await counter.done
        watch.stop()
    finally:
        transport.close()
    if counter.received != count or counter.last_offset != count - 1:
        raise VerificationError(
            'ceiling: received {} records, the last at offset {}; expected {}, the last'
            ' at {}'.format(counter.received, counter.last_offset, count, count - 1)
        )
    return run_result(count, watch)
