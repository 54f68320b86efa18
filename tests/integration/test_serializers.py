"""
Serializers on the async API, against both brokers: every publisher class
sends objects with their content type, a subscription reads them back,
checks the content type of each message (typed error naming the stream
and offset, or the raw body), and a super stream publisher routes the
object before it is serialized.
"""

import asyncio
import typing as tp
import uuid

import pytest

from rbfly.amqp import MessageCtx
from rbfly.streams import (
    Offset,
    Publisher,
    PublisherBatchFast,
    PublisherBatchLimit,
    PublisherBin,
    PublisherPipelined,
    StreamsClient,
    get_message_ctx,
    streams_client,
)
from rbfly.streams.serializers import (
    Codec,
    ContentTypeMismatch,
    JSONSerializer,
    MsgpackSerializer,
    SerializerError,
)

JSON = JSONSerializer()

async def read(client: StreamsClient, stream: str, count: int, **options: tp.Any,
               ) -> list[tuple[int, object]]:
    got: list[tuple[int, object]] = []
    async with asyncio.timeout(10):
        async for obj in client.subscribe(stream, offset=Offset.FIRST, **options):
            got.append((get_message_ctx().stream_offset, obj))
            if len(got) == count:
                break
    return got

async def test_publishers(client: StreamsClient, stream: str) -> None:
    """Each publisher class sends objects; they come back as objects, with the content type."""
    async with client.publisher(stream, serializer=JSON) as pub:
        await pub.send({'n': 0})
    async with client.publisher(stream, cls=PublisherPipelined, serializer=JSON) as pipe:
        await pipe.send({'n': 1})
        await pipe.flush()
    async with client.publisher(stream, cls=PublisherBatchFast, serializer=JSON) as fast:
        fast.batch({'n': 2})
        await fast.flush()
    async with client.publisher(stream, cls=PublisherBatchLimit, serializer=JSON) as limit:
        await limit.batch({'n': 3}, max_len=10)
        await limit.flush()
    async with client.publisher(stream, serializer=JSON) as pub:
        await pub.send(MessageCtx(['x'], app_properties={'k': 'v'}))
    got = await read(client, stream, 5, serializer=JSON)
    assert got == [(i, {'n': i}) for i in range(4)] + [(4, ['x'])]
    msg = get_message_ctx()
    assert msg.properties.content_type is not None
    assert msg.properties.content_type.name == 'application/json'
    assert msg.body == b'["x"]'
    assert msg.app_properties == {'k': 'v'}
    # send_many of each class; each publisher an instance of its class,
    # serializing by its class (made once), nothing replaced on it
    classes: list[type[Publisher | PublisherPipelined | PublisherBatchFast]] = [
        Publisher, PublisherPipelined, PublisherBatchFast]
    for n, cls in enumerate(classes, 5):
        async with client.publisher(stream, cls=cls, serializer=JSON) as many:
            assert isinstance(many, cls) and type(many) is not cls
            assert type(many).__name__ == cls.__name__
            assert not {'send', 'send_many', 'batch'} & set(vars(many))
            await many.send_many([{'n': n}])
    async with client.publisher(stream) as plain:
        assert type(plain) is Publisher
    got = await read(client, stream, 8, serializer=JSON)
    assert got[5:] == [(i, {'n': i}) for i in range(5, 8)]

