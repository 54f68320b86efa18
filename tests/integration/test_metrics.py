"""
The client's metrics against a real broker: counters of published,
confirmed, rejected and consumed messages, chunks and connections, and the
gauges of the moment; per stream, the consumers' lag, messages, rate and
end-to-end latency, the publishers' counts and confirmation latency; all
of them through OpenTelemetry.
"""

import asyncio
import typing as tp
from contextlib import aclosing

import pytest

from rbfly.error import AMQPEncodeError
from rbfly.streams import (
    CreditOnTake,
    Offset,
    PublisherBatchFast,
    PublisherPipelined,
    ResourceState,
    StreamsClient,
    streams_client,
)
from rbfly.streams.metrics import BOUNDS, ConsumerMetrics

from .conftest import Opened
from .proxy import Proxy

async def test_metrics(proxy: Proxy, proxied: StreamsClient, stream: str) -> None:
    """Publishing, a rejected message, consuming, a lost connection."""
    c = proxied
    async with c:
        m = c.metrics()
        assert (m.published, m.connections, m.connections_opened, m.publishers) == (0, 0, 0, 0)

        async with c.publisher(stream, cls=PublisherBatchFast) as batch:
            for i in range(100):
                batch.batch(i)
            await batch.flush()
            m = c.metrics()
            assert (m.published, m.confirmed, m.errored) == (100, 100, 0)
            assert (m.connections, m.connections_opened, m.publishers) == (1, 1, 1)
            assert m.outstanding_confirms == 0

        async with c.publisher(stream, cls=PublisherPipelined) as pipelined:
            rejected = []
            pipelined.add_listener(on_error=lambda pid, ex: rejected.append(pid))
            for i in range(100, 150):
                await pipelined.send(i)
            await pipelined.send(object())  # type: ignore[arg-type]  # cannot be encoded
            with pytest.raises(AMQPEncodeError):
                await pipelined.flush()
            assert len(rejected) == 1
            m = c.metrics()
            assert (m.published, m.confirmed, m.errored) == (150, 150, 1)

            assert proxy.cut() == 1
            for i in range(150, 200):
                await pipelined.send(i)
            await pipelined.flush()
        m = c.metrics()
        assert m.confirmed == 200
        # the 50 sent around the cut are sent again on the new connection
        assert 200 <= m.published <= 250
        assert (m.connections_opened, m.connections_lost, m.publishers) == (2, 1, 0)

        received = []
        async with asyncio.timeout(30), \
                aclosing(c.subscribe(stream, offset=Offset.FIRST)) as bodies:
            async for body in bodies:
                received.append(body)
                if len(received) == 1:
                    assert c.metrics().subscriptions == 1
                if len(received) == 200:
                    break
        assert received == list(range(200))
        m = c.metrics()
        assert m.consumed >= 200  # the last chunk may hold more
        assert m.chunks >= 3  # at least a chunk per publisher's flush
        assert m.chunk_bytes > 200 * 10
        assert m.subscriptions == 0
    m = c.metrics()
    assert m.connections == 0

@pytest.mark.parametrize('amqp', [True, False])
async def test_consumed_counts_from_the_offset(
        client: StreamsClient, stream: str, amqp: bool,
) -> None:
    """Records before the subscription's offset are not counted as consumed."""
    async with client.publisher(stream, cls=PublisherBatchFast) as publisher:
        for i in range(10):
            publisher.batch(str(i))
        await publisher.flush()  # one chunk of 10 messages
    before = client.metrics()
    async with asyncio.timeout(30), \
            aclosing(client.subscribe(stream, offset=Offset.offset(7), amqp=amqp)) as bodies:
        async for _ in bodies:
            break
    m = client.metrics()
    assert m.chunks - before.chunks == 1
    assert m.consumed - before.consumed == 3

