"""
Every offset specification against real brokers.
"""

import asyncio
import time

import pytest

from rbfly.streams import Offset, PublisherBatchFast, StreamsClient, get_message_ctx
from rbfly.streams.error import NoOffset

from .conftest import Opened, stored

async def publish(client: StreamsClient, stream: str, values: range) -> None:
    async with client.publisher(stream, cls=PublisherBatchFast) as publisher:
        for i in values:
            publisher.batch(i)
        await publisher.flush()

async def first(
        client: StreamsClient, stream: str, offset: Offset, opened: Opened | None = None,
) -> tuple[int, object]:
    async for body in client.subscribe(stream, offset=offset, timeout=5, on_state=opened):
        return get_message_ctx().stream_offset, body
    raise AssertionError('no message')

async def test_offset_first_and_offset(client: StreamsClient, stream: str) -> None:
    """FIRST starts at 0; offset(n) starts exactly at n, even inside a chunk."""
    await publish(client, stream, range(100))
    assert await first(client, stream, Offset.FIRST) == (0, 0)
    assert await first(client, stream, Offset.offset(57)) == (57, 57)

async def test_offset_last(client: StreamsClient, stream: str) -> None:
    """LAST starts at the last chunk."""
    await publish(client, stream, range(10))
    await publish(client, stream, range(10, 20))
    offset, body = await first(client, stream, Offset.LAST)
    assert offset == body
    assert offset >= 10

async def test_offset_next(client: StreamsClient, stream: str) -> None:
    """NEXT receives only messages published after subscribing."""
    await publish(client, stream, range(10))
    opened = Opened()

    async def later() -> None:
        await opened.wait()  # (the broker takes NEXT as the end when subscribed)
        await publish(client, stream, range(10, 11))

    task = asyncio.create_task(later())
    assert await first(client, stream, Offset.NEXT, opened) == (10, 10)
    await task

async def test_offset_timestamp(client: StreamsClient, stream: str) -> None:
    """timestamp(t) skips chunks stored before t."""
    await publish(client, stream, range(10))
    await asyncio.sleep(1.5)  # wall time: the chunks before are a second older than t
    t = time.time()
    await asyncio.sleep(0.5)  # wall time: the chunks after are stamped after t
    await publish(client, stream, range(10, 20))
    offset, body = await first(client, stream, Offset.timestamp(t))
    assert (offset, body) == (10, 10)

async def test_offset_reference(client: StreamsClient, stream: str) -> None:
    """A stored offset reference resumes after the stored offset."""
    await publish(client, stream, range(20))
    with pytest.raises(NoOffset):
        await client.query_offset(stream, 'reader-1')
    assert await first(client, stream, Offset.reference('reader-1')) == (0, 0)
    async for _ in client.subscribe(stream, offset=Offset.offset(5), timeout=5):
        await client.write_offset(stream, 'reader-1')
        break
    await stored(client, stream, 'reader-1', 5)
    assert await first(client, stream, Offset.reference('reader-1')) == (6, 6)
    await client.write_offset(stream, 'reader-1', 12)
    await stored(client, stream, 'reader-1', 12)  # (not 0.3 s: no answer to wait for)
    assert await first(client, stream, Offset.reference('reader-1')) == (13, 13)

async def test_automatic_tracking(client: StreamsClient, stream: str) -> None:
    """
    Every ``store_every`` processed messages and at the end, the offset of
    the last processed message is stored; the next subscription with
    ``Offset.reference`` continues right after it.
    """
    await publish(client, stream, range(100))
    got = []
    async for body in client.subscribe(
            stream, offset=Offset.reference('app'), name='app', store_every=10):
        got.append(body)
        if len(got) == 11:  # the first 10 are processed
            await stored(client, stream, 'app', 9)
        if len(got) == 25:
            break
    await stored(client, stream, 'app', 24)
    async for body in client.subscribe(
            stream, offset=Offset.reference('app'), name='app', store_every=10):
        assert body == 25
        break

