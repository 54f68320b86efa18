"""
Super streams on the RabbitMQ 4.x broker (created over the protocol since
3.13; partitions and routes since 3.11): management, hash and key routing,
consuming all partitions, and single active consumers sharing partitions.
"""

import asyncio
import collections
import contextlib
import typing as tp
import uuid
from urllib.parse import urlsplit

import pytest

from rbfly.streams import (
    FeatureNotSupported,
    NoRoute,
    Offset,
    PublisherBatchFast,
    PublisherPipelined,
    StreamsClient,
    get_message_ctx,
    streams_client,
)
from rbfly.streams.backoff import Backoff
from rbfly.streams.error import StreamDoesNotExist
from rbfly.streams.publishers.superstream import hash_partition
from rbfly.streams.subscriptions.handoff import ConsumerUpdateContext

from .conftest import stored
from .proxy import Proxy

@pytest.fixture
def client(super_client4: StreamsClient) -> StreamsClient:
    """The module's client: of RabbitMQ 4.x, deleting the test's super stream after."""
    return super_client4

def _key(message: object) -> str:
    return tp.cast(str, message).split(':')[0]

async def _publish_batches(client: StreamsClient, super_stream: str, messages: list[str]) -> None:
    """Publish to a super stream, routed by key, in awaited batches of 100."""
    async with client.super_stream_publisher(
            super_stream, _key, cls=PublisherBatchFast) as publisher:
        for i, m in enumerate(messages):
            publisher.batch(m)
            if i % 100 == 99:
                await publisher.flush()

async def test_needs_rabbitmq_313(url: str) -> None:
    c = streams_client(url)
    try:
        with pytest.raises(FeatureNotSupported, match='creating super streams'):
            await c.create_super_stream('rbfly-never', 3)
    finally:
        await c.disconnect()

async def test_create_partitions_route_delete(client: StreamsClient, super_stream: str) -> None:
    names = await client.create_super_stream(super_stream, 3, arguments={'max-age': '1h'})
    assert names == ['{}-{}'.format(super_stream, i) for i in range(3)]
    assert await client.super_stream_partitions(super_stream) == names
    assert await client.route(super_stream, '1') == [names[1]]
    assert await client.route(super_stream, 'nothing') == []
    assert await client.create_super_stream(super_stream, 3) == names  # exist_ok
    info = await client.stream_metadata(names[0])
    assert info.leader is not None

    await client.delete_super_stream(super_stream)
    with pytest.raises(StreamDoesNotExist):
        await client.stream_metadata(names[0])
    with pytest.raises(StreamDoesNotExist):
        await client.delete_super_stream(super_stream, missing_ok=False)

async def test_bad_arguments(client: StreamsClient, super_stream: str) -> None:
    with pytest.raises(ValueError, match='number of partitions or the binding keys'):
        await client.create_super_stream(super_stream)
    with pytest.raises(ValueError, match='at least 1'):
        await client.create_super_stream(super_stream, 0)
    with pytest.raises(ValueError, match='unique'):
        await client.create_super_stream(super_stream, binding_keys=['a', 'a'])
    with pytest.raises(StreamDoesNotExist):
        async with client.super_stream_publisher('rbfly-no-such-super', _key):
            pass

@pytest.mark.parametrize('cls', ['send', 'batch', 'pipelined'])
async def test_hash_routing_round_trip(
        client: StreamsClient, super_stream: str, cls: str,
) -> None:
    """
    Every message lands in the partition its key hashes to (as the other
    clients route it), and reading all partitions gives each message once,
    in order per key.
    """
    partitions = await client.create_super_stream(super_stream, 3)
    messages = ['k{}:{}'.format(i % 50, i) for i in range(600)]
    if cls == 'batch':
        await _publish_batches(client, super_stream, messages)
    elif cls == 'pipelined':
        async with client.super_stream_publisher(
                super_stream, _key, cls=PublisherPipelined) as publisher:
            for m in messages:
                await publisher.send(m)
            await publisher.flush()
    else:
        async with client.super_stream_publisher(super_stream, _key) as publisher:
            assert repr(publisher).startswith('SuperStreamPublisher(')
            for m in messages:
                await publisher.send(m)

    got: dict[str, list[str]] = collections.defaultdict(list)
    count = 0
    async for chunk in client.subscribe_super_stream_chunks(
            super_stream, offset=Offset.FIRST, timeout=10):
        for msg in chunk:
            body = tp.cast(str, msg.body)
            assert hash_partition(_key(body), partitions) == chunk.stream
            got[_key(body)].append(body)
            count += 1
        if count == len(messages):
            break
    expected: dict[str, list[str]] = collections.defaultdict(list)
    for m in messages:
        expected[_key(m)].append(m)
    assert got == expected
    # each partition got a share
    for partition in partitions:
        assert any(hash_partition(k, partitions) == partition for k in expected)

