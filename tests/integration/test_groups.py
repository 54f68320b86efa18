"""
Consumer group tooling against real brokers: the status of a group on a
stream and on a super stream's partitions, a reset to each kind of target
followed by a subscription with ``Offset.reference(name)``, a running
group refused, and bad input.
"""

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import pytest

from rbfly.streams import (
    FeatureNotSupported,
    Offset,
    StreamsClient,
    get_message_ctx,
    streams_client,
)
from rbfly.streams.error import GroupActive, StreamDoesNotExist
from rbfly.streams.parts.groups import BEFORE_FIRST
from rbfly.streams.types import PartitionReset, PartitionStatus
from rbfly.testing import FakeBroker

from .conftest import _client_with_stream

@pytest.fixture(params=['4.x', '4.3'])
async def stats_client(
        request: pytest.FixtureRequest, stream: str,
) -> AsyncIterator[StreamsClient]:
    """A client of each broker giving stream statistics, with the test's stream."""
    url = str(request.getfixturevalue('url4' if request.param == '4.x' else 'url43'))
    async for c in _client_with_stream(url, stream):
        yield c

@pytest.fixture
async def client43(url43: str, stream: str) -> AsyncIterator[StreamsClient]:
    async for c in _client_with_stream(url43, stream):
        yield c

async def publish(client: StreamsClient, stream: str, count: int) -> None:
    """``count`` messages, one a chunk (each confirmed before the next is sent)."""
    async with client.publisher(stream) as publisher:
        for i in range(count):
            await publisher.send('m{}'.format(i))

async def first_offset(client: StreamsClient, stream: str, name: str) -> int:
    """Offset of the first message a subscription with ``Offset.reference(name)`` receives."""
    async for _ in client.subscribe(stream, offset=Offset.reference(name), timeout=5):
        return get_message_ctx().stream_offset
    raise AssertionError('no message')

async def test_status_stream(stats_client: StreamsClient, stream: str) -> None:
    """Nothing stored, then k stored: the lag counts the offsets after k."""
    client = stats_client
    exact = 'committed_offset' in await client.stream_stats(stream)  # RabbitMQ 4.3
    [empty] = await client.group_status('g', stream=stream)
    assert empty == PartitionStatus(stream, None, None, None, 0, exact, True)
    await publish(client, stream, 10)
    [status] = await client.group_status('g', stream=stream)
    # one message a chunk: the last chunk's first offset is the last offset
    assert status == PartitionStatus(stream, None, 0, 9, 10, exact, False)
    await client.commit_offset(stream, 'g', 3)
    [status] = await client.group_status('g', stream=stream)
    # messages 4-9; 10 is the offset the broker gave to the stored offset
    assert status == PartitionStatus(stream, 3, 0, 10, 6, exact, False)
    await client.commit_offset(stream, 'g', 9)
    [status] = await client.group_status('g', stream=stream)
    assert (status.stored, status.end, status.lag, status.caught_up) == (9, 11, 0, True)

async def test_status_310(client310: StreamsClient, stream: str) -> None:
    """RabbitMQ 3.10 has no stream statistics: the offset stored only."""
    await publish(client310, stream, 3)
    await client310.commit_offset(stream, 'g', 1)
    assert await client310.group_status('g', stream=stream) == [
        PartitionStatus(stream, 1, None, None, None, False),
    ]

@pytest.mark.parametrize('broker', ['4.x', '4.3'])
async def test_status_super_stream(request: pytest.FixtureRequest, broker: str) -> None:
    """A status per partition, in order; one with nothing stored."""
    url = str(request.getfixturevalue('url4' if broker == '4.x' else 'url43'))
    super_stream = 'rbfly-test-groups-{}'.format(uuid.uuid4().hex[:8])
    client = streams_client(url)
    try:
        partitions = await client.create_super_stream(super_stream, 3)
        for n, partition in zip((4, 2, 5), partitions, strict=True):
            await publish(client, partition, n)
        await client.commit_offset(partitions[0], 'g', 1)
        await client.commit_offset(partitions[2], 'g', 4)
        exact = 'committed_offset' in await client.stream_stats(partitions[0])
        assert await client.group_status('g', super_stream=super_stream) == [
            PartitionStatus(partitions[0], 1, 0, 4, 2, exact, False),
            PartitionStatus(partitions[1], None, 0, 1, 2, exact, False),
            # everything processed: the offset stored at 5 is no lag
            PartitionStatus(partitions[2], 4, 0, 5, 0, exact, True),
        ]
    finally:
        await client.delete_super_stream(super_stream)
        await client.disconnect()

# -- resets --

