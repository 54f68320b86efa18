"""
Behaviour tests run twice: against RabbitMQ 4.3 and against rbfly's fake
broker (:py:mod:`rbfly.testing`). They pin down what an application sees
of a broker (publish, confirm, deduplication, offsets, subscriptions from
every offset specification, filters, single active consumers, super
streams, statistics, errors), so that the fake broker is held to what
RabbitMQ does, and a test an application writes against the fake broker
means the same against RabbitMQ.
"""

import asyncio
import contextlib
import time
import typing as tp
import uuid
from collections.abc import AsyncIterator

import pytest

from rbfly.amqp import MessageCtx
from rbfly.streams import (
    MessageFilter,
    Offset,
    PublisherBatchFast,
    PublisherPipelined,
    StreamsClient,
    SubEntryBatch,
    get_message_ctx,
    streams_client,
)
from rbfly.streams.error import (
    NoOffset,
    PreconditionFailed,
    StreamAlreadyExists,
    StreamDoesNotExist,
)
from rbfly.testing import FakeBroker

from .conftest import Opened, _client_with_stream, stored

@pytest.fixture(params=['rabbitmq', 'fake'])
async def broker_url(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """RabbitMQ 4.3, then the fake broker."""
    if request.param == 'rabbitmq':
        yield str(request.getfixturevalue('url43'))
    else:
        async with FakeBroker() as broker:
            yield broker.url

@pytest.fixture
async def client(broker_url: str, stream: str) -> AsyncIterator[StreamsClient]:
    """A client of each broker, with the test's stream created."""
    async for c in _client_with_stream(broker_url, stream):
        yield c

async def read(
        client: StreamsClient, stream: str, count: int, offset: Offset = Offset.FIRST,
        **options: tp.Any,
) -> list[tuple[int, object]]:
    """``count`` messages with their offsets (within 10 s)."""
    got: list[tuple[int, object]] = []
    if count == 0:
        return got
    async with asyncio.timeout(10):
        async for body in client.subscribe(stream, offset=offset, **options):
            got.append((get_message_ctx().stream_offset, body))
            if len(got) == count:
                break
    return got

async def publish(client: StreamsClient, stream: str, bodies: list[str]) -> None:
    async with client.publisher(stream, cls=PublisherBatchFast) as pub:
        for b in bodies:
            pub.batch(b)
        await pub.flush()

async def test_publish_and_read_back(client: StreamsClient, stream: str) -> None:
    """Messages get consecutive offsets from 0, in the order sent."""
    async with client.publisher(stream) as pub:
        for i in range(5):
            await pub.send('s{}'.format(i))
    await publish(client, stream, ['b{}'.format(i) for i in range(5)])
    async with client.publisher(stream, cls=PublisherPipelined) as pipe:
        for i in range(5):
            await pipe.send('p{}'.format(i))
        await pipe.flush()
    got = await read(client, stream, 15)
    assert got == list(enumerate(
        ['s{}'.format(i) for i in range(5)] + ['b{}'.format(i) for i in range(5)]
        + ['p{}'.format(i) for i in range(5)]
    ))

async def test_message_sections(client: StreamsClient, stream: str) -> None:
    """Properties and application properties come back as sent."""
    sent = time.time()
    async with client.publisher(stream) as pub:
        await pub.send(MessageCtx(b'bin', app_properties={'k': 'v', 'n': 3}))
    async with asyncio.timeout(10):
        async for _ in client.subscribe(stream, offset=Offset.FIRST):
            ctx = get_message_ctx()
            break
    assert (ctx.body, ctx.app_properties) == (b'bin', {'k': 'v', 'n': 3})
    # seconds since the epoch (not milliseconds), by this machine's clock
    assert abs(ctx.stream_timestamp - sent) < 60

async def test_deduplication(client: StreamsClient, stream: str) -> None:
    """
    A named publisher's ids at or below the last stored one are confirmed
    and dropped; the sequence is kept across publishers of the name.
    """
    async with client.publisher(stream, name='dedup', cls=PublisherBatchFast) as pub:
        for i in range(3):
            pub.batch('m{}'.format(i))
        await pub.flush()
    assert await client.query_publisher_sequence(stream, 'dedup') == 3
    async with client.publisher(stream, name='dedup') as pub:
        pub.message_id = 2  # the next message takes id 3: a duplicate
        await pub.send('again')
        await pub.send('m3')
    assert await client.query_publisher_sequence(stream, 'dedup') == 4
    got = await read(client, stream, 4)
    assert [b for _, b in got] == ['m0', 'm1', 'm2', 'm3']
    assert await client.query_publisher_sequence(stream, 'no-such-name') == 0

async def test_two_publishers_of_one_name(client: StreamsClient, stream: str) -> None:
    """A name is held by one publisher of a stream at a time."""
    async with client.publisher(stream, name='one'):
        with pytest.raises(PreconditionFailed):
            async with client.publisher(stream, name='one'):
                pass
    # the name is free again once the first publisher ended
    async with client.publisher(stream, name='one') as pub:
        await pub.send('x')
    assert await client.query_publisher_sequence(stream, 'one') == 1

async def test_name_on_another_connection(
        broker_url: str, client: StreamsClient, stream: str,
) -> None:
    """Another connection may declare a publisher of a name in use (RabbitMQ 4.3 allows it)."""
    other = streams_client(broker_url)
    try:
        async with client.publisher(stream, name='shared'), \
                other.publisher(stream, name='shared') as pub:
            await pub.send('x')
    finally:
        await other.disconnect()
    assert await client.query_publisher_sequence(stream, 'shared') == 1

async def test_first_publishing_id_zero(client: StreamsClient, stream: str) -> None:
    """A named publisher's first message may take id 0: stored, not a duplicate."""
    async with client.publisher(stream, name='zero') as pub:
        pub.message_id = -1  # the next message takes id 0
        await pub.send('id0')
        await pub.send('id1')
    assert await client.query_publisher_sequence(stream, 'zero') == 1
    assert [b for _, b in await read(client, stream, 2)] == ['id0', 'id1']

@pytest.mark.parametrize(('offset', 'expected'), [
    (Offset.FIRST, 0), (Offset.offset(7), 7), (Offset.offset(0), 0),
])
async def test_offset_specs(
        client: StreamsClient, stream: str, offset: Offset, expected: int,
) -> None:
    """A subscription receives from the first message its offset names."""
    await publish(client, stream, ['a{}'.format(i) for i in range(5)])
    await publish(client, stream, ['b{}'.format(i) for i in range(5)])
    got = await read(client, stream, 10 - expected, offset)
    assert [o for o, _ in got] == list(range(expected, 10))

async def test_offset_last_and_next(client: StreamsClient, stream: str) -> None:
    """``LAST`` starts at the last chunk; ``NEXT`` waits for new messages."""
    await publish(client, stream, ['a{}'.format(i) for i in range(5)])
    await publish(client, stream, ['b{}'.format(i) for i in range(5)])
    # the last chunk: in the second batch, which the broker may write as
    # more than one chunk (RabbitMQ 4.0 did), so from any of offsets 5 to 9
    last: list[tuple[int, object]] = []
    async with asyncio.timeout(10):
        async for body in client.subscribe(stream, offset=Offset.LAST):
            last.append((get_message_ctx().stream_offset, body))
            if last[-1][0] >= 9:
                break
    start = last[0][0]
    assert 5 <= start and last == [(i, 'b{}'.format(i - 5)) for i in range(start, 10)]

    got: list[tuple[int, object]] = []
    opened = Opened()

    async def consume() -> None:
        got.extend(await read(client, stream, 2, Offset.NEXT, on_state=opened))

    task = asyncio.create_task(consume())
    await opened.wait()  # subscribed: nothing old is delivered, the new is
    await publish(client, stream, ['n0', 'n1'])
    await asyncio.wait_for(task, 10)
    assert got == [(10, 'n0'), (11, 'n1')]

async def test_offset_timestamp(client: StreamsClient, stream: str) -> None:
    """A timestamp starts at the chunks written at or after it."""
    await publish(client, stream, ['old'])
    # wall time: 'old' is stamped at least a second before ``since``, past
    # the chunks' millisecond timestamps and the broker's rounding
    await asyncio.sleep(1.1)
    since = time.time()
    await publish(client, stream, ['new'])
    got = await read(client, stream, 1, Offset.timestamp(since))
    assert got == [(1, 'new')]

async def test_stored_offsets(client: StreamsClient, stream: str) -> None:
    """An offset stored under a reference is read back; none stored is ``NoOffset``."""
    with pytest.raises(NoOffset):
        await client.query_offset(stream, 'app')
    await publish(client, stream, ['a', 'b', 'c'])
    await client.write_offset(stream, 'app', 1)
    await stored(client, stream, 'app', 1)
    got = await read(client, stream, 1, Offset.reference('app'))
    assert got == [(2, 'c')]

async def test_stream_errors(client: StreamsClient, stream: str) -> None:
    """Typed errors for streams that do or do not exist."""
    missing = 'rbfly-missing-{}'.format(uuid.uuid4().hex[:8])
    with pytest.raises(StreamAlreadyExists):
        await client.create_stream(stream, exist_ok=False)
    with pytest.raises(PreconditionFailed):  # reserved names
        await client.create_stream('amq.rbfly-{}'.format(uuid.uuid4().hex[:8]))
    with pytest.raises(StreamDoesNotExist):
        await client.delete_stream(missing, missing_ok=False)
    with pytest.raises(StreamDoesNotExist):
        async with client.publisher(missing):
            pass
    with pytest.raises(StreamDoesNotExist):
        await read(client, missing, 1)
    assert await client.stream_exists(stream)
    assert not await client.stream_exists(missing)

async def test_stream_stats(client: StreamsClient, stream: str) -> None:
    """Statistics of an empty stream, then of a stream with two chunks."""
    empty = await client.stream_stats(stream)
    assert empty['first_chunk_id'] == -1
    assert empty['committed_chunk_id'] == -1
    await publish(client, stream, ['a', 'b'])
    await publish(client, stream, ['c'])
    stats = await client.stream_stats(stream)
    assert stats['first_chunk_id'] == 0
    assert stats['committed_chunk_id'] == 2

async def test_resolve_offset(client: StreamsClient, stream: str) -> None:
    """Where a subscription would start (RabbitMQ 4.3's ResolveOffsetSpec)."""
    await publish(client, stream, ['a', 'b'])
    await publish(client, stream, ['c'])
    assert await client.resolve_offset(stream, Offset.FIRST) == 0
    assert await client.resolve_offset(stream, Offset.LAST) == 2
    assert await client.resolve_offset(stream, Offset.NEXT) == 3
    assert await client.resolve_offset(stream, Offset.offset(1)) == 1

async def test_stop_at_end(client: StreamsClient, stream: str) -> None:
    """A bounded replay reads what was there when it started, then ends."""
    await publish(client, stream, ['a', 'b', 'c'])
    got = []
    async with asyncio.timeout(10):
        async for body in client.subscribe(stream, offset=Offset.FIRST, stop_at_end=True):
            got.append(body)
    assert got == ['a', 'b', 'c']

def colour(msg: MessageCtx) -> str | None:
    value = msg.app_properties.get('colour')
    return value if isinstance(value, str) else None

async def test_filter(client: StreamsClient, stream: str) -> None:
    """Only messages of the filter's values, and those without one if asked."""
    async with client.publisher(stream, cls=PublisherBatchFast, filter_extract=colour) as pub:
        for c in ('red', 'green', 'red', 'blue'):
            pub.batch(MessageCtx(c, app_properties={'colour': c}))
            await pub.flush()
    async with client.publisher(stream) as plain:
        await plain.send('none')
    red = await read(client, stream, 2, filter=MessageFilter(colour, {'red'}))
    assert red == [(0, 'red'), (2, 'red')]
    unfiltered = MessageFilter(colour, {'blue'}, match_unfiltered=True)
    got = await read(client, stream, 2, filter=unfiltered)
    assert got == [(3, 'blue'), (4, 'none')]

@pytest.mark.parametrize('compression', ['none', 'gzip', 'zstd'])
async def test_sub_entry_batches(client: StreamsClient, stream: str, compression: str) -> None:
    """Sub-entry batches, compressed or not, count one offset per message."""
    async with client.publisher(
            stream, cls=PublisherBatchFast, sub_entry_size=4, compression=compression) as pub:
        for i in range(10):
            pub.batch('z{}'.format(i))
        await pub.flush()
    async with client.publisher(stream) as single:
        await single.send(SubEntryBatch(['a', 'b'], 'gzip'))
    await publish(client, stream, ['after'])
    got = await read(client, stream, 13)
    assert got == list(enumerate(['z{}'.format(i) for i in range(10)] + ['a', 'b', 'after']))

async def test_single_active_consumer(
        broker_url: str, client: StreamsClient, stream: str,
) -> None:
    """The second consumer of a group waits; it takes over when the first ends."""
    await publish(client, stream, ['m{}'.format(i) for i in range(10)])
    other = streams_client(broker_url)
    first: list[object] = []
    second: list[object] = []
    second_subscribed = Opened()

    async def consume_second() -> None:
        async for body in other.subscribe(
                stream, name='group', single_active=True, offset=Offset.reference('group'),
                on_state=second_subscribed):
            second.append(body)
            if len(second) == 5:
                return
    try:
        async with asyncio.timeout(15):
            async for body in client.subscribe(
                    stream, name='group', single_active=True, offset=Offset.FIRST):
                first.append(body)
                if len(first) == 1:
                    task = asyncio.create_task(consume_second())
                    # the broker answered the second's Subscribe: a member of
                    # the group, inactive, before the first leaves
                    await second_subscribed.wait()
                if len(first) == 5:
                    await client.write_offset(stream, 'group')
                    await stored(client, stream, 'group', 4)
                    break
            assert not second
            await task
    finally:
        await other.disconnect()
    assert first == ['m{}'.format(i) for i in range(5)]
    assert second == ['m{}'.format(i) for i in range(5, 10)]

async def test_super_stream(broker_url: str) -> None:
    """Partitions, key routing, and each message on the partition of its key."""
    name = 'rbfly-super-{}'.format(uuid.uuid4().hex[:8])
    client = streams_client(broker_url)
    try:
        partitions = await client.create_super_stream(name, binding_keys=['eu', 'us'])
        assert partitions == ['{}-eu'.format(name), '{}-us'.format(name)]
        assert await client.super_stream_partitions(name) == partitions
        assert await client.route(name, 'us') == [partitions[1]]
        assert await client.route(name, 'asia') == []
        with pytest.raises(StreamAlreadyExists):
            await client.create_super_stream(name, binding_keys=['eu'], exist_ok=False)

        def region(msg: MessageCtx) -> str:
            return tp.cast(str, msg.app_properties['region'])

        async with client.super_stream_publisher(name, region, routing='key') as pub:
            for i, r in enumerate(['eu', 'us', 'eu']):
                await pub.send(MessageCtx(i, app_properties={'region': r}))
        assert await read(client, partitions[0], 2) == [(0, 0), (1, 2)]
        assert await read(client, partitions[1], 1) == [(0, 1)]
    finally:
        await client.delete_super_stream(name)
        await client.disconnect()
    assert not await client.super_stream_exists(name)

async def test_precondition_failed_on_duplicate_subscription_group(
        client: StreamsClient, stream: str,
) -> None:
    """A single active consumer needs a name: refused before the broker sees it."""
    with pytest.raises((ValueError, PreconditionFailed)):
        async for _ in client.subscribe(stream, single_active=True):
            pass

class Trace:
    """
    What single active consumers saw, in order, for a test to wait on:
    ``a+``/``a-`` when consumer ``a`` is told it is active or inactive, and
    the messages each received, as (partition, body).
    """
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.got: dict[str, list[tuple[str, object]]] = {}
        self._changed = asyncio.Event()

    def call(self, entry: str) -> None:
        self.calls.append(entry)
        self._changed.set()

    def chunk(self, who: str, stream: str, body: object) -> None:
        self.got.setdefault(who, []).append((stream, body))
        self._changed.set()

    def bodies(self, who: str) -> list[str]:
        """The bodies ``who`` received (strings), sorted."""
        return sorted(tp.cast(str, b) for _, b in self.got.get(who, []))

    async def until(self, condition: tp.Callable[[], bool], timeout: float = 15) -> None:
        """Wait until ``condition()`` holds (it is checked after each change)."""
        async with asyncio.timeout(timeout):
            while not condition():
                self._changed.clear()
                await self._changed.wait()

class Consumer:
    """
    A single active consumer of a group named ``group`` on a super stream
    (or a stream), on a client of its own, as an application writes it:
    told to step down, it stores the offset of the last message it read
    of each partition before it answers (its callback knows nothing but
    whether it is active, so it stores them all); it starts after the
    offset stored.

    :param gate: When given, stepping down waits for it before answering.
    """
    def __init__(
            self, url: str, who: str, trace: Trace, gate: asyncio.Event | None = None,
            **options: tp.Any,
    ) -> None:
        self.client = streams_client(url, connection_name=who, **options)
        self.who = who
        self.trace = trace
        self.gate = gate
        self.last: dict[str, int] = {}
        self.task: asyncio.Task[None] | None = None

    async def update(self, active: object) -> None:
        who = self.who
        self.trace.call('{}{}'.format(who, '+' if active else '-'))
        if not active:
            await self.store()
            if self.gate is not None:
                await self.gate.wait()
            self.trace.call('{} answers'.format(who))

    async def store(self) -> None:
        """Store the offset of the last message read of each partition."""
        for stream, offset in self.last.items():
            await self.client.write_offset(stream, 'group', offset)
            await stored(self.client, stream, 'group', offset)

    def start(self, super_stream: str | None = None, stream: str | None = None) -> None:
        """Join the group, on the super stream's partitions or on the stream."""
        self.task = asyncio.create_task(self._consume(super_stream, stream))

    async def _consume(self, super_stream: str | None, stream: str | None) -> None:
        options: dict[str, tp.Any] = {
            'name': 'group', 'single_active': True, 'offset': Offset.reference('group'),
            'consumer_update': self.update,
        }
        chunks = self.client.subscribe_super_stream_chunks(super_stream, **options) \
            if super_stream is not None \
            else self.client.subscribe_chunks(tp.cast(str, stream), **options)
        async with contextlib.aclosing(chunks):
            async for chunk in chunks:
                for msg in chunk:
                    self.last[chunk.stream] = msg.stream_offset
                    self.trace.chunk(self.who, chunk.stream, msg.body)

    async def leave(self) -> None:
        """Leave the group (unsubscribe)."""
        if self.task is not None:
            self.task.cancel()
            await asyncio.wait([self.task])

    async def close(self) -> None:
        await self.leave()
        await self.client.disconnect()

async def test_super_stream_single_active_consumers(broker_url: str) -> None:
    """
    Single active consumers of a super stream of three partitions, as
    RabbitMQ 4.3 spreads them: the active member of partition ``i`` is the
    member at index ``i % n`` of the ``n`` members in the order they
    joined. Alone, the first consumer gets every partition; when a second
    one joins, partition 1 moves to it: the first is told to step down,
    and the second is told it is active only after the first answered
    (having stored its offset), so it continues after that offset. When
    the first leaves, the second takes partitions 0 and 2 at once.
    """
    name = 'rbfly-sac-{}'.format(uuid.uuid4().hex[:8])
    admin = streams_client(broker_url)
    partitions = await admin.create_super_stream(name, 3)
    trace = Trace()
    a, b = Consumer(broker_url, 'a', trace), Consumer(broker_url, 'b', trace)

    async def publish_each(tag: str) -> None:
        for i, p in enumerate(partitions):
            async with admin.publisher(p) as pub:
                await pub.send('{}-{}'.format(tag, i))

    try:
        a.start(name)
        await trace.until(lambda: trace.calls == ['a+'] * 3)
        await publish_each('one')
        await trace.until(lambda: len(trace.bodies('a')) == 3)

        b.start(name)
        await trace.until(lambda: 'b+' in trace.calls)
        # partition 1 (1 % 2 members): a steps down, answers, then b is active
        assert trace.calls[3:] == ['a-', 'a answers', 'b+']
        await publish_each('two')
        await trace.until(lambda: len(trace.bodies('a')) == 5 and len(trace.bodies('b')) == 1)
        assert trace.got['b'] == [(partitions[1], 'two-1')]  # after the offset a stored

        await a.store()  # it read partitions 0 and 2 up to here
        await a.leave()
        # an active member that leaves needs no step down: b is active at once
        await trace.until(lambda: trace.calls.count('b+') == 3)
        assert trace.calls[3:] == ['a-', 'a answers', 'b+', 'b+', 'b+']
        await publish_each('three')
        await trace.until(lambda: len(trace.bodies('b')) == 4)
        assert trace.bodies('b') == ['three-0', 'three-1', 'three-2', 'two-1']
        assert trace.bodies('a') == ['one-0', 'one-1', 'one-2', 'two-0', 'two-2']
    finally:
        await a.close()
        await b.close()
        await admin.delete_super_stream(name)
        await admin.disconnect()

async def test_partition_group_of_another_index(broker_url: str) -> None:
    """
    A group on a partition is of the partition's index: a subscription
    naming no super stream (a plain stream's member) may not join it.
    """
    name = 'rbfly-sac-{}'.format(uuid.uuid4().hex[:8])
    admin = streams_client(broker_url)
    partitions = await admin.create_super_stream(name, 2)
    trace = Trace()
    a = Consumer(broker_url, 'a', trace)
    try:
        a.start(name)
        await trace.until(lambda: trace.calls == ['a+'] * 2)
        with pytest.raises(PreconditionFailed):
            async for _ in admin.subscribe(partitions[0], name='group', single_active=True):
                pass
    finally:
        await a.close()
        await admin.delete_super_stream(name)
        await admin.disconnect()