async def test_key_routing(client: StreamsClient, super_stream: str) -> None:
    names = await client.create_super_stream(super_stream, binding_keys=['eu', 'us'])
    assert names == ['{}-eu'.format(super_stream), '{}-us'.format(super_stream)]
    async with client.super_stream_publisher(
            super_stream, _key, routing='key', cls=PublisherBatchFast) as publisher:
        assert await publisher.partition('us:x') == names[1]
        publisher.batch('eu:1')
        publisher.batch('us:2')
        publisher.batch('eu:3')
        await publisher.flush()
        with pytest.raises(NoRoute, match="'asia'"):
            await publisher.send('asia:4')
        publisher.batch('asia:5')
        with pytest.raises(NoRoute):
            await publisher.flush()
    for name, expected in ((names[0], ['eu:1', 'eu:3']), (names[1], ['us:2'])):
        got = []
        async for body in client.subscribe(name, offset=Offset.FIRST, timeout=10):
            got.append(body)
            if len(got) == len(expected):
                break
        assert got == expected

async def test_single_active_consumers_share_partitions(
        url4: str, client: StreamsClient, super_stream: str,
) -> None:
    """
    Two single active consumers of one group on a super stream of three
    partitions: the broker gives each partition to exactly one of them
    (moving one from the first to the second when it joins), and together
    they read every message once.
    """
    partitions = await client.create_super_stream(super_stream, 3)
    other = streams_client(url4)
    received: dict[str, list[tuple[str, str]]] = {'a': [], 'b': []}
    total = 300
    # partitions each consumer was made active on (the broker answered)
    active: dict[str, set[str]] = {'a': set(), 'b': set()}
    moved = asyncio.Event()

    publishing = False

    def update(who: str) -> tp.Callable[[ConsumerUpdateContext], Offset | None]:
        def updated(context: ConsumerUpdateContext) -> Offset | None:
            (active[who].add if context.active else active[who].discard)(context.stream)
            moved.set()
            # the partitions are empty until both consumers are active: one
            # made active before starts at the first message, whenever the
            # broker gets the answer (NEXT would be the end as of then, maybe
            # after messages published meanwhile); after, at the end (NEXT)
            return None if publishing else Offset.FIRST
        return updated

    async def until(condition: tp.Callable[[], bool]) -> None:
        async with asyncio.timeout(30):
            while not condition():
                moved.clear()
                await moved.wait()

    async def consume(c: StreamsClient, who: str) -> None:
        async for chunk in c.subscribe_super_stream_chunks(
                super_stream, name='group', single_active=True, offset=Offset.NEXT,
                consumer_update=update(who)):
            received[who].extend((chunk.stream, tp.cast(str, m.body)) for m in chunk)
            if len(received['a']) + len(received['b']) >= total:
                return

    tasks = [asyncio.create_task(consume(client, 'a'))]
    # the broker makes the first consumer active on every partition, then
    # moves one to the second (the first steps down before), not within
    # a given time on a loaded machine
    await until(lambda: len(active['a']) == 3)
    tasks.append(asyncio.create_task(consume(other, 'b')))
    await until(lambda: bool(active['b']))
    publishing = True
    try:
        async with client.super_stream_publisher(
                super_stream, _key, cls=PublisherBatchFast) as publisher:
            for i in range(total):
                publisher.batch('k{}:{}'.format(i, i))
            await publisher.flush()
        done, _ = await asyncio.wait(tasks, timeout=20, return_when=asyncio.FIRST_COMPLETED)
        assert done, 'messages missing: {} of {}'.format(
            len(received['a']) + len(received['b']), total,
        )
        await asyncio.sleep(0.5)  # wall time: nothing more arrives meanwhile
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await other.disconnect()

    bodies = [b for who in 'ab' for _, b in received[who]]
    assert sorted(bodies) == sorted('k{}:{}'.format(i, i) for i in range(total))
    parts_a = {p for p, _ in received['a']}
    parts_b = {p for p, _ in received['b']}
    assert parts_a and parts_b, 'one consumer got all partitions'
    assert not parts_a & parts_b
    assert parts_a | parts_b == set(partitions)

