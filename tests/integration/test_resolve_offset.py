"""
Resolving an offset specification to an offset (ResolveOffsetSpec,
RabbitMQ 4.3) on the broker of Debian unstable, checked against where a
subscription with the same specification starts; older brokers get
FeatureNotSupported before anything is sent.
"""

import asyncio
import time
import typing as tp

import pytest

from rbfly.streams import (
    FeatureNotSupported,
    MessageCtx,
    MessageFilter,
    Offset,
    PublisherBatchFast,
    StreamsClient,
    get_message_ctx,
    streams_client,
)
from rbfly.streams.error import StreamDoesNotExist

from .conftest import Opened

def kind(message: MessageCtx) -> str:
    """Filter value of a message: the first letter of its body."""
    return tp.cast(str, message.body)[0]

async def first_offset(
        client: StreamsClient, stream: str, offset: Offset, opened: Opened | None = None,
) -> int:
    """Offset of the first message a subscription with ``offset`` receives."""
    async with asyncio.timeout(30):
        async for _ in client.subscribe(stream, offset=offset, on_state=opened):
            return get_message_ctx().stream_offset
    raise AssertionError('the subscription ended')

async def chunk_starts(client: StreamsClient, stream: str, count: int) -> list[int]:
    """
    Offsets of the first messages of the chunks holding the first ``count``
    messages. The broker decides where a chunk ends: the messages of one
    Publish frame usually share a chunk, but its writer may cut them in two.
    """
    starts: list[int] = []
    async with asyncio.timeout(30):
        async for chunk in client.subscribe_chunks(stream, offset=Offset.FIRST):
            starts.append(chunk[0].stream_offset)
            if chunk[-1].stream_offset + 1 >= count:
                return starts
    raise AssertionError('the subscription ended')

async def test_resolve_offset(url43: str, stream: str) -> None:
    """
    Three chunks of 10 messages, a second apart: each specification
    resolves to where a subscription with it starts.
    """
    async with streams_client(url43) as client:
        await client.create_stream(stream)
        marks = []
        async with client.publisher(stream, cls=PublisherBatchFast) as publisher:
            for b in range(3):
                if b:
                    # wall time: the batches before are stamped before the mark
                    await asyncio.sleep(0.5)
                    marks.append(time.time())
                    await asyncio.sleep(0.5)  # wall time: the batches after, after it
                for i in range(10):
                    publisher.batch('{}-{}'.format(b, i))
                await publisher.flush()
        assert await client.resolve_offset(stream) == 30  # NEXT by default
        starts = await chunk_starts(client, stream, 30)
        assert starts[0] == 0 and 20 in starts  # a batch starts a chunk
        await client.write_offset(stream, 'resolve', 12)  # a tracking record at 30
        specs = {
            'first': Offset.FIRST, 'last': Offset.LAST, 'offset': Offset.offset(15),
            'timestamp': Offset.timestamp(marks[1]), 'reference': Offset.reference('resolve'),
            'gone': Offset.offset(1000),
        }
        resolved = {name: await client.resolve_offset(stream, s) for name, s in specs.items()}
        assert resolved == {
            'first': 0, 'last': starts[-1], 'offset': 15, 'timestamp': 20, 'reference': 13,
            'gone': 1000,
        }
        for name in ('first', 'last', 'offset', 'timestamp', 'reference'):
            assert await first_offset(client, stream, specs[name]) == resolved[name], name
        # the end of the stream: the offset the next message gets
        end = await client.resolve_offset(stream, Offset.NEXT)
        assert end == 31
        opened = Opened()
        sub = asyncio.create_task(first_offset(client, stream, Offset.NEXT, opened))
        await opened.wait()  # subscribed (at the end as of then)
        async with client.publisher(stream) as publisher:
            await publisher.send('3-0')
        assert await sub == end
        await client.delete_stream(stream)

async def test_resolve_offset_filter(url43: str, stream: str) -> None:
    """
    A filter goes to the broker with the specification: the result is
    where a subscription with the filter starts reading, at or before its
    first matching message (RabbitMQ 4.3.6 resolves as without a filter;
    the chunks that do not match are skipped while reading).
    """
    async with streams_client(url43) as client:
        await client.create_stream(stream)
        async with client.publisher(
                stream, cls=PublisherBatchFast, filter_extract=kind) as publisher:
            for value in 'aab':
                for i in range(10):
                    publisher.batch('{}{}'.format(value, i))
                await publisher.flush()
        only_b = MessageFilter(kind, {'b'})
        resolved = await client.resolve_offset(stream, Offset.FIRST, filter=only_b)
        async with asyncio.timeout(30):
            async for _ in client.subscribe(stream, offset=Offset.FIRST, filter=only_b):
                first_b = get_message_ctx().stream_offset
                break
        assert first_b == 20
        assert 0 <= resolved <= first_b
        starts = await chunk_starts(client, stream, 30)
        assert await client.resolve_offset(stream, Offset.LAST, filter=only_b) == starts[-1]
        await client.delete_stream(stream)

async def test_resolve_offset_errors(url43: str) -> None:
    """No such stream: StreamDoesNotExist; a bad offset: TypeError."""
    async with streams_client(url43) as client:
        with pytest.raises(StreamDoesNotExist):
            await client.resolve_offset('rbfly-no-such-stream', Offset.FIRST)
        with pytest.raises(TypeError, match='offset must be an Offset'):
            await client.resolve_offset('s', 0)  # type: ignore[arg-type]

async def test_resolve_offset_older_brokers(any_url: str, stream: str) -> None:
    """RabbitMQ 3.10 and 4.0: FeatureNotSupported, naming the version needed."""
    async with streams_client(any_url) as client:
        with pytest.raises(FeatureNotSupported, match=r'needs RabbitMQ 4\.3 or later'):
            await client.resolve_offset(stream, Offset.FIRST)

async def test_stream_stats_43(url43: str, stream: str) -> None:
    """
    RabbitMQ 4.3's stream statistics: the last chunk id and the committed
    offset (of the last message) next to the first and committed chunk ids.
    """
    async with streams_client(url43) as client:
        await client.create_stream(stream)
        async with client.publisher(stream, cls=PublisherBatchFast) as publisher:
            for b in range(2):
                for i in range(10):
                    publisher.batch('{}-{}'.format(b, i))
                await publisher.flush()
        stats = await client.stream_stats(stream)
        last = (await chunk_starts(client, stream, 20))[-1]
        assert 10 <= last < 20
        assert stats == {
            'first_chunk_id': 0, 'committed_chunk_id': last, 'last_chunk_id': last,
            'committed_offset': 19,
        }
        await client.delete_stream(stream)
