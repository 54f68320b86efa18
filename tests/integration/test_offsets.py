"""
Every offset specification against real brokers.
"""

import asyncio
import time

import pytest

from rbfly.streams import Offset, PublisherBatchFast, StreamsClient, get_message_ctx
from rbfly.streams.error import NoOffset

async def publish(client: StreamsClient, stream: str, values: range) -> None:
    async with client.publisher(stream, cls=PublisherBatchFast) as publisher:
        for i in values:
            publisher.batch(i)
        await publisher.flush()

async def first(client: StreamsClient, stream: str, offset: Offset) -> tuple[int, object]:
    async for body in client.subscribe(stream, offset=offset, timeout=5):
        return get_message_ctx().stream_offset, body
    raise AssertionError('no message')

async def test_offset_first_and_offset(client: StreamsClient, stream: str) -> None:
    """FIRST starts at 0; offset(n) starts exactly at n, even inside a chunk."""
    await publish(client, stream, range(100))
    assert await first(client, stream, Offset.FIRST) == (0, 0)
    assert await first(client, stream, Offset.offset(57)) == (57, 57)

async def test_offset_last(client: StreamsClient, stream: str) -> None:
    """LAST starts at the last chunk."""
    await publish(client, stream, range(10))
    await publish(client, stream, range(10, 20))
    offset, body = await first(client, stream, Offset.LAST)
    assert offset == body
    assert offset >= 10

async def test_offset_next(client: StreamsClient, stream: str) -> None:
    """NEXT receives only messages published after subscribing."""
    await publish(client, stream, range(10))

    async def later() -> None:
        await asyncio.sleep(0.5)
        await publish(client, stream, range(10, 11))

    task = asyncio.create_task(later())
    assert await first(client, stream, Offset.NEXT) == (10, 10)
    await task

async def test_offset_timestamp(client: StreamsClient, stream: str) -> None:
    """timestamp(t) skips chunks stored before t."""
    await publish(client, stream, range(10))
    await asyncio.sleep(1.5)
    t = time.time()
    await asyncio.sleep(0.5)
    await publish(client, stream, range(10, 20))
    offset, body = await first(client, stream, Offset.timestamp(t))
    assert (offset, body) == (10, 10)

async def test_offset_reference(client: StreamsClient, stream: str) -> None:
    """A stored offset reference resumes after the stored offset."""
    await publish(client, stream, range(20))
    with pytest.raises(NoOffset):
        await client.query_offset(stream, 'reader-1')
    assert await first(client, stream, Offset.reference('reader-1')) == (0, 0)
    async for _ in client.subscribe(stream, offset=Offset.offset(5), timeout=5):
        await client.write_offset(stream, 'reader-1')
        break
    for _ in range(50):  # StoreOffset has no response: poll until stored
        try:
            if await client.query_offset(stream, 'reader-1') == 5:
                break
        except NoOffset:
            pass
        await asyncio.sleep(0.1)
    assert await client.query_offset(stream, 'reader-1') == 5
    assert await first(client, stream, Offset.reference('reader-1')) == (6, 6)
    await client.write_offset(stream, 'reader-1', 12)
    await asyncio.sleep(0.3)
    assert await first(client, stream, Offset.reference('reader-1')) == (13, 13)
