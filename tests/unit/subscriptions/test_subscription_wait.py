"""
How a subscription waits for chunks: it polls the connection for a short
while when chunks come in quick succession, and sleeps at once otherwise.

No sockets: chunks are handed to the subscription as the connection would.
"""

import asyncio
import struct
import zlib

import pytest

from rbfly.streams.offset import Offset
from rbfly.streams.protocol.commands import OffsetSpec
from rbfly.streams.subscriptions.options import ReadOptions
from rbfly.streams.subscriptions.subscription import Subscription, spin_wait

def chunk(first: int, bodies: list[bytes]) -> bytes:
    data = b''.join(struct.pack('>I', len(b)) + b for b in bodies)
    header = struct.pack(
        '>BBHIqQQIIIB3x', 0x50, 0, len(bodies), len(bodies), 1_700_000_000_000, 1, first,
        zlib.crc32(data), len(data), 0, 0,
    )
    return header + data

def subscription(spin: float) -> Subscription:
    return Subscription(
        's', OffsetSpec.first(), 0, {}, ReadOptions(amqp=False, spin=spin),
        resume_offset=Offset.FIRST,
    )

async def test_spins_while_chunks_come_quickly() -> None:
    """
    A subscription reading chunks in quick succession takes the next one
    without sleeping: no waiter future is created.
    """
    loop = asyncio.get_running_loop()
    sub = subscription(spin=0.5)
    sub.on_chunk(chunk(0, [b'a']), None)
    sub.on_chunk(chunk(1, [b'b']), None)
    assert [m.body for m in await sub.next_chunk()] == [b'a']
    assert [m.body for m in await sub.next_chunk()] == [b'b']

    waiters = []
    real_create_future = loop.create_future

    def create_future() -> asyncio.Future[None]:
        f: asyncio.Future[None] = real_create_future()
        waiters.append(f)
        return f

    loop.create_future = create_future  # type: ignore[method-assign]
    try:
        loop.call_soon(sub.on_chunk, chunk(2, [b'c']), None)
        assert [m.body for m in await sub.next_chunk()] == [b'c']
    finally:
        del loop.create_future
    assert waiters == []

async def test_quiet_subscription_sleeps() -> None:
    """
    A subscription whose chunks come seldom (or only one so far) waits
    on a future at once; the chunk wakes it.
    """
    loop = asyncio.get_running_loop()
    sub = subscription(spin=0.5)
    sub.on_chunk(chunk(0, [b'a']), None)
    await sub.next_chunk()
    assert not sub._gap < sub.spin  # one chunk: no gap known

    async def deliver() -> None:
        await asyncio.sleep(0.01)
        assert sub._waiter is not None  # the reader sleeps, it does not spin
        sub.on_chunk(chunk(1, [b'b']), None)

    task = loop.create_task(deliver())
    assert [m.body for m in await sub.next_chunk()] == [b'b']
    await task

async def test_spin_ends_after_spin_time() -> None:
    """Polling stops ``spin`` seconds after the last chunk arrived."""
    sub = subscription(spin=0.02)
    sub.on_chunk(chunk(0, [b'a']), None)
    sub.on_chunk(chunk(1, [b'b']), None)
    await sub.next_chunk()
    await sub.next_chunk()
    async with asyncio.timeout(10):  # a bound on a hang: spin is 0.02 s
        assert not await spin_wait([sub])

async def test_spin_wait_sees_errors() -> None:
    """An error ending the subscription stops the polling."""
    sub = subscription(spin=5)
    sub.on_chunk(chunk(0, [b'a']), None)
    sub.on_chunk(chunk(1, [b'b']), None)
    await sub.next_chunk()
    await sub.next_chunk()
    asyncio.get_running_loop().call_soon(sub.fail, RuntimeError('gone'))
    assert await asyncio.wait_for(spin_wait([sub]), 1)
    with pytest.raises(RuntimeError, match='gone'):
        await sub.next_chunk()

def test_spin_option_checked() -> None:
    """The client rejects a spin time out of range."""
    from rbfly.streams import streams_client
    with pytest.raises(ValueError, match='spin'):
        streams_client('rabbitmq-stream://localhost', spin=-1)
    with pytest.raises(ValueError, match='spin'):
        streams_client('rabbitmq-stream://localhost', spin=2)

@pytest.mark.parametrize('crc_check', [True, False])
async def test_crc_check(crc_check: bool) -> None:
    """A chunk whose CRC does not match ends the subscription, unless unchecked."""
    from rbfly.error import ChunkError

    sub = Subscription(
        's', OffsetSpec.first(), 0, {}, ReadOptions(amqp=False, crc_check=crc_check),
        resume_offset=Offset.FIRST,
    )
    data = bytearray(chunk(0, [b'abc']))
    data[-1] ^= 0xff  # the body's last byte
    sub.on_chunk(bytes(data), None)
    if crc_check:
        with pytest.raises(ChunkError, match='CRC'):
            sub.poll()
    else:
        chunk_ = sub.poll()
        assert chunk_ is not None
        assert [m.body for m in chunk_] == [b'ab\x9c']
