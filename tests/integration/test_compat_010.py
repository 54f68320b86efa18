"""
An RbFly 0.10 program, written against 0.10's documented API (its names,
deprecated aliases, decorator and message context helpers), runs
unchanged.
"""

import typing as tp

import rbfly.streams as rbs
from rbfly.streams import error as rbs_error

from .conftest import stored

@rbs.connection
async def publish(client: rbs.StreamsClient, stream: str) -> None:
    await client.create_stream(stream)
    await client.create_stream(stream)  # 0.10: an existing stream is no error
    async with client.publisher(stream) as publisher:
        await publisher.send('hello')
    async with client.publisher(stream, cls=rbs.PublisherBatch) as batch:
        batch.batch(rbs.stream_message_ctx('with-props', app_properties={'k': 'v'}))
        batch.batch({'a': 1})
        await batch.flush()
    async with client.publisher(stream, cls=rbs.PublisherBatchMem) as mem:
        for i in range(5):
            await mem.batch(i, max_len=2)
        await mem.flush()

@rbs.connection
async def consume(client: rbs.StreamsClient, stream: str) -> list[tuple[int, object]]:
    await client.write_offset(stream, 'ref')  # 0.10: no message yet, nothing stored
    result: list[tuple[int, object]] = []
    async for body in client.subscribe(stream, offset=rbs.Offset.FIRST, timeout=5):
        ctx: rbs.MessageCtx = rbs.get_message_ctx()
        result.append((ctx.stream_offset, body))
        if body == 'with-props':
            assert ctx.app_properties == {'k': 'v'}
        if len(result) == 8:
            await client.write_offset(stream, 'ref')
            break
    return result

@rbs.connection
async def resume(client: rbs.StreamsClient, stream: str) -> object:
    async for body in client.subscribe(stream, offset=rbs.Offset.reference('ref'), timeout=5):
        return body
    return None

async def test_program_of_rbfly_010(any_url: str, stream: str) -> None:
    client = rbs.streams_client(any_url)
    try:
        await publish(client, stream)
        got = await consume(client, stream)
        assert got == list(enumerate(['hello', 'with-props', {'a': 1}, 0, 1, 2, 3, 4]))
        await stored(client, stream, 'ref', 7)
        await publish(client, stream)
        assert await resume(client, stream) == 'hello'  # offset 8
    finally:
        await client.delete_stream(stream)
        await client.disconnect()

def test_names_of_rbfly_010() -> None:
    """The names 0.10 exported are there (some as aliases)."""
    for name in ('Subscriber', 'PublisherBatch', 'PublisherBatchMem', 'AMQPHeader',
                 'AMQPScalar', 'AMQPAnnotations', 'Symbol', 'OffsetType', 'BloomFilterExtract'):
        assert getattr(rbs, name) is not None
    assert issubclass(rbs.MessageRejected, rbs_error.PublisherError)
    error = rbs_error.ProtocolError(0x02)
    assert tp.cast(tp.Any, error).code == 0x02
    assert issubclass(rbs_error.SubscriptionError, rbs_error.StreamsError)
