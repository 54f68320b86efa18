"""
Sub-entry batches on both brokers: many messages in one entry under one
publishing id, plain or compressed (gzip, zstd, lz4, snappy), read back message by message at
consecutive offsets; deduplication covers a batch as a whole.
"""

import pytest

from rbfly.error import AMQPEncodeError
from rbfly.streams import (
    FeatureNotSupported,
    Offset,
    Publisher,
    PublisherBatchFast,
    PublisherBatchLimit,
    PublisherPipelined,
    StreamsClient,
    SubEntryBatch,
    get_message_ctx,
)

async def read(client: StreamsClient, stream: str, count: int) -> list[tuple[int, object]]:
    result: list[tuple[int, object]] = []
    async for body in client.subscribe(stream, offset=Offset.FIRST, timeout=10):
        result.append((get_message_ctx().stream_offset, body))
        if len(result) == count:
            break
    return result

@pytest.mark.parametrize('compression', ['none', 'gzip', 'zstd', 'lz4', 'snappy'])
async def test_batch_publisher(client: StreamsClient, stream: str, compression: str) -> None:
    n = 10_000
    async with client.publisher(
            stream, cls=PublisherBatchFast, sub_entry_size=100, name='sub',
            compression=compression) as publisher:
        for i in range(n):
            publisher.batch('m{}'.format(i))
            if i % 1000 == 999:
                await publisher.flush()
        assert publisher.message_id == n // 100  # one publishing id per sub-entry
    assert await read(client, stream, n) == [(i, 'm{}'.format(i)) for i in range(n)]

async def test_batch_limit_and_dedup(client: StreamsClient, stream: str) -> None:
    """A named publisher continues after the last sub-entry's id."""
    async with client.publisher(
            stream, cls=PublisherBatchLimit, sub_entry_size=10, name='dedup') as publisher:
        for i in range(95):
            await publisher.batch(i, max_len=50)
        await publisher.flush()
        assert publisher.message_id == 10  # 5 + 5 sub-entries of <= 10
    async with client.publisher(stream, cls=PublisherBatchFast, name='dedup') as publisher:
        assert publisher.message_id == 10
    assert await read(client, stream, 95) == [(i, i) for i in range(95)]

async def test_any_publisher_sends_sub_entry_batches(client: StreamsClient, stream: str) -> None:
    async with client.publisher(stream) as single:
        await single.send(SubEntryBatch(['a', 'b', 'c'], 'gzip'))
        await single.send('d')
    async with client.publisher(stream, cls=PublisherPipelined) as pipelined:
        pid = await pipelined.send(SubEntryBatch(['e', 'f']))
        await pipelined.confirmed(pid)
    assert await read(client, stream, 6) == list(enumerate('abcdef'))

async def test_bad_options(client: StreamsClient, stream: str) -> None:
    with pytest.raises(ValueError, match='batch publishers'):
        client.publisher(stream, cls=Publisher, sub_entry_size=10)
    with pytest.raises(ValueError, match=r'1\.\.65535'):
        client.publisher(stream, cls=PublisherBatchFast, sub_entry_size=0)
    with pytest.raises(ValueError, match='sub_entry_size'):
        client.publisher(stream, cls=PublisherBatchFast, compression='gzip')
    with pytest.raises(FeatureNotSupported, match='no codec'):
        client.publisher(stream, cls=PublisherBatchFast, sub_entry_size=5, compression=5)
    with pytest.raises(ValueError, match='filter'):
        client.publisher(stream, cls=PublisherBatchFast, sub_entry_size=5,
                         filter_extract=lambda m: 'x')
    with pytest.raises(ValueError, match='window'):
        client.publisher(stream, cls=Publisher, window=5)
    async with client.publisher(stream) as publisher:
        with pytest.raises(AMQPEncodeError):
            await publisher.send(SubEntryBatch([object()]))
        await publisher.send('still usable')