async def test_stream_metrics(client4: StreamsClient, stream: str) -> None:
    """
    Per stream: what each stream's publishers sent and the broker
    confirmed, with confirmation latencies; a named consumer's messages,
    lag, rate and end-to-end latency while it reads, what stays after it
    ended, and an unnamed consumer of another stream beside it (RabbitMQ
    4.x: the broker names the committed chunk the lag is counted from).
    """
    c = client4
    other = stream + '-other'
    await c.create_stream(other)
    try:
        async with c.publisher(stream, cls=PublisherBatchFast) as batch:
            for _ in range(3):  # 3 chunks of 100
                for i in range(100):
                    batch.batch(i)
                await batch.flush()
            publishing = {p.stream: p for p in c.stream_metrics().publishers}
            assert publishing[stream].publishers == 1
        async with c.publisher(other, cls=PublisherPipelined) as pipelined:
            for i in range(50):
                await pipelined.send(i)
            await pipelined.flush()

        m = c.stream_metrics()
        assert m.consumers == ()
        publishing = {p.stream: p for p in m.publishers}
        assert set(publishing) == {stream, other}
        p = publishing[stream]
        assert (p.publishers, p.published, p.confirmed, p.errored) == (0, 300, 300, 0)
        assert p.outstanding_confirms == 0
        # the first frame of a publisher is timed, at least
        assert 1 <= p.confirm_latency.count <= 3
        assert 0 < p.confirm_latency.sum < 30
        q = publishing[other]
        assert (q.published, q.confirmed, q.errored) == (50, 50, 0)
        assert q.confirm_latency.count >= 1
        assert m.confirm_latency.count == p.confirm_latency.count + q.confirm_latency.count
        assert c.metrics().published == 350

        # the broker writes a flush's 100 messages in chunks of up to 64
        seen: list[tuple[ConsumerMetrics, int, int]] = []  # taken, expected lag
        taken = 0
        chunks = c.subscribe_chunks(
            stream, offset=Offset.FIRST, name='reader', flow=CreditOnTake(credit=1),
        )
        async with asyncio.timeout(30), aclosing(chunks):
            async for chunk in chunks:
                (consumer,) = c.stream_metrics().consumers
                taken += len(chunk)
                # to the first offset of the last committed chunk: a lower bound
                committed = chunk.committed_chunk_id
                assert committed is not None
                seen.append((consumer, taken, max(0, committed + 1 - taken)))
                if chunk[-1].stream_offset == 299:
                    break
        assert len(seen) >= 3
        assert {(s.stream, s.name, s.subscriptions) for s, _, _ in seen} \
            == {(stream, 'reader', 1)}
        assert [s.consumed for s, _, _ in seen] == [n for _, n, _ in seen]
        assert [s.lag for s, _, _ in seen] == [lag for _, _, lag in seen]
        assert seen[0][0].lag > 0 and seen[-1][0].lag == 0
        assert all(s.rate > 0 for s, _, _ in seen)
        latency = seen[0][0].end_to_end_latency
        assert latency.count == 1  # the first chunk; the others may come sooner
        assert 0 <= latency.sum < 60  # the broker's clock is this machine's
        assert latency.bounds == BOUNDS

        received = 0
        async with asyncio.timeout(30), aclosing(c.subscribe(other, offset=Offset.FIRST)) as bodies:
            async for _ in bodies:
                received += 1
                if received == 50:
                    break
        consumers = {(k.stream, k.name): k for k in c.stream_metrics().consumers}
        assert set(consumers) == {(stream, 'reader'), (other, None)}
        reader = consumers[stream, 'reader']
        assert (reader.subscriptions, reader.consumed, reader.lag) == (0, 300, 0)
        assert consumers[other, None].consumed == 50
        assert consumers[other, None].end_to_end_latency.count >= 1
        assert c.metrics().consumed == 350
    finally:
        await c.delete_stream(other)

async def test_stream_metrics_partitions(client4: StreamsClient, stream: str) -> None:
    """A super stream's metrics are its partitions': publishers and consumers."""
    super_stream = stream + '-super'
    partitions = await client4.create_super_stream(super_stream, 2)
    try:
        async with client4.super_stream_publisher(
                super_stream, str, cls=PublisherBatchFast) as publisher:
            for i in range(20):
                publisher.batch(i)
            await publisher.flush()
        count = 0
        messages = client4.subscribe_super_stream(
            super_stream, offset=Offset.FIRST, name='group',
        )
        async with asyncio.timeout(30), aclosing(messages):
            async for _ in messages:
                count += 1
                if count == 20:
                    break
        m = client4.stream_metrics()
        assert {p.stream for p in m.publishers} == set(partitions)
        assert sum(p.published for p in m.publishers) == 20
        assert sum(p.confirmed for p in m.publishers) == 20
        assert {(k.stream, k.name) for k in m.consumers} == {(p, 'group') for p in partitions}
        assert sum(k.consumed for k in m.consumers) == 20
        assert all(k.consumed > 0 and k.end_to_end_latency.count >= 1 for k in m.consumers)
    finally:
        await client4.delete_super_stream(super_stream)

async def test_subscription_states(client4: StreamsClient, url4: str, stream: str) -> None:
    """
    The states of a consumer group's members (RabbitMQ 4.x): the first is
    active, took the chunks of the 10 messages (one, or more: how the broker
    writes them into chunks is its own) and the broker holds the credit it
    gave back; the second is a member the broker does not send to; neither
    buffers anything; once ended, none is left.
    """
    async with client4.publisher(stream, cls=PublisherBatchFast) as batch:
        for i in range(10):
            batch.batch(i)
        await batch.flush()
    assert client4.subscription_states() == []
    options: tp.Any = {'offset': Offset.FIRST, 'name': 'g', 'single_active': True,
                       'flow': CreditOnTake(credit=1)}
    opened = Opened()
    async with streams_client(url4) as other, asyncio.timeout(30), \
            aclosing(client4.subscribe_chunks(stream, **options)) as first, \
            aclosing(other.subscribe_chunks(stream, on_state=opened, **options)) as second:
        taken: list[int] = []
        while len(taken) < 10:
            taken.extend(m.stream_offset for m in await anext(first))
        assert taken == list(range(10))
        waiting = asyncio.create_task(anext(second))  # (never active: cancelled)
        await opened.wait()
        (active,) = client4.subscription_states()
        (inactive,) = other.subscription_states()
        waiting.cancel()
        await asyncio.wait([waiting])
        assert (active.stream, active.name, active.state, active.connected) \
            == (stream, 'g', ResourceState.OPEN, True)
        assert (active.single_active, active.active, active.updating) == (True, True, 0)
        assert (active.next_offset, active.received_offset) == (10, 10)
        assert (active.buffered_chunks, active.buffered_bytes, active.credits) == (0, 0, 1)
        assert (inactive.state, inactive.connected, inactive.single_active) \
            == (ResourceState.OPEN, True, True)
        assert (inactive.active, inactive.received_offset, inactive.buffered_chunks) \
            == (False, None, 0)
    assert client4.subscription_states() == []