async def test_reset_targets(client43: StreamsClient, stream: str) -> None:
    """
    RabbitMQ 4.3: a reset to each kind of target, then a subscription with
    ``Offset.reference`` starts there.
    """
    client = client43
    await publish(client, stream, 5)  # offsets 0-4
    await asyncio.sleep(1)  # wall time: the chunks before are a second older than t
    t = time.time()
    await asyncio.sleep(0.5)  # wall time: the chunks after are stamped after t
    await publish(client, stream, 5)  # offsets 5-9

    # nothing stored before: the group would start at the first message
    assert await client.reset_group('g', Offset.offset(7), stream=stream, watch=0.2) == [
        PartitionReset(stream, None, 6, 7),
    ]
    assert await client.query_offset(stream, 'g') == 6
    assert await first_offset(client, stream, 'g') == 7

    # the first message of a stream starting at 0: "-1" is stored
    assert await client.reset_group('g', Offset.FIRST, stream=stream, force=True) == [
        PartitionReset(stream, 6, BEFORE_FIRST, 0),
    ]
    assert await first_offset(client, stream, 'g') == 0

    assert await client.reset_group('g', Offset.timestamp(t), stream=stream, force=True) == [
        PartitionReset(stream, BEFORE_FIRST, 4, 5),
    ]
    assert await first_offset(client, stream, 'g') == 5

    await client.commit_offset(stream, 'other', 2)
    [reset] = await client.reset_group(
        'g', Offset.reference('other'), stream=stream, force=True)
    assert (reset.stored, reset.resume) == (2, 3)
    assert await first_offset(client, stream, 'g') == 3

    # the end: past every offset now (the stored offsets' too)
    for to in (Offset.LAST, Offset.NEXT):
        [reset] = await client.reset_group('g', to, stream=stream, force=True)
        [status] = await client.group_status('g', stream=stream)
        assert reset.resume > 9 and status.stored == reset.stored
        task = asyncio.create_task(first_offset(client, stream, 'g'))
        await asyncio.sleep(0.5)  # wall time: nothing old arrives meanwhile
        assert not task.done()  # nothing of the old messages
        async with client.publisher(stream) as publisher:
            await publisher.send('new')
        assert await task >= reset.resume

async def test_reset_empty_stream(stats_client: StreamsClient, stream: str) -> None:
    """
    A reset to the first message or the end of an empty stream: the
    group reads every message published after.
    """
    client = stats_client
    for to in (Offset.FIRST, Offset.NEXT):
        [reset] = await client.reset_group('g', to, stream=stream, force=True)
        if to == Offset.FIRST:
            assert reset == PartitionReset(stream, reset.before, BEFORE_FIRST, 0)
    [status] = await client.group_status('g', stream=stream)
    await publish(client, stream, 2)
    # the stored offsets took the stream's first offsets; the messages follow
    assert await first_offset(client, stream, 'g') == status.end + 1  # type: ignore[operator]

async def test_reset_end_40(client4: StreamsClient, stream: str) -> None:
    """
    RabbitMQ 3.11-4.2 cannot resolve ``next``: the end is the last
    committed chunk, which comes again; a time is refused.
    """
    await publish(client4, stream, 10)
    assert await client4.reset_group('g', Offset.NEXT, stream=stream, force=True) == [
        PartitionReset(stream, None, 8, 9),
    ]
    assert await first_offset(client4, stream, 'g') == 9
    with pytest.raises(FeatureNotSupported, match='resetting a consumer group to a time'):
        await client4.reset_group('g', Offset.timestamp(time.time()), stream=stream, force=True)
    assert await client4.query_offset(stream, 'g') == 8

async def test_reset_310(client310: StreamsClient, stream: str) -> None:
    """RabbitMQ 3.10: to the first message and to an offset; the end is refused."""
    await publish(client310, stream, 5)
    await client310.reset_group('g', Offset.FIRST, stream=stream, force=True)
    assert await client310.query_offset(stream, 'g') == BEFORE_FIRST
    assert await first_offset(client310, stream, 'g') == 0
    await client310.reset_group('g', Offset.offset(3), stream=stream, force=True)
    assert await first_offset(client310, stream, 'g') == 3
    with pytest.raises(FeatureNotSupported, match='resetting a consumer group to the end'):
        await client310.reset_group('g', Offset.NEXT, stream=stream, force=True)

