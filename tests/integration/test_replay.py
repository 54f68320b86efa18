"""
Bounded replay: ``stop_at_end=True`` reads a stream up to its end as of the
call, then stops (RabbitMQ 4.3+ resolves offset specifications; on older
brokers the end is read from the stream's last chunk: test_tail.py).
"""

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator

import pytest

from rbfly.streams import (
    MessageFilter,
    Offset,
    PublisherBatchFast,
    StreamsClient,
    get_message_ctx,
    streams_client,
)

from .conftest import _client_with_stream

@pytest.fixture
async def client(url43: str, stream: str) -> AsyncIterator[StreamsClient]:
    async for c in _client_with_stream(url43, stream):
        yield c

async def publish(client: StreamsClient, stream: str, bodies: list[int], per_chunk: int) -> None:
    async with client.publisher(stream, cls=PublisherBatchFast) as publisher:
        for i, body in enumerate(bodies, 1):
            publisher.batch(body)
            if i % per_chunk == 0:
                await publisher.flush()
        await publisher.flush()

async def test_stops_at_end_of_now(client: StreamsClient, stream: str) -> None:
    """Messages published after the call are not read; the loop ends by itself."""
    await publish(client, stream, list(range(25)), per_chunk=10)
    got = []
    async for body in client.subscribe(stream, offset=Offset.FIRST, stop_at_end=True):
        got.append(body)
        if len(got) == 1:  # after the call: later chunks, not read
            await publish(client, stream, list(range(100, 110)), per_chunk=5)
    assert got == list(range(25))

async def test_chunks_and_offsets(client: StreamsClient, stream: str) -> None:
    """From an offset inside, with the chunk API; the last chunk one of stored offsets."""
    await publish(client, stream, list(range(30)), per_chunk=10)
    await client.write_offset(stream, 'ref', 29)  # a tracking chunk at the end
    async with asyncio.timeout(30):  # stored (and committed) at once
        while (await client.stream_stats(stream))['committed_offset'] < 30:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    got: list[object] = []
    async for chunk in client.subscribe_chunks(
            stream, offset=Offset.offset(12), stop_at_end=True):
        got.extend(m.body for m in chunk)
    assert got == list(range(12, 30))

@pytest.mark.parametrize('offset', [Offset.NEXT, Offset.FIRST, Offset.LAST])
async def test_nothing_to_read(client: StreamsClient, stream: str, offset: Offset) -> None:
    """An empty stream, or Offset.NEXT, ends at once."""
    got = [b async for b in client.subscribe(stream, offset=offset, stop_at_end=True)]
    assert got == []
    await publish(client, stream, [1, 2], per_chunk=2)
    got = [b async for b in client.subscribe(stream, offset=Offset.NEXT, stop_at_end=True)]
    assert got == []
    got = [b async for b in client.subscribe(stream, offset=offset, stop_at_end=True)]
    if offset == Offset.LAST:  # the last chunk: the broker may have written 1 alone
        assert got in ([1, 2], [2])
    else:
        assert got == ([] if offset == Offset.NEXT else [1, 2])

async def test_super_stream(url43: str) -> None:
    """Each partition is read to its end; the iteration ends when all are."""
    c = streams_client(url43)
    super_stream = 'rbfly-replay-{}'.format(uuid.uuid4().hex[:8])
    try:
        partitions = await c.create_super_stream(super_stream, 3)
        async with c.super_stream_publisher(
                super_stream, str, cls=PublisherBatchFast) as publisher:
            for i in range(60):
                publisher.batch(i)
            await publisher.flush()
        await c.write_offset(partitions[0], 'ref', 0)  # partition 0 ends with tracking
        got: dict[str, list[object]] = {}
        messages = c.subscribe_super_stream(super_stream, offset=Offset.FIRST, stop_at_end=True)
        async with contextlib.aclosing(messages):
            async for body in messages:
                got.setdefault(str(get_message_ctx().stream), []).append(body)
        assert sorted(b for bs in got.values() for b in bs) == list(range(60))  # type: ignore[type-var]
        assert set(got) <= set(partitions)
    finally:
        await c.delete_super_stream(super_stream)
        await c.disconnect()

async def test_not_with_filter(client: StreamsClient, stream: str) -> None:
    flt = MessageFilter(lambda m: 'x', {'x'})
    with pytest.raises(ValueError, match='stop_at_end cannot be combined with a filter'):
        async for _ in client.subscribe(stream, filter=flt, stop_at_end=True):
            pass

@pytest.mark.parametrize('broker', ['url', 'url4'])
async def test_older_brokers(request: pytest.FixtureRequest, broker: str, stream: str) -> None:
    """RabbitMQ 3.10 and 4.0 replay to the end too (4.3+ was needed before)."""
    async with streams_client(request.getfixturevalue(broker)) as c:
        await c.create_stream(stream)
        try:
            await publish(c, stream, list(range(10)), 4)
            got = [b async for b in c.subscribe(stream, offset=Offset.FIRST, stop_at_end=True)]
            assert got == list(range(10))
        finally:
            await c.delete_stream(stream)

async def test_only_offsets_stored(client: StreamsClient, stream: str) -> None:
    """A stream holding only stored offsets has nothing to read."""
    await client.write_offset(stream, 'ref', 0)
    got = [b async for b in client.subscribe(stream, offset=Offset.FIRST, stop_at_end=True)]
    assert got == []