Key: tp.TypeAlias = tuple[str, frozenset[tuple[str, tp.Any]]]
"""An instrument's name and the attributes of a data point."""

async def test_opentelemetry(client: StreamsClient, stream: str) -> None:
    """
    The client's metrics through OpenTelemetry (the SDK's in-memory
    reader): what was published and consumed, and the gauges of the
    moment, as totals (one data point each, as before per-stream metrics
    came); per stream, with the messaging attributes, the counts and the
    latency histograms.
    """
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import (
        HistogramDataPoint,
        InMemoryMetricReader,
        NumberDataPoint,
    )

    from rbfly.streams.otel import instrument

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    instrument(client, provider.get_meter('test'), {'client': 'one'})
    attributes = {
        'client': 'one', 'messaging.system': 'rabbitmq', 'messaging.destination.name': stream,
    }
    def collect() -> tuple[dict[str, int], dict[Key, float], dict[Key, HistogramDataPoint]]:
        data = reader.get_metrics_data()
        assert data is not None
        values = {}
        streams: dict[Key, float] = {}
        histograms: dict[Key, HistogramDataPoint] = {}
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    name = metric.name.removeprefix('rabbitmq.stream.')
                    if name.startswith(('consumer.', 'publisher.')):
                        for point in metric.data.data_points:
                            key = (name, frozenset((point.attributes or {}).items()))
                            if isinstance(point, HistogramDataPoint):
                                histograms[key] = point
                            else:
                                assert isinstance(point, NumberDataPoint)
                                streams[key] = point.value
                        continue
                    (point,) = metric.data.data_points
                    assert isinstance(point, NumberDataPoint)
                    assert dict(point.attributes or {}) == {'client': 'one'}
                    values[name] = int(point.value)
        return values, streams, histograms

    def key(name: str, **extra: str) -> Key:
        return (name, frozenset({**attributes, **extra}.items()))

    async with client.publisher(stream, cls=PublisherBatchFast) as publisher:
        for i in range(150):
            publisher.batch(i)
        await publisher.flush()
        values, streams, _ = collect()
        assert values['publishers'] == 1
        assert values['outstanding_publish_confirmations'] == 0
        assert streams[key('publisher.outstanding_publish_confirmations')] == 0
    n = 0
    async with aclosing(client.subscribe(stream, offset=Offset.FIRST, name='group')) as bodies:
        async for _ in bodies:
            n += 1
            if n == 150:
                break
    values, streams, histograms = collect()
    assert values['published'] == values['confirmed'] == values['consumed'] == 150
    assert values['errored'] == 0 and values['chunks'] >= 1 and values['chunk_bytes'] > 0
    assert values['connections'] == values['connections_opened'] == 1
    assert values['publishers'] == values['subscriptions'] == 0
    assert values['buffered_chunks'] == values['buffered_bytes'] == values['consumer_lag'] == 0
    assert values['chunks_skipped'] == values['messages_lost'] == 0
    assert values['undecodable'] == values['handled'] == values['dead_lettered'] == 0
    assert values['handler_retries'] == values['handler_skipped'] == 0
    assert len(values) == 22

    group = {'messaging.consumer.group.name': 'group'}
    assert streams == {
        key('publisher.published'): 150,
        key('publisher.confirmed'): 150,
        key('publisher.errored'): 0,
        key('publisher.outstanding_publish_confirmations'): 0,
        key('consumer.consumed', **group): 150,
        key('consumer.lag', **group): 0,
        key('consumer.rate', **group): streams[key('consumer.rate', **group)],
    }
    assert streams[key('consumer.rate', **group)] > 0
    assert set(histograms) == {
        key('publisher.confirm_latency'), key('consumer.end_to_end_latency', **group),
    }
    for point in histograms.values():
        assert point.count >= 1
        assert tuple(point.explicit_bounds) == BOUNDS
        assert sum(point.bucket_counts) == point.count
    # the same samples as the client's own histograms
    m = client.stream_metrics()
    (publishing,) = m.publishers
    assert histograms[key('publisher.confirm_latency')].count \
        == publishing.confirm_latency.count
    provider.shutdown()
