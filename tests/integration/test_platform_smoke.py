"""
The smoke test of a platform's build: what an application does first,
against real brokers, with whatever rbfly is installed. scripts/arm64.sh
runs it in the arm64 root filesystem (qemu-user, the host's network)
against the aarch64 wheel installed in a fresh virtualenv; here it runs
with the rest of the integration tests.

- publish with confirmation, one message at a time and in a batch, and
  read the messages back (RabbitMQ 3.10, ``RBFLY_URL``, port 5552);
- a super stream of three partitions: messages routed by key, each read
  back from the partition its key hashes to (RabbitMQ 4.3, ``RBFLY_URL43``,
  port 5556);
- sub-entry batches compressed with each codec rbfly has (gzip built in;
  snappy, lz4 and zstd from cramjam, lz4 and zstandard), read back; the
  codec's name is in the test's id, for ``-k`` where its package has no
  wheel (lz4 and zstandard on CPython 3.15).
"""

import asyncio
import collections
import typing as tp
import uuid
from collections.abc import AsyncIterator

import pytest

from rbfly.amqp import AMQPProperties, MessageCtx
from rbfly.streams import (
    Offset,
    PublisherBatchFast,
    StreamsClient,
    get_message_ctx,
    streams_client,
)
from rbfly.streams.publishers.superstream import hash_partition
from rbfly.types import AMQPBody

from .conftest import read_back

async def test_publish_confirm_read_back(client310: StreamsClient, stream: str) -> None:
    """Each message confirmed as sent, the batch at its flush; all read back in order."""
    body: AMQPBody = {'order': 1, 'item': 'książka', 'price': 12.5, 'tags': [b'\x00\xff', None]}
    async with client310.publisher(stream) as publisher:
        await publisher.send(body)
        await publisher.send(MessageCtx('second', properties=AMQPProperties(subject='smoke')))
        assert publisher.unconfirmed == 0
    async with client310.publisher(stream, cls=PublisherBatchFast) as batch:
        for i in range(100):
            batch.batch('m{}'.format(i))
        await batch.flush()
        assert batch.unconfirmed == 0

    received: list[tuple[int, object, str | None]] = []
    async with asyncio.timeout(30):
        async for msg in client310.subscribe(stream, offset=Offset.FIRST):
            ctx = get_message_ctx()
            received.append((ctx.stream_offset, msg, ctx.properties.subject))
            if len(received) == 102:
                break
    assert [r[0] for r in received] == list(range(102))
    assert received[0][1:] == (body, None)
    assert received[1][1:] == ('second', 'smoke')
    assert [r[1] for r in received[2:]] == ['m{}'.format(i) for i in range(100)]

@pytest.fixture
async def client43(url43: str) -> AsyncIterator[StreamsClient]:
    """Client of RabbitMQ 4.3 (port 5556)."""
    c = streams_client(url43)
    try:
        yield c
    finally:
        await c.disconnect()

def _key(message: object) -> str:
    return tp.cast(str, message).split(':')[0]

async def test_super_stream(client43: StreamsClient) -> None:
    """Messages routed by key hash to three partitions, each read back from its partition."""
    name = 'rbfly-smoke-{}'.format(uuid.uuid4().hex[:12])
    partitions = await client43.create_super_stream(name, 3)
    try:
        messages = ['k{}:{}'.format(i % 10, i) for i in range(60)]
        async with client43.super_stream_publisher(name, _key) as publisher:
            for m in messages:
                await publisher.send(m)

        expected: dict[str, list[str]] = collections.defaultdict(list)
        for m in messages:
            expected[hash_partition(_key(m), partitions)].append(m)
        assert len(expected) > 1  # the keys spread over the partitions
        for partition in partitions:
            got = await read_back(client43, partition, len(expected[partition]))
            assert got == expected[partition]
    finally:
        await client43.delete_super_stream(name)

@pytest.mark.parametrize('compression', ['gzip', 'snappy', 'lz4', 'zstd'])
async def test_compression(client310: StreamsClient, stream: str, compression: str) -> None:
    """Sub-entry batches of 10, compressed, read back as the 25 messages published."""
    messages = ['{}-{}'.format(compression, i) * 20 for i in range(25)]
    async with client310.publisher(
            stream, cls=PublisherBatchFast, sub_entry_size=10, compression=compression) as pub:
        for m in messages:
            pub.batch(m)
        await pub.flush()
        assert pub.unconfirmed == 0
    assert await read_back(client310, stream, len(messages)) == messages
