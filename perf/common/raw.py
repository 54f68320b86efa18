"""
The smallest RabbitMQ Streams clients, for the benchmarks' ``ceiling``
lines: what the broker does for a client that does next to nothing.

Written from the protocol specification (PROTOCOL.adoc) and sharing no
code with rbfly, so that what they measure is the broker: a handshake
(SASL PLAIN, no TLS), then frames built or read with ``struct`` only.
The clients wait either way: keeping the event loop polling
(:py:func:`poll`, ``asyncio.sleep(0)``), or asleep (a plain ``await``;
the consumer then pauses its reads for a moment after each read, as
rbfly does with chunks of history). A client asleep between small chunks
makes the broker slower, and a polling one takes a core the broker needs
on a machine of two cores (see doc/perf.rst); the benchmarks run both.
"""

from __future__ import annotations

import asyncio
import struct
from typing import cast

from perf.common.streams import Endpoint

# command keys (a response has the top bit set)
DECLARE_PUBLISHER = 0x0001
PUBLISH = 0x0002
PUBLISH_CONFIRM = 0x0003
PUBLISH_ERROR = 0x0004
SUBSCRIBE = 0x0007
DELIVER = 0x0008
CREDIT = 0x0009
PEER_PROPERTIES = 0x0011
SASL_HANDSHAKE = 0x0012
SASL_AUTHENTICATE = 0x0013
TUNE = 0x0014
OPEN = 0x0015
RESPONSE = 0x8000
OK = 1

class CeilingError(Exception):
    """The broker refused a request of a ceiling client, or the connection was lost."""


def string(value: str) -> bytes:
    """A protocol string: int16 length, UTF-8 data."""
    data = value.encode()
    return struct.pack('>h', len(data)) + data


class RawClient(asyncio.Protocol):
    """
    A connection that opens itself (``opened`` is done when Open is
    answered) and hands every other frame to :py:meth:`frame`.
    """

    def __init__(self, ep: Endpoint) -> None:
        self.ep = ep
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        loop = asyncio.get_running_loop()
        self.opened: asyncio.Future[None] = loop.create_future()
        self.answered: asyncio.Future[None] | None = None   # one request at a time
        self.done: asyncio.Future[None] = loop.create_future()
        self.closing = False

    def close(self) -> None:
        """Close the connection; its loss is no error then."""
        self.closing = True
        if self.transport is not None:
            self.transport.close()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.request(PEER_PROPERTIES, struct.pack('>i', 0))   # no properties

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closing:
            self.fail(CeilingError('connection lost: {}'.format(exc)))

    def fail(self, error: Exception) -> None:
        for fut in (self.opened, self.answered, self.done):
            if fut is not None and not fut.done():
                fut.set_exception(error)

    def write(self, key: int, payload: bytes) -> None:
        assert self.transport is not None
        self.transport.write(struct.pack('>IHH', len(payload) + 4, key, 1) + payload)

    def request(self, key: int, payload: bytes) -> None:
        """A request with correlation id 1 (one request at a time)."""
        self.write(key, struct.pack('>I', 1) + payload)

    async def call(self, key: int, payload: bytes) -> None:
        """A request, and its answer (an error when not OK)."""
        self.answered = asyncio.get_running_loop().create_future()
        self.request(key, payload)
        await asyncio.wait_for(self.answered, 30)

    def data_received(self, data: bytes) -> None:
        buf = self.buffer
        buf += data
        pos, end = 0, len(buf)
        while end - pos >= 6:
            size, key = struct.unpack_from('>IH', buf, pos)
            if end - pos - 4 < size:
                break
            if key & RESPONSE or key == TUNE:
                self._control(key, bytes(buf[pos + 8:pos + 4 + size]))
            else:
                self.frame(key, buf, pos + 8, pos + 4 + size)
            pos += 4 + size
        del buf[:pos]

    def frame(self, key: int, buf: bytearray, start: int, end: int) -> None:
        """A frame that is no response: its key, and its content at ``buf[start:end]``."""

    def _control(self, key: int, body: bytes) -> None:
        code = struct.unpack_from('>H', body, 4)[0] if key & RESPONSE and len(body) >= 6 else OK
        if code != OK:
            self.fail(CeilingError('command 0x{:04x} answered with code {}'.format(key, code)))
        elif key == PEER_PROPERTIES | RESPONSE:
            self.request(SASL_HANDSHAKE, b'')
        elif key == SASL_HANDSHAKE | RESPONSE:
            secret = b'\0' + self.ep.username.encode() + b'\0' + self.ep.password.encode()
            self.request(SASL_AUTHENTICATE,
                         string('PLAIN') + struct.pack('>i', len(secret)) + secret)
        elif key == TUNE:   # accept the broker's values, then Open
            self.write(TUNE, body)
            self.request(OPEN, string(self.ep.vhost))
        elif key == OPEN | RESPONSE:
            if not self.opened.done():
                self.opened.set_result(None)
        elif self.answered is not None and not self.answered.done():
            self.answered.set_result(None)


