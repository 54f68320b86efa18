"""
Flow strategies counting chunks (credit on take, when a share of a chunk is
processed, manual), and the buffer and lag gauges that show them.
"""

import asyncio
import contextlib
import typing as tp
from collections.abc import Callable

import pytest

from rbfly.streams import (
    CreditOnTake,
    CreditWhenProcessed,
    ManualCredit,
    Offset,
    PublisherBatchFast,
    StreamsClient,
    get_message_ctx,
)

CHUNKS = 8
SIZE = 10  # messages per chunk
QUIET = 0.3  # seconds in which nothing may arrive: an upper bound, never a wait for success

async def publish_chunks(client: StreamsClient, stream: str) -> None:
    """
    CHUNKS chunks of SIZE messages: one awaited flush of one sub-entry
    batch each (a flush of separate messages may be split into chunks
    by the broker: RabbitMQ 4.0 writes the first alone).
    """
    async with client.publisher(stream, cls=PublisherBatchFast, sub_entry_size=SIZE) \
            as publisher:
        for c in range(CHUNKS):
            for i in range(SIZE):
                publisher.batch(c * SIZE + i)
            await publisher.flush()

async def until(check: Callable[[], bool]) -> None:
    """Wait for a condition the broker makes true at once (bounded)."""
    async with asyncio.timeout(30):
        while not check():  # noqa: ASYNC110 - a gauge has no event to wait on
            await asyncio.sleep(0.01)

def buffered(client: StreamsClient) -> int:
    return client.metrics().buffered_chunks

async def test_manual_credit(client: StreamsClient, stream: str) -> None:
    """
    Without processed() the subscription stops after ``credit`` chunks;
    processing each chunk before taking the next reads the whole stream,
    never holding more than ``credit`` chunks.
    """
    await publish_chunks(client, stream)
    flow = ManualCredit(credit=2)
    chunks = client.subscribe_chunks(stream, offset=Offset.FIRST, flow=flow)
    async with contextlib.aclosing(chunks):
        received = [await anext(chunks), await anext(chunks)]
        await asyncio.sleep(QUIET)
        assert buffered(client) == 0  # both credits are held by the chunks taken
        flow.processed()
        flow.processed()
        while sum(len(c) for c in received) < CHUNKS * SIZE:
            received.append(await anext(chunks))
            assert buffered(client) + 1 <= 2  # this one held, the rest buffered
            flow.processed()
        assert [m.body for c in received for m in c] == list(range(CHUNKS * SIZE))

async def test_credit_on_take(client: StreamsClient, stream: str) -> None:
    """A slow application: the client never holds more than ``credit`` chunks."""
    await publish_chunks(client, stream)
    chunks = client.subscribe_chunks(stream, offset=Offset.FIRST, flow=CreditOnTake(credit=2))
    bodies: list[object] = []
    async with contextlib.aclosing(chunks):
        async for chunk in chunks:
            bodies.extend(m.body for m in chunk)
            await asyncio.sleep(0.05)  # the broker sends what the credits allow meanwhile
            assert buffered(client) <= 2
            if len(bodies) == CHUNKS * SIZE:
                break
    assert bodies == list(range(CHUNKS * SIZE))

async def test_credit_when_processed(client: StreamsClient, stream: str) -> None:
    """
    With ``async for``, the next chunk's credit goes when half of a chunk's
    messages are processed (the sixth of ten asked for), not before.
    """
    await publish_chunks(client, stream)
    messages = client.subscribe(
        stream, offset=Offset.FIRST, flow=CreditWhenProcessed(ratio=0.5, credit=1),
    )
    bodies: list[object] = []
    async with contextlib.aclosing(messages):
        async for body in messages:
            bodies.append(body)
            index = len(bodies) % SIZE  # this message's place in its chunk, from 1
            last_chunk = len(bodies) > (CHUNKS - 1) * SIZE
            if 1 <= index <= 5:  # the credit is held: nothing comes
                await asyncio.sleep(QUIET / 10)
                assert buffered(client) == 0
            elif index == 6 and not last_chunk:  # 5 processed: the next chunk comes
                await until(lambda: buffered(client) == 1)
            if len(bodies) == CHUNKS * SIZE:
                break
    assert bodies == list(range(CHUNKS * SIZE))

async def test_consumer_lag(client4: StreamsClient, stream: str) -> None:
    """The lag gauge falls as the application takes chunks, to 0 at the end."""
    await publish_chunks(client4, stream)
    lags = []
    chunks = client4.subscribe_chunks(stream, offset=Offset.FIRST, flow=CreditOnTake(credit=1))
    async with contextlib.aclosing(chunks):
        async for chunk in chunks:
            lags.append(client4.metrics().consumer_lag)
            if chunk[-1].stream_offset == CHUNKS * SIZE - 1:
                break
    assert lags[0] > 0
    assert lags == sorted(lags, reverse=True)
    assert lags[-1] == 0

async def test_super_stream_manual(url4: str, client4: StreamsClient, stream: str) -> None:
    """One ManualCredit serves the partitions of a super stream, by the chunk's stream."""
    super_stream = stream + '-super'
    partitions = await client4.create_super_stream(super_stream, 2)
    try:
        async with client4.super_stream_publisher(
                super_stream, str, cls=PublisherBatchFast) as publisher:
            for i in range(20):
                publisher.batch(i)
            await publisher.flush()
        flow = ManualCredit(credit=1)
        seen: set[str] = set()
        count = 0
        messages = client4.subscribe_super_stream(super_stream, offset=Offset.FIRST, flow=flow)
        async with contextlib.aclosing(messages):
            async for _ in messages:
                count += 1
                seen.add(tp.cast(str, get_message_ctx().stream))
                if count == 20:
                    break
                flow.processed(get_message_ctx().stream)
        assert seen == set(partitions)
        with pytest.raises(ValueError, match='name the chunk'):
            flow.processed()
        with pytest.raises(ValueError, match='no subscription of stream'):
            flow.processed('elsewhere')
    finally:
        await client4.delete_super_stream(super_stream)

@pytest.mark.parametrize('kw, error, match', [
    ({'flow': object()}, TypeError, 'flow must be'),
    ({'flow': CreditOnTake(), 'credit': 3}, ValueError, 'do not apply'),
    ({'flow': CreditOnTake(), 'buffer_bytes': 1000}, ValueError, 'do not apply'),
])
async def test_bad_flow(
        client310: StreamsClient, stream: str, kw: dict[str, tp.Any],
        error: type[Exception], match: str,
) -> None:
    with pytest.raises(error, match=match):
        async for _ in client310.subscribe_chunks(stream, **kw):
            pass

def test_bad_strategies() -> None:
    with pytest.raises(ValueError, match='ratio'):
        CreditWhenProcessed(ratio=0)
    with pytest.raises(ValueError, match='ratio'):
        CreditWhenProcessed(ratio=1.5)
    with pytest.raises(ValueError, match='credit must be'):
        CreditOnTake(credit=0)
    with pytest.raises(ValueError, match='credit must be'):
        ManualCredit(credit=True)
    with pytest.raises(ValueError, match='serves 0 subscriptions'):
        ManualCredit().processed()