async def test_super_stream_exists(client4: StreamsClient) -> None:
    """super_stream_exists, for a super stream and for none."""
    name = 'rbfly-sse-{}'.format(uuid.uuid4().hex[:8])
    assert not await client4.super_stream_exists(name)
    await client4.create_super_stream(name, 2)
    try:
        assert await client4.super_stream_exists(name)
    finally:
        await client4.delete_super_stream(name)

async def test_message_knows_its_partition(client: StreamsClient, super_stream: str) -> None:
    """
    Reading a super stream message by message, the message context names
    the partition, enough to store offsets per partition by hand; reading
    on from the stored offsets gives only the messages after them.
    """
    partitions = await client.create_super_stream(super_stream, 3)
    messages = ['k{}:{}'.format(i % 20, i) for i in range(300)]
    async with client.super_stream_publisher(
            super_stream, _key, cls=PublisherBatchFast) as publisher:
        for m in messages[:200]:
            publisher.batch(m)
        await publisher.flush()
    seen = 0
    async with contextlib.aclosing(client.subscribe_super_stream(
            super_stream, offset=Offset.FIRST, timeout=10)) as bodies:
        async for body in bodies:
            ctx = get_message_ctx()
            assert ctx.stream == hash_partition(_key(tp.cast(str, body)), partitions)
            await client.write_offset(ctx.stream, 'by-hand', ctx.stream_offset)
            seen += 1
            if seen == 200:
                break
    async with client.super_stream_publisher(
            super_stream, _key, cls=PublisherBatchFast) as publisher:
        for m in messages[200:]:
            publisher.batch(m)
        await publisher.flush()
    for p in partitions:  # stored offsets are visible once the broker handled them
        await stored(client, p, 'by-hand')
    rest: list[str] = []
    async with contextlib.aclosing(client.subscribe_super_stream(
            super_stream, offset=Offset.reference('by-hand'), timeout=10)) as bodies:
        async for body in bodies:
            rest.append(tp.cast(str, body))
            if len(rest) == 100:
                break
    assert sorted(rest, key=lambda m: int(m.split(':')[1])) == messages[200:]

async def test_resume_callback_per_partition(url4: str, super_stream: str) -> None:
    """
    After a cut, a super stream subscription asks the resume callback per
    partition, with the partition's offset after its last chunk received:
    every message comes once.
    """
    p = urlsplit(url4)
    proxy = Proxy(p.hostname or 'localhost', p.port or 5553)
    await proxy.start()
    client = streams_client('rabbitmq-stream://guest:guest@127.0.0.1:{}/'.format(proxy.port),
                            reconnect=Backoff(initial=0.05, maximum=0.5))
    try:
        partitions = await client.create_super_stream(super_stream, 3)
        messages = ['k{}:{}'.format(i % 30, i) for i in range(3000)]
        await _publish_batches(client, super_stream, messages)
        asked: dict[str, Offset] = {}

        all_asked = asyncio.Event()

        def resume(stream: str, offset: Offset) -> None:
            asked[stream] = offset
            if set(asked) == set(partitions):
                all_asked.set()

        received: list[str] = []
        async with contextlib.aclosing(client.subscribe_super_stream(
                super_stream, offset=Offset.FIRST, timeout=10, resume=resume)) as bodies:
            async for body in bodies:
                received.append(tp.cast(str, body))
                if len(received) == 500:
                    assert proxy.cut()
                if len(received) == len(messages):
                    # a partition whose messages all came before the cut
                    # is subscribed again (and its callback asked) maybe
                    # after the last message: wait for it, subscribed
                    await asyncio.wait_for(all_asked.wait(), 10)
                    break
        assert sorted(received) == sorted(messages)
        assert set(asked) == set(partitions)
    finally:
        await client.delete_super_stream(super_stream)
        await client.disconnect()
        await proxy.close()
