"""
Pausing a partition and seeking a live subscription, against RabbitMQ
(3.10 for a stream, 4.3 for super streams) and the fake broker: a paused
partition hands out nothing while the others go on, and everything
after its resume, exactly once and in order; a seek reads from the new
offset, and automatic tracking stores the offset before it.
"""

import asyncio
import typing as tp
import uuid
from collections.abc import AsyncIterator

import pytest

from rbfly.amqp import MessageCtx
from rbfly.streams import ManualCredit, Offset, StreamsClient, get_message_ctx, streams_client
from rbfly.testing import FakeBroker

@pytest.fixture(params=['3.10', '4.3', 'fake'])
async def url(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    if request.param == 'fake':
        async with FakeBroker() as broker:
            yield broker.url
    else:
        yield str(request.getfixturevalue('url' if request.param == '3.10' else 'url43'))

@pytest.fixture(params=['4.3', 'fake'])
async def url_super(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """Brokers with super streams (3.11+)."""
    if request.param == 'fake':
        async with FakeBroker() as broker:
            yield broker.url
    else:
        yield str(request.getfixturevalue('url43'))

@pytest.fixture
async def client(url: str) -> AsyncIterator[StreamsClient]:
    c = streams_client(url)
    try:
        yield c
    finally:
        await c.disconnect()

async def test_pause_partition_others_go_on(url_super: str) -> None:
    """Partition 0 paused after its first message: the others are read whole, then the rest of 0."""
    client = streams_client(url_super)
    name = 'rbfly-pause-{}'.format(uuid.uuid4().hex[:8])
    try:
        partitions = await client.create_super_stream(name, 3)
        for p in partitions:
            async with client.publisher(p) as publisher:
                await publisher.send_many(['{}:{}'.format(p, i) for i in range(100)])
        sub = client.subscribe_super_stream(
            name, offset=Offset.FIRST, name='reader', store_every=10, timeout=10)
        first = partitions[0]
        seen: dict[str, list[int]] = {p: [] for p in partitions}
        async for _ in sub:
            ctx = get_message_ctx()
            seen[str(ctx.stream)].append(ctx.stream_offset)
            if ctx.stream == first and len(seen[first]) == 1:
                sub.pause(first)
                assert sub.paused() == {first}
                # more while paused: read after the resume
                async with client.publisher(first) as publisher:
                    await publisher.send_many(['late {}'.format(i) for i in range(50)])
            if all(len(seen[p]) == 100 for p in partitions[1:]):
                break
        assert seen[first] == [0], 'a paused partition handed out messages'
        sub.resume(first)
        async for _ in sub:
            ctx = get_message_ctx()
            seen[str(ctx.stream)].append(ctx.stream_offset)
            if len(seen[first]) == 150:
                break
        await sub.aclose()
        assert seen == {p: list(range(150 if p == first else 100)) for p in partitions}
        # exact tracking: what was processed of each partition is stored
        assert await client.query_offset(first, 'reader') == 149
        for p in partitions[1:]:
            assert await client.query_offset(p, 'reader') == 99
    finally:
        await client.delete_super_stream(name)
        await client.disconnect()

async def test_seek_back_and_forth(client: StreamsClient, stream: str) -> None:
    """A seek back reads again, a seek forward skips; the offset stored follows."""
    await client.create_stream(stream)
    try:
        async with client.publisher(stream) as publisher:
            await publisher.send_many([str(i) for i in range(50)])
        sub = client.subscribe(stream, offset=Offset.FIRST, name='s', store_every=1, timeout=10)
        got = [int(str(await anext(sub))) for _ in range(20)]
        await sub.seek(stream, 5)
        got += [int(str(await anext(sub))) for _ in range(5)]
        await sub.seek(stream, Offset.offset(40))
        got += [int(str(await anext(sub))) for _ in range(10)]
        assert got == [*range(20), *range(5, 10), *range(40, 50)]
        await sub.commit()
        assert await client.query_offset(stream, 's') == 49
        # moved back and ended before a message: the offset before the new place is stored
        await sub.seek(stream, 30)
        await sub.aclose()
        assert await client.query_offset(stream, 's') == 29
        sub = client.subscribe(stream, offset=Offset.reference('s'), timeout=10)
        assert await anext(sub) == '30'
        await sub.aclose()
    finally:
        await client.delete_stream(stream)

async def test_seek_windows_to_next(client: StreamsClient, stream: str) -> None:
    """A window iterator moved to the stream's end reads what comes next only."""
    await client.create_stream(stream)
    try:
        async with client.publisher(stream) as publisher:
            await publisher.send_many([str(i) for i in range(20)])
            async with client.subscribe_windows(
                    stream, max_messages=5, max_wait=10, offset=Offset.FIRST) as windows:
                window = await windows.getmany()
                assert [m.body for m in window] == ['0', '1', '2', '3', '4']
                await windows.seek(stream, Offset.NEXT)
                # the broker resolved NEXT when the seek returned: this comes
                await publisher.send('after')
                async with asyncio.timeout(10):
                    window = await windows.getmany(max_messages=1)
                assert [(m.body, m.stream_offset) for m in window] == [('after', 20)]
    finally:
        await client.delete_stream(stream)

async def test_seek_single_active_refused(url_super: str, stream: str) -> None:
    """A single active consumer (RabbitMQ 3.11+) cannot seek: it would leave its group."""
    client = streams_client(url_super)
    await client.create_stream(stream)
    try:
        async with client.publisher(stream) as publisher:
            await publisher.send('0')
        sub = client.subscribe(stream, offset=Offset.FIRST, name='g', single_active=True)
        assert await anext(sub) == '0'
        with pytest.raises(ValueError, match='single active consumer cannot seek'):
            await sub.seek(stream, 0)
        await sub.aclose()
    finally:
        await client.delete_stream(stream)
        await client.disconnect()

async def test_processor_pause_seek(url_super: str) -> None:
    """
    Concurrent handlers: a partition paused from a handler stops getting
    messages (those in flight finish) while the other is handled whole;
    resumed, the rest; moved back, handled again from there; the offsets
    committed at the end are the last ones.
    """
    client = streams_client(url_super)
    name = 'rbfly-proc-{}'.format(uuid.uuid4().hex[:8])
    try:
        a, b = await client.create_super_stream(name, 2)
        for p in (a, b):
            async with client.publisher(p) as publisher:
                await publisher.send_many([str(i) for i in range(20)])
        seen: dict[str, list[int]] = {a: [], b: []}
        changed = asyncio.Event()

        async def handler(msg: MessageCtx) -> None:
            await asyncio.sleep(0)
            stream = str(msg.stream)
            seen[stream].append(msg.stream_offset)
            if stream == a and msg.stream_offset == 0 and not proc.paused():
                proc.pause(a)
            changed.set()

        async def until(done: tp.Callable[[], bool]) -> None:
            async with asyncio.timeout(30):
                while not done():
                    changed.clear()
                    await changed.wait()

        proc = client.super_stream_processor(
            name, handler, concurrency=4, offset=Offset.FIRST, name='g', store_every=1)
        run = asyncio.ensure_future(proc.run())
        await until(lambda: len(seen[b]) == 20)
        # in flight when paused, at most: the workers, their queue, the dispatcher's
        assert 1 <= len(seen[a]) <= 1 + 4 + 2 + 1
        assert proc.paused() == {a}
        proc.resume(a)
        await until(lambda: len(seen[a]) == 20)
        assert sorted(seen[a]) == list(range(20)) and sorted(seen[b]) == list(range(20))
        await proc.seek(a, 15)
        await until(lambda: len(seen[a]) == 25)
        assert sorted(seen[a][20:]) == list(range(15, 20))
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert await client.query_offset(a, 'g') == 19
        assert await client.query_offset(b, 'g') == 19
    finally:
        await client.delete_super_stream(name)
        await client.disconnect()

async def test_seek_from_another_task(client: StreamsClient, stream: str) -> None:
    """
    A take waiting at the live end (one subscription) is woken by a seek
    from another task, and reads from the new place; ``aclose()`` from
    another task ends it.
    """
    await client.create_stream(stream)
    try:
        async with client.publisher(stream) as publisher:
            await publisher.send_many([str(i) for i in range(5)])
        sub = client.subscribe(stream, offset=Offset.FIRST)
        seen: list[int] = []
        changed = asyncio.Event()

        async def consume() -> None:
            async for _ in sub:
                seen.append(get_message_ctx().stream_offset)
                changed.set()

        task = asyncio.ensure_future(consume())
        async with asyncio.timeout(30):
            while len(seen) < 5:
                changed.clear()
                await changed.wait()
            await sub.seek(stream, 2)  # (the consumer waits for a 6th message)
            while len(seen) < 8:
                changed.clear()
                await changed.wait()
            assert seen == [0, 1, 2, 3, 4, 2, 3, 4]
            await sub.aclose()
            await task
    finally:
        await client.delete_stream(stream)

async def test_pause_one_resume_another(url_super: str) -> None:
    """Partition 1 paused, then 0 paused and 1 resumed: 1's messages come."""
    client = streams_client(url_super)
    name = 'rbfly-swap-{}'.format(uuid.uuid4().hex[:8])
    try:
        p0, p1 = await client.create_super_stream(name, 2)
        for p in (p0, p1):
            async with client.publisher(p) as publisher:
                await publisher.send_many([str(i) for i in range(10)])
        sub = client.subscribe_super_stream(name, offset=Offset.FIRST, timeout=30)
        sub.pause(p1)
        seen: dict[str, int] = {p0: 0, p1: 0}
        async for _ in sub:
            seen[str(get_message_ctx().stream)] += 1
            if seen[p0] == 10 and not seen[p1]:
                sub.pause(p0)
                sub.resume(p1)
            if seen[p1] == 10:
                break
        assert seen == {p0: 10, p1: 10}
        await sub.aclose()
    finally:
        await client.delete_super_stream(name)
        await client.disconnect()

async def test_seek_manual_credit(client: StreamsClient, stream: str) -> None:
    """A subscription with ``ManualCredit`` seeks: its successor takes the strategy over."""
    await client.create_stream(stream)
    try:
        async with client.publisher(stream) as publisher:
            await publisher.send_many([str(i) for i in range(20)])
        flow = ManualCredit(2)
        sub = client.subscribe_chunks(stream, offset=Offset.FIRST, flow=flow, timeout=30)
        first = await anext(sub)
        flow.processed(stream)
        await sub.seek(stream, 10)
        again = await anext(sub)
        flow.processed(stream)
        assert first[0].stream_offset == 0 and again[0].stream_offset == 10
        await sub.aclose()
    finally:
        await client.delete_stream(stream)