async def test_mismatch(client: StreamsClient, stream: str) -> None:
    """
    A message of another content type raises naming its stream and
    offset; the subscription goes on with the next one. ``'raw'`` hands
    its body over.
    """
    async with client.publisher(stream) as plain:
        await plain.send(b'plain')
    async with client.publisher(stream, serializer=MsgpackSerializer()) as packed:
        await packed.send({'m': 1})
    async with client.publisher(stream, serializer=JSON) as pub:
        await pub.send({'j': 2})
    subscription = client.subscribe(stream, offset=Offset.FIRST, serializer=JSON)
    try:
        async with asyncio.timeout(10):
            with pytest.raises(ContentTypeMismatch) as info:
                await anext(subscription)
            assert (info.value.stream, info.value.offset, info.value.found) == (stream, 0, None)
            with pytest.raises(ContentTypeMismatch, match='offset 1 of stream') as info:
                await anext(subscription)
            assert info.value.found == 'application/msgpack'
            assert await anext(subscription) == {'j': 2}
    finally:
        await subscription.aclose()
    got = await read(client, stream, 3, serializer=JSON, on_mismatch='raw')
    assert got == [(0, b'plain'), (1, b'\x81\xa1m\x01'), (2, {'j': 2})]

async def test_own_content_type(client: StreamsClient, stream: str) -> None:
    """Any object with dumps and loads, with a content type given to its codec."""
    class Upper:
        def dumps(self, obj: str) -> bytes:
            return obj.upper().encode()

        def loads(self, data: bytes) -> str:
            return data.decode().lower()

    codec = Codec(Upper(), content_type='text/x-upper')
    async with client.publisher(stream, serializer=codec) as pub:
        await pub.send('hello')
    assert await read(client, stream, 1, amqp=True) == [(0, b'HELLO')]
    assert await read(client, stream, 1, serializer=codec) == [(0, 'hello')]
    with pytest.raises(SerializerError, match='cannot serialize'):
        async with client.publisher(stream, serializer=codec) as pub:
            await pub.send(1)

async def test_binary_publisher_refused(client: StreamsClient, stream: str) -> None:
    """A raw binary publisher has no AMQP properties to set: refused."""
    with pytest.raises(ValueError, match='PublisherBin sends raw bytes'):
        client.publisher(stream, cls=PublisherBin, serializer=JSON)

async def test_super_stream(url4: str) -> None:
    """The routing key function gets the object; each partition its messages, serialized."""
    name = 'rbfly-super-{}'.format(uuid.uuid4().hex[:8])
    client = streams_client(url4)
    try:
        partitions = await client.create_super_stream(name, binding_keys=['eu', 'us'])

        def region(obj: dict[str, str]) -> str:
            return obj['region']

        async with client.super_stream_publisher(
                name, region, routing='key', serializer=JSON, cls=Publisher) as pub:
            for r in ('eu', 'us', 'eu'):
                await pub.send({'region': r})
        assert await read(client, partitions[0], 2, serializer=JSON) == [
            (0, {'region': 'eu'}), (1, {'region': 'eu'}),
        ]
        got = []
        async with asyncio.timeout(10):
            async for obj in client.subscribe_super_stream(
                    name, offset=Offset.FIRST, serializer=JSON):
                got.append((get_message_ctx().stream, obj))
                if len(got) == 3:
                    break
        assert sorted(got, key=str) == sorted([
            (partitions[0], {'region': 'eu'}), (partitions[0], {'region': 'eu'}),
            (partitions[1], {'region': 'us'}),
        ], key=str)
    finally:
        await client.delete_super_stream(name)
        await client.disconnect()

async def test_super_stream_message_to_partitions(url4: str) -> None:
    """
    A MessageCtx a routing strategy sends to two partitions: each gets it
    serialized once, with its sections; the application's message is left
    as given.
    """
    name = 'rbfly-super-{}'.format(uuid.uuid4().hex[:8])
    client = streams_client(url4)
    try:
        partitions = await client.create_super_stream(name, 2)
        given = MessageCtx({'n': 1}, app_properties={'k': 'v'})
        async with client.super_stream_publisher(
                name, lambda _: '', routing=lambda _, ps: ps, serializer=JSON,
                cls=Publisher) as pub:
            await pub.send(given)
        assert given.body == {'n': 1}
        for partition in partitions:
            assert await read(client, partition, 1, serializer=JSON) == [(0, {'n': 1})]
            assert get_message_ctx().app_properties == {'k': 'v'}
    finally:
        await client.delete_super_stream(name)
        await client.disconnect()