async def test_automatic_tracking_interval(client: StreamsClient, stream: str) -> None:
    """An idle subscription stores its last offset after ``store_interval``."""
    await publish(client, stream, range(5))

    async def consume() -> None:
        async for _ in client.subscribe(
                stream, offset=Offset.FIRST, name='idle', store_every=1000,
                store_interval=0.2):
            pass

    task = asyncio.create_task(consume())
    try:
        await stored(client, stream, 'idle', 4)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

async def test_automatic_tracking_chunks(client: StreamsClient, stream: str) -> None:
    await publish(client, stream, range(30))
    last = -1
    async for chunk in client.subscribe_chunks(
            stream, offset=Offset.FIRST, name='chunks', store_every=1):
        last = chunk[-1].stream_offset
        break
    await stored(client, stream, 'chunks', last)

async def test_automatic_tracking_emptied_chunks(client: StreamsClient, stream: str) -> None:
    """
    A chunk the application empties in place (filtering it) is not
    counted: its offset is not stored, and the next chunk comes; the
    chunks it leaves as they are are stored.
    """
    await publish(client, stream, range(10))
    await publish(client, stream, range(10, 20))
    chunks = []
    async for chunk in client.subscribe_chunks(
            stream, offset=Offset.FIRST, name='emptied', store_every=1, timeout=5):
        chunks.append((chunk[0].stream_offset, chunk[-1].stream_offset))
        if chunk[-1].stream_offset >= 19:
            break
        chunk.clear()
    assert len(chunks) >= 2 and chunks[0][0] == 0 and chunks[-1][1] == 19
    await stored(client, stream, 'emptied', 19)

async def test_super_stream_options_checked_first(client: StreamsClient) -> None:
    """A bad option is named before the broker is asked for anything."""
    with pytest.raises(ValueError, match='credit must be'):
        async for _ in client.subscribe_super_stream_chunks('no-such-super-stream', credit=0):
            pass

async def test_automatic_tracking_needs_name(client: StreamsClient, stream: str) -> None:
    with pytest.raises(ValueError, match='needs a name'):
        async for _ in client.subscribe(stream, store_every=10):
            pass
    with pytest.raises(ValueError, match='at least 1'):
        async for _ in client.subscribe_chunks(stream, name='x', store_every=-1):
            pass

async def test_commit_offset(client: StreamsClient, stream: str) -> None:
    """
    A commit returns once the broker reports the offset: a query right
    after it returns it, each time (StoreOffset alone does not wait).
    """
    await publish(client, stream, range(20))
    for value in (3, 17, 5, 0):
        await client.commit_offset(stream, 'committer', value)
        assert await client.query_offset(stream, 'committer') == value
    async for _ in client.subscribe(stream, offset=Offset.offset(11), timeout=5):
        await client.write_offset(stream, 'committer', wait=True)  # the message's offset
        break
    assert await client.query_offset(stream, 'committer') == 11
    assert await first(client, stream, Offset.reference('committer')) == (12, 12)

async def test_commit_offset_bad_input(client: StreamsClient, stream: str) -> None:
    """Bad offsets and timeouts are refused before anything is sent."""
    with pytest.raises(TypeError, match='offset must be an int'):
        await client.commit_offset(stream, 'x', '5')  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r'0\.\.2'):
        await client.commit_offset(stream, 'x', -1)
    with pytest.raises(ValueError, match='timeout must be positive'):
        await client.commit_offset(stream, 'x', 1, timeout=0)

async def test_subscription_commit(client: StreamsClient, stream: str) -> None:
    """
    A tracked message iterator commits the message at hand on demand: a
    query right after returns its offset (the tracking would store it
    only after 1,000 messages or 60 s).
    """
    await publish(client, stream, range(20))
    messages = client.subscribe(stream, offset=Offset.FIRST, name='committer', store_every=1000,
                                store_interval=60, timeout=5)
    async for _ in messages:
        offset = get_message_ctx().stream_offset
        if offset in (4, 13):
            await messages.commit()
            assert await client.query_offset(stream, 'committer') == offset
        if offset == 13:
            break
    with pytest.raises(TypeError, match='automatic offset tracking'):
        await client.subscribe(stream, name='x').commit()
