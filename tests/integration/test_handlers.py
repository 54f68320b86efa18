"""
Concurrent handlers against real brokers (``client.process`` and
``client.process_super_stream``): messages in flight at once, each once;
the offset committed never past a message not handled, so that a run
stopped and started again loses nothing and repeats at most what was
queued; a consumer group of two members handing partitions over while
handlers run; the fake broker.
"""

import asyncio
import typing as tp
import uuid

import pytest

from rbfly.amqp import MessageCtx
from rbfly.streams import Offset, OnError, StreamsClient, streams_client
from rbfly.testing import FakeBroker

from .conftest import stored

async def publish(client: StreamsClient, stream: str, count: int) -> None:
    async with client.publisher(stream) as publisher:
        await publisher.send_many([str(i) for i in range(count)])

async def test_in_flight_at_once(client: StreamsClient, stream: str) -> None:
    """Up to ``concurrency`` handlers wait at once; every message handled once."""
    await publish(client, stream, 300)
    seen: list[int] = []
    running = most = 0

    async def handler(msg: MessageCtx) -> None:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.002)
        running -= 1
        seen.append(msg.stream_offset)

    count = await client.process(
        stream, handler, concurrency=16, offset=Offset.FIRST, stop_at_end=True,
    )
    assert count == 300 and sorted(seen) == list(range(300))
    assert most == 16

async def test_stopped_and_started_loses_nothing(client: StreamsClient, stream: str) -> None:
    """
    A run cancelled mid-stream drains, commits the offset before the
    lowest message not handled; a run started again from the stored
    offset handles the rest: nothing lost, and only messages queued to
    handlers and not handled before are handled twice (none here: the
    drain finishes those in hand, those queued are not committed).
    """
    await publish(client, stream, 500)
    first: list[int] = []
    reached = asyncio.Event()

    async def handler(msg: MessageCtx) -> None:
        await asyncio.sleep(0.001 * (msg.stream_offset % 7))  # out of order
        first.append(msg.stream_offset)
        if len(first) == 200:
            reached.set()

    run = asyncio.ensure_future(client.process(
        stream, handler, concurrency=32, key=lambda m: m.stream_offset % 5,
        offset=Offset.FIRST, name='h', store_every=10,
    ))
    await reached.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    committed = await stored(client, stream, 'h')
    # nothing past a message not handled, nothing handled left uncommitted
    # before the lowest one not handled
    assert all(o in first for o in range(committed + 1))
    assert committed + 1 not in first or committed + 1 >= 500

    second: list[int] = []

    async def again(msg: MessageCtx) -> None:
        second.append(msg.stream_offset)

    await client.process(
        stream, again, concurrency=32, offset=Offset.reference('h'), name='h',
        store_every=10, stop_at_end=True,
    )
    assert min(second) == committed + 1
    assert set(first) | set(second) == set(range(500))  # nothing lost
    twice = set(first) & set(second)
    assert len(twice) <= 32 * 2, sorted(twice)  # at most what was queued
    assert await stored(client, stream, 'h') == 499

async def test_group_hand_off_while_handling(url4: str) -> None:
    """
    Two members of a consumer group on a super stream of 4 partitions run
    handlers; the second joins while the first is handling: the broker
    moves partitions to it, each hand-off waits for the first member's
    messages in flight, and the two together handle every message, none
    twice.
    """
    super_stream = 'rbfly-handlers-{}'.format(uuid.uuid4().hex[:8])
    a, b = streams_client(url4), streams_client(url4)
    try:
        partitions = await a.create_super_stream(super_stream, 4)
        for p in partitions:
            await publish(a, p, 300)
        handled: dict[str, list[tuple[str, int]]] = {'a': [], 'b': []}
        half = asyncio.Event()
        done = asyncio.Event()

        def handler(member: str):  # type: ignore[no-untyped-def]
            async def handle(msg: MessageCtx) -> None:
                await asyncio.sleep(0.002)
                handled[member].append((str(msg.stream), msg.stream_offset))
                total = len(handled['a']) + len(handled['b'])
                if total >= 300:
                    half.set()
                if total >= 1200:
                    done.set()
            return handle

        options = dict(
            offset=Offset.FIRST, name='g', single_active=True, store_every=20,
            store_interval=0.2, concurrency=16,
        )
        run_a = asyncio.ensure_future(a.process_super_stream(
            super_stream, handler('a'), **options))  # type: ignore[arg-type]
        await half.wait()
        run_b = asyncio.ensure_future(b.process_super_stream(
            super_stream, handler('b'), **options))  # type: ignore[arg-type]
        async with asyncio.timeout(60):
            await done.wait()
        for run in (run_a, run_b):
            run.cancel()
        await asyncio.wait([run_a, run_b])
        everything = handled['a'] + handled['b']
        assert sorted(set(everything)) == sorted((p, i) for p in partitions for i in range(300))
        twice = len(everything) - len(set(everything))
        assert twice == 0, 'handled twice: {}'.format(twice)
        assert handled['b'], 'the second member got no partition'
    finally:
        await a.delete_super_stream(super_stream)
        await a.disconnect()
        await b.disconnect()

async def test_fake_broker() -> None:
    """The same on the fake broker."""
    async with FakeBroker() as broker:
        client = streams_client(broker.url)
        try:
            await client.create_stream('orders')
            await publish(client, 'orders', 50)
            seen: list[int] = []

            async def handler(msg: MessageCtx) -> None:
                await asyncio.sleep(0)
                seen.append(msg.stream_offset)

            count = await client.process(
                'orders', handler, concurrency=8, offset=Offset.FIRST, name='g',
                store_every=5, stop_at_end=True,
            )
            assert count == 50 and sorted(seen) == list(range(50))
            assert await client.query_offset('orders', 'g') == 49
        finally:
            await client.disconnect()

async def test_dead_letters_once_across_restarts(client4: StreamsClient, stream: str) -> None:
    """
    Messages whose handler keeps failing go to the dead-letter stream with
    the error, the source stream and offset; a run started again from an
    earlier offset (its commits lost) fails on them again, and the broker
    drops the dead letters sent again: each is in the stream once.
    """
    client = client4
    dlq = stream + '-dlq'
    await client.create_stream(dlq)
    try:
        await publish(client, stream, 30)

        async def handler(msg: MessageCtx) -> None:
            if msg.stream_offset in (5, 17):
                raise ValueError('no such customer')

        policy = OnError(retries=1, backoff=0.01, then='dead-letter', dead_letter=dlq)
        for start in (Offset.FIRST, Offset.offset(3)):  # the second: commits lost
            handled = await client.process(
                stream, handler, concurrency=8, on_error=policy, offset=start,
                name='billing', store_every=5, stop_at_end=True,
            )
            assert handled == (28 if start == Offset.FIRST else 25)
            assert await client.query_offset(stream, 'billing') == 29
        letters = [
            m async for m in _messages(client, dlq)
        ]
        assert [m.app_properties['x-rbfly-source-offset'] for m in letters] == [5, 17]
        assert {m.app_properties['x-rbfly-source-stream'] for m in letters} == {stream}
        assert letters[0].app_properties['x-rbfly-error'] == 'ValueError: no such customer'
        assert [m.body for m in letters] == ['5', '17']
    finally:
        await client.delete_stream(dlq)

async def _messages(client: StreamsClient, stream: str) -> tp.AsyncIterator[MessageCtx]:
    async for chunk in client.subscribe_chunks(stream, offset=Offset.FIRST, stop_at_end=True):
        for m in chunk:
            yield m
