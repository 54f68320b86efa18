"""
Consume-transform-produce (:py:func:`rbfly.streams.pipe.pipe`): each output
exactly once across a crash and restarts (RabbitMQ 4.3: ``stop_at_end``
ends each run at the end of the input).
"""

import typing as tp
from collections.abc import AsyncIterator

import pytest

from rbfly.amqp import MessageCtx
from rbfly.streams import Offset, PublisherBatchFast, StreamsClient, streams_client
from rbfly.streams.pipe import pipe

@pytest.fixture
async def client(url43: str, stream: str) -> AsyncIterator[StreamsClient]:
    c = streams_client(url43)
    await c.create_stream(stream)
    await c.create_stream(stream + '-out')
    try:
        yield c
    finally:
        await c.delete_stream(stream)
        await c.delete_stream(stream + '-out')
        await c.disconnect()

async def fill(client: StreamsClient, stream: str, bodies: range) -> None:
    async with client.publisher(stream, cls=PublisherBatchFast) as publisher:
        for i in bodies:
            publisher.batch(i)
            if i % 25 == 24:
                await publisher.flush()
        await publisher.flush()

async def read_all(client: StreamsClient, stream: str) -> list[object]:
    return [b async for b in client.subscribe(stream, offset=Offset.FIRST, stop_at_end=True)]

def double_skip_sevens(ctx: MessageCtx) -> int | None:
    value = tp.cast(int, ctx.body)
    return None if value % 7 == 0 else value * 2

def expected(upto: int) -> list[object]:
    return [i * 2 for i in range(upto) if i % 7]

async def test_exactly_once_across_crash(client: StreamsClient, stream: str) -> None:
    """A transformation failing mid-way; the restart continues after the last output stored."""
    target = stream + '-out'
    await fill(client, stream, range(100))

    def crash_at_60(ctx: MessageCtx) -> int | None:
        if ctx.body == 60:
            raise RuntimeError('crash')
        return double_skip_sevens(ctx)

    with pytest.raises(RuntimeError, match='crash'):
        await pipe(client, stream, target, crash_at_60, name='p', stop_at_end=True)
    done = await read_all(client, target)
    assert done == expected(len(done) and tp.cast(int, done[-1]) // 2 + 1)  # a prefix
    assert await pipe(client, stream, target, double_skip_sevens, name='p', stop_at_end=True) \
        == len(expected(100)) - len(done)
    assert await read_all(client, target) == expected(100)
    # nothing new: nothing published; more input: continued
    assert await pipe(client, stream, target, double_skip_sevens, name='p', stop_at_end=True) == 0
    await fill(client, stream, range(100, 130))
    assert await pipe(client, stream, target, double_skip_sevens, name='p', stop_at_end=True) \
        == len(expected(130)) - len(expected(100))
    assert await read_all(client, target) == expected(130)

async def test_async_transform_and_sections(client: StreamsClient, stream: str) -> None:
    """A coroutine transformation returning messages with their sections."""
    target = stream + '-out'
    await fill(client, stream, range(10))

    async def to_message(ctx: MessageCtx) -> MessageCtx:
        return MessageCtx({'in': ctx.body}, app_properties={'offset': ctx.stream_offset})

    assert await pipe(client, stream, target, to_message, name='q', stop_at_end=True) == 10
    got: list[tuple[object, object]] = []
    async for chunk in client.subscribe_chunks(target, offset=Offset.FIRST, stop_at_end=True):
        got.extend((m.body, m.app_properties['offset']) for m in chunk)
    assert got == [({'in': i}, i) for i in range(10)]
    assert await client.query_publisher_sequence(target, 'q') == 10

async def test_bad_arguments(client: StreamsClient, stream: str) -> None:
    with pytest.raises(TypeError, match='transform must be callable'):
        await pipe(client, stream, stream + '-out', 'x', name='p')  # type: ignore[arg-type]
    with pytest.raises(ValueError, match='publisher'):
        await pipe(client, stream, stream + '-out', double_skip_sevens, name='')
