"""
The client's metrics against a real broker: counters of published,
confirmed, rejected and consumed messages, chunks and connections, and the
gauges of the moment.
"""

import asyncio
from contextlib import aclosing

import pytest

from rbfly.error import AMQPEncodeError
from rbfly.streams import (
    Offset,
    PublisherBatchFast,
    PublisherPipelined,
    StreamsClient,
)

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

async def test_opentelemetry(client: StreamsClient, stream: str) -> None:
    """
    The client's metrics through OpenTelemetry (the SDK's in-memory
    reader): what was published and consumed, and the gauges of the moment.
    """
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader, NumberDataPoint

    from rbfly.streams.otel import instrument

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    instrument(client, provider.get_meter('test'), {'client': 'one'})

    def collect() -> dict[str, int]:
        data = reader.get_metrics_data()
        assert data is not None
        values = {}
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    (point,) = metric.data.data_points
                    assert isinstance(point, NumberDataPoint)
                    assert dict(point.attributes or {}) == {'client': 'one'}
                    values[metric.name.removeprefix('rabbitmq.stream.')] = int(point.value)
        return values

    async with client.publisher(stream, cls=PublisherBatchFast) as publisher:
        for i in range(150):
            publisher.batch(i)
        await publisher.flush()
        values = collect()
        assert values['publishers'] == 1
        assert values['outstanding_publish_confirmations'] == 0
    n = 0
    async with aclosing(client.subscribe(stream, offset=Offset.FIRST)) as bodies:
        async for _ in bodies:
            n += 1
            if n == 150:
                break
    values = collect()
    assert values['published'] == values['confirmed'] == values['consumed'] == 150
    assert values['errored'] == 0 and values['chunks'] >= 1 and values['chunk_bytes'] > 0
    assert values['connections'] == values['connections_opened'] == 1
    assert values['publishers'] == values['subscriptions'] == 0
    assert values['buffered_chunks'] == values['buffered_bytes'] == values['consumer_lag'] == 0
    assert values['chunks_skipped'] == 0
    assert len(values) == 16
    provider.shutdown()