async def connect(ep: Endpoint, client: RawClient) -> None:
    """Connect ``client`` and wait until its connection is open."""
    loop = asyncio.get_running_loop()
    await loop.create_connection(lambda: client, ep.host, ep.port)
    opened = False
    try:
        await asyncio.wait_for(client.opened, 30)
        opened = True
    finally:
        if not opened:   # refused, timed out or cancelled: not left open
            client.close()


async def poll(fut: asyncio.Future[None]) -> None:
    """Wait for ``fut`` keeping the event loop polling, not sleeping."""
    while not fut.done():   # noqa: ASYNC110 (polling on purpose, see the module)
        await asyncio.sleep(0)
    await fut


#
# consuming
#

class Counter(RawClient):
    """
    One subscription from the first offset: only frame lengths and the
    record counts of user chunks are read; a credit goes back per chunk as
    it arrives. ``done`` when the record at offset ``count - 1`` came.
    """

    def __init__(self, ep: Endpoint, count: int, pause: float = 0.0) -> None:
        super().__init__(ep)
        self.count = count
        self.received = 0
        self.last_offset: int | None = None
        # seconds its reads pause after each read (0: none), as rbfly's
        # read_pause does when chunks of history arrive
        self.pause = pause

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.pause and self.transport is not None and not self.done.done():
            self.transport.pause_reading()
            asyncio.get_running_loop().call_later(self.pause, self._resume)

    def _resume(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()

    def subscribe(self, stream: str, credit: int) -> None:
        # subscription id 0, offset spec FIRST (1), credit, no properties
        self.request(SUBSCRIBE, struct.pack('>B', 0) + string(stream)
                     + struct.pack('>HHi', 1, credit, 0))

    def frame(self, key: int, buf: bytearray, start: int, end: int) -> None:
        if key != DELIVER:
            return
        # Deliver v1: subscription id, then the chunk header
        _, kind, _, records, _, _, first = struct.unpack_from('>BBHIqQQ', buf, start + 1)
        if kind == 0:   # user records
            self.received += records
            self.last_offset = first + records - 1
        self.write(CREDIT, struct.pack('>BH', 0, 1))
        if self.last_offset is not None and self.last_offset >= self.count - 1 \
                and not self.done.done():
            self.done.set_result(None)


#
# publishing
#

class Sender(RawClient):
    """
    A publisher (id 0, no name) that sends prepared Publish frames and
    counts confirmed publishing ids; a PublishError fails it.
    """

    def __init__(self, ep: Endpoint) -> None:
        super().__init__(ep)
        self.confirmed = 0
        self.wanted = 0
        self.confirm: asyncio.Future[None] | None = None

    async def declare(self, stream: str) -> None:
        await self.call(DECLARE_PUBLISHER, struct.pack('>B', 0) + string('') + string(stream))

    def expect(self, total: int) -> asyncio.Future[None]:
        """A future done when ``total`` messages are confirmed in all."""
        self.wanted = total
        self.confirm = asyncio.get_running_loop().create_future()
        if self.confirmed >= total:
            self.confirm.set_result(None)
        return self.confirm

    def frame(self, key: int, buf: bytearray, start: int, end: int) -> None:
        if key == PUBLISH_CONFIRM:   # publisher id, then an array of ids
            self.confirmed += struct.unpack_from('>i', buf, start + 1)[0]
            if self.confirm is not None and self.confirmed >= self.wanted \
                    and not self.confirm.done():
                self.confirm.set_result(None)
        elif key == PUBLISH_ERROR:
            self.fail(CeilingError('the broker refused published messages'))


def publish_frames(messages: list[bytes], first_id: int, per_frame: int) -> list[bytes]:
    """Publish v1 frames of publisher 0, ``per_frame`` messages each."""
    frames = []
    for start in range(0, len(messages), per_frame):
        part = messages[start:start + per_frame]
        body = b''.join(
            struct.pack('>Qi', first_id + start + i, len(m)) + m for i, m in enumerate(part)
        )
        payload = struct.pack('>Bi', 0, len(part)) + body
        frames.append(struct.pack('>IHH', len(payload) + 4, PUBLISH, 1) + payload)
    return frames


def amqp_string(value: str) -> bytes:
    """An AMQP 1.0 message of one amqp-value section holding a str8 string."""
    data = value.encode()
    assert len(data) < 256
    return b'\x00\x53\x77\xa1' + bytes([len(data)]) + data
