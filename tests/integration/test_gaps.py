"""
Gaps and the start, against RabbitMQ 4.x (3.11+ for the stream's first
offset) and the fake broker: ``Offset.reference(name, default=...)`` for a
name with nothing stored; a subscription to start at an offset retention
removed warns and counts the offsets lost (the default), raises
``OffsetOutOfRange``, or calls the application back.
"""

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator

import pytest

from rbfly.streams import Offset, StreamsClient, get_message_ctx, streams_client
from rbfly.streams.error import OffsetOutOfRange
from rbfly.testing import FakeBroker

from .conftest import Opened

async def publish(client: StreamsClient, stream: str, start: int, count: int) -> None:
    async with client.publisher(stream) as publisher:
        await publisher.send_many(['m{}'.format(i) for i in range(start, start + count)])

async def first_read(client: StreamsClient, stream: str, offset: Offset, **kw: object) -> int:
    """The offset of the first message a subscription at ``offset`` gets."""
    async for _ in client.subscribe(stream, offset=offset, timeout=10, **kw):  # type: ignore[call-overload]
        return int(get_message_ctx().stream_offset)
    raise AssertionError('no message')

async def test_reference_default_next(client4: StreamsClient, stream: str) -> None:
    """Nothing stored under the name: its default, here only what comes after."""
    client = client4
    await publish(client, stream, 0, 5)
    assert await first_read(client, stream, Offset.reference('nobody')) == 0  # no default
    opened = Opened()
    task = asyncio.ensure_future(first_read(
        client, stream, Offset.reference('nobody', default=Offset.NEXT), on_state=opened))
    await opened.wait()  # the broker resolved NEXT: what comes now is read
    await publish(client, stream, 5, 1)
    assert await task == 5
    await client.commit_offset(stream, 'somebody', 2)  # stored: the default does not apply
    assert await first_read(
        client, stream, Offset.reference('somebody', default=Offset.NEXT)) == 3

@pytest.fixture
async def truncated(url4: str) -> AsyncIterator[tuple[StreamsClient, str, int]]:
    """A stream whose retention removed its first segments; its first offset now."""
    client = streams_client(url4)
    stream = 'rbfly-gaps-{}'.format(uuid.uuid4().hex[:8])
    try:
        await client.create_stream(stream, max_length_bytes=20_000, max_segment_size_bytes=2_000)
        for i in range(20):  # segments roll; retention removes the oldest
            await publish(client, stream, i * 50, 50)
        # the broker applies retention after a segment rolled, in a process
        # of its own: the first offset, once it stopped moving
        seen: list[int] = []
        async with asyncio.timeout(30):
            while len(seen) < 5 or len(set(seen[-5:])) > 1:
                seen.append((await client.stream_stats(stream))['first_chunk_id'])
                await asyncio.sleep(0.2)  # wall time: retention runs when it runs
        first = seen[-1]
        assert first > 0, 'retention removed nothing'
        yield client, stream, first
    finally:
        await client.delete_stream(stream)
        await client.disconnect()

async def test_gap_warns_and_counts(
        truncated: tuple[StreamsClient, str, int], caplog: pytest.LogCaptureFixture,
) -> None:
    """The default: a warning naming the gap, counted, and reading from the first."""
    client, stream, first = truncated
    with caplog.at_level(logging.WARNING, logger='rbfly.streams.client'):
        read = await first_read(client, stream, Offset.offset(4))
    [record] = [r for r in caplog.records if 'removed by retention' in r.getMessage()]
    said = int(record.getMessage().split('starts at offset ')[1].split()[0])
    # (the broker's statistics may lag behind its retention: it may start
    # later than they say)
    assert 4 < first <= said <= read
    # (and the offsets up to the first chunk left, when a check of the gap
    # to it came before the subscription ended)
    assert said - 4 <= client.metrics().messages_lost <= read - 4

async def test_gap_raises(truncated: tuple[StreamsClient, str, int]) -> None:
    client, stream, first = truncated
    with pytest.raises(OffsetOutOfRange) as info:
        await first_read(client, stream, Offset.offset(10), on_gap='raise')
    assert (info.value.stream, info.value.offset) == (stream, 10)
    assert info.value.first >= first and info.value.lost == info.value.first - 10

async def test_gap_calls_back(truncated: tuple[StreamsClient, str, int]) -> None:
    client, stream, first = truncated
    told: list[OffsetOutOfRange] = []
    read = await first_read(client, stream, Offset.offset(0), on_gap=told.append)
    [gap] = told
    assert gap.offset == 0 and first <= gap.first <= read

async def test_no_gap(truncated: tuple[StreamsClient, str, int]) -> None:
    """An offset at or after the first: nothing said, nothing counted."""
    client, stream, _ = truncated
    last = (await client.stream_stats(stream))['committed_chunk_id']  # (not removed)
    assert await first_read(client, stream, Offset.offset(last), on_gap='raise') == last
    assert client.metrics().messages_lost == 0

async def test_default_on_fake_broker() -> None:
    async with FakeBroker() as broker:
        client = streams_client(broker.url)
        try:
            await client.create_stream('orders')
            await publish(client, 'orders', 0, 3)
            assert await first_read(
                client, 'orders', Offset.reference('g', default=Offset.offset(2))) == 2
        finally:
            await client.disconnect()

def test_bad_on_gap(client4: StreamsClient) -> None:
    with pytest.raises(ValueError, match="on_gap must be 'warn', 'raise' or a function"):
        client4.subscribe('s', on_gap='ignore')  # type: ignore[call-overload]
