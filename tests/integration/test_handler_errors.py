"""
Decoding errors join the error policy of concurrent handlers, against
RabbitMQ 3.10 and 4.x and the fake broker: a message that is not AMQP 1.0
(published as raw bytes) stops the run with ``MessageDecodeError`` by
default, or is skipped, or dead-lettered as its bytes, never given to the
handler nor retried; ``client.metrics()`` counts what the handlers did.
"""

import asyncio
from collections.abc import AsyncIterator

import pytest

from rbfly.amqp import MessageCtx
from rbfly.error import MessageDecodeError
from rbfly.streams import Offset, OnError, PublisherBin, StreamsClient, streams_client
from rbfly.testing import FakeBroker

RAW = b'\xffnot amqp'

@pytest.fixture(params=['3.10', '4.x', 'fake'])
async def client(request: pytest.FixtureRequest, stream: str) -> AsyncIterator[StreamsClient]:
    """A client of each broker, with the test's stream and its dead-letter stream."""
    if request.param == 'fake':
        async with FakeBroker() as broker:
            c = streams_client(broker.url)
            await c.create_stream(stream)
            await c.create_stream(stream + '-dlq')
            yield c
            await c.disconnect()
        return
    c = streams_client(str(request.getfixturevalue('url' if request.param == '3.10' else 'url4')))
    await c.create_stream(stream)
    await c.create_stream(stream + '-dlq')
    try:
        yield c
    finally:
        await c.delete_stream(stream)
        await c.delete_stream(stream + '-dlq')
        await c.disconnect()

async def publish(client: StreamsClient, stream: str) -> None:
    """Messages 0-9, message 4 raw bytes (not AMQP 1.0)."""
    async with client.publisher(stream) as amqp, \
            client.publisher(stream, cls=PublisherBin) as raw:
        for i in range(10):
            if i == 4:
                await raw.send(RAW)
            else:
                await amqp.send(str(i))

async def run(client: StreamsClient, stream: str, policy: OnError, seen: list[int]) -> int:
    async def handler(msg: MessageCtx) -> None:
        await asyncio.sleep(0)
        seen.append(msg.stream_offset)

    async with asyncio.timeout(30):
        return await client.process(
            stream, handler, concurrency=4, on_error=policy, offset=Offset.FIRST,
            name='billing', store_every=1, stop_at_end=True,
        )

async def test_stop_by_default(client: StreamsClient, stream: str) -> None:
    """The default policy: the run raises the error naming the message, committed before it."""
    await publish(client, stream)
    seen: list[int] = []
    with pytest.raises(MessageDecodeError) as info:
        await run(client, stream, OnError(retries=3, backoff=0.01), seen)
    assert (info.value.stream, info.value.stream_offset) == (stream, 4)
    assert 4 not in seen
    assert await client.query_offset(stream, 'billing') == 3
    metrics = client.metrics()
    assert metrics.undecodable == 1 and metrics.handler_retries == 0  # (never retried)

async def test_skip(client: StreamsClient, stream: str) -> None:
    await publish(client, stream)
    seen: list[int] = []
    assert await run(client, stream, OnError(then='skip'), seen) == 9
    assert sorted(seen) == [0, 1, 2, 3, 5, 6, 7, 8, 9]
    assert await client.query_offset(stream, 'billing') == 9
    metrics = client.metrics()
    assert (metrics.handled, metrics.handler_skipped, metrics.undecodable) == (9, 1, 1)

async def test_dead_letter(client: StreamsClient, stream: str) -> None:
    """The message goes to the dead-letter stream as its bytes, with the error."""
    await publish(client, stream)
    seen: list[int] = []
    policy = OnError(then='dead-letter', dead_letter=stream + '-dlq')
    assert await run(client, stream, policy, seen) == 9
    assert 4 not in seen
    letters = [m async for c in client.subscribe_chunks(
        stream + '-dlq', offset=Offset.FIRST, stop_at_end=True) for m in c]
    assert [m.body for m in letters] == [RAW]
    properties = letters[0].app_properties
    assert properties['x-rbfly-source-offset'] == 4
    assert str(properties['x-rbfly-error']).startswith('MessageDecodeError: ')
    assert client.metrics().dead_lettered == 1

async def test_raw_to_the_handler(client: StreamsClient, stream: str) -> None:
    """With ``on_decode_error='raw'`` the handler gets the message's bytes."""
    await publish(client, stream)
    bodies: dict[int, object] = {}

    async def handler(msg: MessageCtx) -> None:
        bodies[msg.stream_offset] = msg.body

    async with asyncio.timeout(30):
        handled = await client.process(
            stream, handler, offset=Offset.FIRST, stop_at_end=True, on_decode_error='raw')
    assert handled == 10 and bodies[4] == RAW and bodies[5] == '5'

async def test_counted_when_raised(client: StreamsClient, stream: str) -> None:
    """A message that is not AMQP 1.0 counts in the metrics when it ends a subscription too."""
    await publish(client, stream)
    with pytest.raises(MessageDecodeError):
        async with asyncio.timeout(30):
            async for _ in client.subscribe(stream, offset=Offset.FIRST):
                pass
    assert client.metrics().undecodable == 1