async def test_reset_super_stream(url43: str) -> None:
    """Each partition is reset; a dry run stores nothing."""
    super_stream = 'rbfly-test-groups-{}'.format(uuid.uuid4().hex[:8])
    client = streams_client(url43)
    try:
        partitions = await client.create_super_stream(super_stream, 2)
        for partition in partitions:
            await publish(client, partition, 3)
            await client.commit_offset(partition, 'g', 2)
        plan = await client.reset_group(
            'g', Offset.offset(1), super_stream=super_stream, dry_run=True, watch=0.2)
        assert plan == [PartitionReset(p, 2, 0, 1) for p in partitions]
        assert [await client.query_offset(p, 'g') for p in partitions] == [2, 2]
        await client.reset_group('g', Offset.offset(1), super_stream=super_stream, force=True)
        assert [await first_offset(client, p, 'g') for p in partitions] == [1, 1]
    finally:
        await client.delete_super_stream(super_stream)
        await client.disconnect()

async def test_reset_active_group(client43: StreamsClient, stream: str) -> None:
    """
    A consumer of the group storing its offsets as it goes: the reset
    refuses, and stores nothing.
    """
    client = client43
    consumed = asyncio.Event()

    async def consume() -> None:
        async for _ in client.subscribe(
                stream, offset=Offset.reference('g'), name='g', store_every=1):
            consumed.set()

    async def produce() -> None:
        async with client.publisher(stream) as publisher:
            while True:
                await publisher.send('m')
                await asyncio.sleep(0.05)

    tasks = [asyncio.create_task(consume()), asyncio.create_task(produce())]
    try:
        await asyncio.wait_for(consumed.wait(), 10)
        with pytest.raises(GroupActive, match="group 'g' is active") as info:
            await client.reset_group('g', Offset.FIRST, stream=stream, watch=1)
        assert info.value.streams == [stream]
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    assert await client.query_offset(stream, 'g') != BEFORE_FIRST

async def test_bad_input(stats_client: StreamsClient, stream: str) -> None:
    client = stats_client
    with pytest.raises(ValueError, match='exactly one of stream and super_stream, got neither'):
        await client.group_status('g')
    with pytest.raises(ValueError, match='exactly one of stream and super_stream, got both'):
        await client.reset_group('g', Offset.FIRST, stream=stream, super_stream='x')
    with pytest.raises(StreamDoesNotExist, match="stream 'rbfly-no-such-stream'"):
        await client.group_status('g', stream='rbfly-no-such-stream')
    with pytest.raises(StreamDoesNotExist, match="stream 'rbfly-no-such-stream'"):
        await client.reset_group('g', Offset.FIRST, stream='rbfly-no-such-stream', force=True)
    with pytest.raises(StreamDoesNotExist, match="super stream 'rbfly-no-such-super'"):
        await client.group_status('g', super_stream='rbfly-no-such-super')
    with pytest.raises(TypeError, match='to must be an Offset'):
        await client.reset_group('g', 'first', stream=stream)  # type: ignore[arg-type]

# -- a group that processed everything --

async def consume_all(client: StreamsClient, stream: str, count: int) -> int:
    """
    Read ``count`` messages as group ``g`` with automatic tracking (which
    stores offsets into the stream as it goes), then wait for the chunk
    after the last one taken (a chunk of stored offsets), while subscribed;
    the lag the subscription's metrics read then.
    """
    seen = 0
    messages = client.subscribe(stream, offset=Offset.FIRST, name='g', store_every=7,
                                store_interval=0.05, timeout=10)
    async for _ in messages:
        seen += 1
        if seen == count:
            await messages.commit()  # stored: the stream's last offset is the store's
            break
    await messages.aclose()
    assert seen == count
    return seen

async def test_caught_up_group_has_no_lag(stats_client: StreamsClient, stream: str) -> None:
    """
    A group that processed every message has a lag of 0 and is caught
    up, though the offsets it stored come after its last message.
    """
    client = stats_client
    async with client.publisher(stream) as publisher:
        await publisher.send_many([str(i) for i in range(25)])
        await publisher.send('last')
    await consume_all(client, stream, 26)
    [status] = await client.group_status('g', stream=stream)
    assert status.end is not None and status.end >= 26  # the stored offsets' records
    assert (status.stored, status.lag, status.caught_up) == (25, 0, True), status
    async with client.publisher(stream) as publisher:
        await publisher.send('one more')
    [status] = await client.group_status('g', stream=stream)
    assert (status.lag, status.caught_up) == (status.end - 25, False), status  # type: ignore[operator]

async def test_caught_up_group_fake_broker() -> None:
    """The fake broker says the same of a caught-up group."""
    async with FakeBroker() as broker:
        client = streams_client(broker.url)
        try:
            await client.create_stream('orders')
            async with client.publisher('orders') as publisher:
                await publisher.send_many([str(i) for i in range(10)])
            await consume_all(client, 'orders', 10)
            [status] = await client.group_status('g', stream='orders')
            assert (status.stored, status.lag, status.caught_up) == (9, 0, True), status
        finally:
            await client.disconnect()
