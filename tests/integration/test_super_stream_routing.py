"""
Super stream routing beyond hash and key (RabbitMQ 4.x): a routing
strategy of the application's, a key bound to several partitions, and a
deduplicating super stream publisher that resumes from the lowest of its
partitions' stored publishing ids.
"""

import typing as tp
from collections.abc import Sequence

import pytest

from rbfly.amqp import MessageCtx
from rbfly.streams import (
    NoRoute,
    Offset,
    Publisher,
    PublisherBatchFast,
    PublisherPipelined,
    StreamsClient,
)

@pytest.fixture
def client(super_client4: StreamsClient) -> StreamsClient:
    """The module's client: of RabbitMQ 4.x, deleting the test's super stream after."""
    return super_client4

def _key(message: object) -> str:
    return tp.cast(str, message).split(':')[0]

async def read(client: StreamsClient, stream: str, count: int) -> list[object]:
    """The first ``count`` messages of a stream (and that no more are there)."""
    got: list[object] = []
    if count:
        async for body in client.subscribe(stream, offset=Offset.FIRST, timeout=10):
            got.append(body)
            if len(got) == count:
                break
    stats = await client.stream_stats(stream)
    # the last chunk's first offset: no message after the expected ones
    assert stats.get('last_chunk_id', -1) < max(count, 1)
    return got

@pytest.mark.parametrize('cls', [Publisher, PublisherPipelined, PublisherBatchFast])
async def test_routing_strategy(
        client: StreamsClient, super_stream: str, cls: type[tp.Any],
) -> None:
    """A strategy's partitions get the message, any number of them, in order."""
    names = await client.create_super_stream(super_stream, 3)
    seen: list[Sequence[str]] = []

    def route(message: object, partitions: Sequence[str]) -> list[str]:
        seen.append(partitions)
        kind = _key(message)
        if kind == 'all':
            return list(partitions)
        return [partitions[int(kind)]]

    messages = ['0:a', 'all:b', '2:c', '0:d']
    async with client.super_stream_publisher(
            super_stream, _key, routing=route, cls=cls) as publisher:
        assert await publisher.partitions_of('all:x') == names
        assert await publisher.partition('2:x') == names[2]
        for m in messages:
            if cls is PublisherBatchFast:
                publisher.batch(m)
            else:
                await publisher.send(m)
        if cls is not Publisher:
            await publisher.flush()
    assert all(list(p) == names for p in seen)
    assert await read(client, names[0], 3) == ['0:a', 'all:b', '0:d']
    assert await read(client, names[1], 1) == ['all:b']
    assert await read(client, names[2], 2) == ['all:b', '2:c']

async def test_routing_strategy_errors(client: StreamsClient, super_stream: str) -> None:
    """A strategy choosing nothing, or no partition of the super stream, raises NoRoute."""
    await client.create_super_stream(super_stream, 2)

    def route(message: object, partitions: Sequence[str]) -> tp.Any:
        return {'none': [], 'other': ['elsewhere'], 'str': partitions[0]}[_key(message)]

    async with client.super_stream_publisher(super_stream, _key, routing=route) as publisher:
        with pytest.raises(NoRoute, match='no partition'):
            await publisher.send('none:1')
        with pytest.raises(NoRoute, match="'elsewhere'"):
            await publisher.send('other:1')
        with pytest.raises(TypeError, match='sequence of partitions'):
            await publisher.send('str:1')
    with pytest.raises(ValueError, match='routing strategy'):
        async with client.super_stream_publisher(super_stream, _key, routing='round'):  # type: ignore[arg-type]
            pass

@pytest.mark.parametrize('cls', [Publisher, PublisherBatchFast])
async def test_key_bound_to_several_partitions(
        client: StreamsClient, super_stream: str, cls: type[tp.Any],
) -> None:
    """With key routing, a key bound to two partitions sends its messages to both."""
    names = await client.create_super_stream(super_stream, 3, binding_keys=['x', 'x', 'y'])
    assert names == ['{}-{}'.format(super_stream, i) for i in range(3)]
    assert await client.route(super_stream, 'x') == names[:2]
    async with client.super_stream_publisher(
            super_stream, _key, routing='key', cls=cls) as publisher:
        assert await publisher.partitions_of('x:1') == names[:2]
        for m in ['x:1', 'y:2', 'x:3']:
            if cls is PublisherBatchFast:
                publisher.batch(m)
            else:
                await publisher.send(m)
        if cls is PublisherBatchFast:
            await publisher.flush()
    assert await read(client, names[0], 2) == ['x:1', 'x:3']
    assert await read(client, names[1], 2) == ['x:1', 'x:3']
    assert await read(client, names[2], 1) == ['y:2']

async def test_dedup_resumes_from_lowest(client: StreamsClient, super_stream: str) -> None:
    """
    An application numbering its messages resumes a named super stream
    publisher from the lowest of the partitions' stored ids: sending
    everything after it again stores nothing twice.
    """
    names = await client.create_super_stream(super_stream, 3)
    source = ['{}:{}'.format(i % 3, i) for i in range(1, 31)]  # id i: message i

    def route(message: object, partitions: Sequence[str]) -> list[str]:
        return [partitions[int(_key(tp.cast(MessageCtx, message).body))]]

    async def publish(upto: int, start: int = 1) -> int:
        async with client.super_stream_publisher(
                super_stream, _key, routing=route, name='app', cls=PublisherPipelined,
        ) as publisher:
            for i in range(start, upto + 1):
                await publisher.send(MessageCtx(source[i - 1], stream_publish_id=i))
            await publisher.flush()
            return await publisher.last_publishing_id()

    # the first run stops after message 20: partition 0 stored up to 18,
    # partition 1 up to 19, partition 2 up to 20
    assert await publish(20) == 18
    # a restart resumes after the lowest; 19 and 20 are sent again, dropped
    assert await publish(30, start=18 + 1) == 28
    for p, name in enumerate(names):
        expected = [m for m in source if _key(m) == str(p)]
        assert await read(client, name, len(expected)) == expected

    async with client.super_stream_publisher(super_stream, _key, dedup=False) as anonymous:
        with pytest.raises(ValueError, match='anonymous'):
            await anonymous.last_publishing_id()
