"""
What bounds a pipelined publisher's memory with big messages, against real
brokers: its window in bytes, and the connection's write buffer.

Bounded in messages only, a publisher of 512 KiB messages let 10,000 of
them (5 GB) wait for confirmation and handed the connection hundreds of MB
at once, which the transport copied into its own buffer (a profile of the
workloads benchmark; 989 MB of RSS publishing 1 GB).
"""

import asyncio

import pytest

from rbfly.error import MessageTooLarge
from rbfly.streams import PublisherPipelined, StreamsClient

from .conftest import read_back

SIZE = 512 * 1024

def big(i: int, size: int = SIZE) -> bytes:
    """Message ``i``: its index, then filler up to ``size`` bytes."""
    return b'%010d' % i + bytes([i % 251]) * (size - 10)

def check(received: list[object], count: int, size: int = SIZE) -> None:
    """Every message once, in order, whole."""
    assert len(received) == count
    for i, m in enumerate(received):
        assert isinstance(m, bytes)
        assert len(m) == size and m[:10] == b'%010d' % i and m[-1] == i % 251

async def test_window_in_bytes(client: StreamsClient, stream: str) -> None:
    """
    With a window of 2 MiB, at most 2 MiB of bodies (and one message more,
    the one that found room) wait, buffered or unconfirmed, however many
    messages the window in messages would let wait; every message arrives.
    """
    count = 100
    held = 0
    async with client.publisher(
            stream, cls=PublisherPipelined, window_bytes=2 << 20) as publisher:
        assert publisher.window_bytes == 2 << 20
        for i in range(count):
            await publisher.send(big(i))
            held = max(held, len(publisher._unconfirmed) + len(publisher._buffer))
            assert publisher._pending_bytes <= (2 << 20) + SIZE
        await publisher.flush()
        assert publisher._pending_bytes == 0
    assert 1 < held <= 5
    check(await read_back(client, stream, count), count)

async def test_write_buffer_bounded(client: StreamsClient, stream: str) -> None:
    """
    With windows too wide to bind, ``send`` still waits while the
    connection's write buffer is above its high-water mark: the transport
    holds a frame or two, not what the application made (100 MB here).
    """
    count = 200
    most = 0
    async with client.publisher(
            stream, cls=PublisherPipelined, window_bytes=1 << 30) as publisher:
        for i in range(count):
            await publisher.send(big(i))
            protocol = publisher.protocol
            assert protocol is not None and protocol.transport is not None
            # what the transport holds, and the frames the connection holds
            # for one write after a confirmation (at most COALESCE_MAX)
            held = sum(len(f) for f in protocol.core._out)
            most = max(most, protocol.transport.get_write_buffer_size() + held)
        await publisher.flush()
    assert most <= 3 * publisher.batch_bytes
    check(await read_back(client, stream, count), count)

async def test_rejected_message_leaves_window(client: StreamsClient, stream: str) -> None:
    """
    A message bigger than a frame is refused: its bytes leave the window,
    the publisher goes on and the other messages arrive.
    """
    async with client.publisher(
            stream, cls=PublisherPipelined, window_bytes=1 << 20) as publisher:
        await publisher.send(big(0))
        await publisher.send(b'x' * (2 << 20))  # bigger than RabbitMQ's 1 MiB frames
        with pytest.raises(MessageTooLarge, match='does not fit into a frame'):
            await publisher.flush()
        assert publisher._pending_bytes == 0
        for i in range(1, 10):
            await asyncio.wait_for(publisher.send(big(i)), 10)
    check(await read_back(client, stream, 10), 10)
