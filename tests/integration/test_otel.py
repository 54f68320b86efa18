"""
Instrumentation in one call (``rbfly.streams.otel.instrument``) against
RabbitMQ 3.10 and 4.3: every publishing and consuming path traced with the
messaging conventions, the process spans children of the spans that
published their messages across the stream, batches linked to their
messages, the messaging metrics recorded; uninstrumented, nothing.
"""

import contextlib
import typing as tp
from collections.abc import AsyncIterator

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from rbfly.amqp import MessageCtx, get_message_ctx
from rbfly.streams import (
    Offset,
    Publisher,
    PublisherBatchFast,
    PublisherBatchLimit,
    PublisherBin,
    PublisherPipelined,
    StreamsClient,
    SubEntryBatch,
    streams_client,
    tracing,
)
from rbfly.streams.otel import InstrumentationError, instrument, uninstrument
from rbfly.streams.pipe import pipe
from rbfly.streams.serializers import JSONSerializer
from rbfly.types import Symbol

class Telemetry:
    """An instrumented client's spans and metrics, in memory."""
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.tracer = self.tracer_provider.get_tracer('test')

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        found = self.exporter.get_finished_spans()
        return [s for s in found if name is None or s.name == name]

    def points(self, metric: str) -> list[tp.Any]:
        data = self.reader.get_metrics_data()
        assert data is not None
        return [
            p for rm in data.resource_metrics for sm in rm.scope_metrics
            for m in sm.metrics if m.name == metric for p in m.data.data_points
        ]

@pytest.fixture(params=['3.10', '4.3'])
def broker_url(request: pytest.FixtureRequest) -> str:
    """RabbitMQ 3.10 and 4.3 in turn."""
    return str(request.getfixturevalue('url' if request.param == '3.10' else 'url43'))

@pytest.fixture
def telemetry() -> Telemetry:
    return Telemetry()

async def instrumented(
        url: str, stream: str, telemetry: Telemetry,
) -> AsyncIterator[StreamsClient]:
    """An instrumented client of ``url``, with the test's stream created."""
    client = streams_client(url)
    instrument(client, tracer_provider=telemetry.tracer_provider,
               meter_provider=telemetry.meter_provider)
    await client.create_stream(stream)
    try:
        yield client
    finally:
        await client.delete_stream(stream)
        await client.disconnect()

@pytest.fixture
async def traced(
        broker_url: str, stream: str, telemetry: Telemetry,
) -> AsyncIterator[StreamsClient]:
    """An instrumented client of each broker, with the test's stream created."""
    async for client in instrumented(broker_url, stream, telemetry):
        yield client

def attrs(span: ReadableSpan) -> dict[str, tp.Any]:
    assert span.attributes is not None
    return dict(span.attributes)

def check_send(span: ReadableSpan, stream: str, operation: str, kind: SpanKind) -> None:
    """A send span: its name, kind and the conventions' attributes."""
    assert span.name == '{} {}'.format(operation, stream)
    assert span.kind == kind
    found = attrs(span)
    assert found['messaging.system'] == 'rabbitmq'
    assert found['messaging.operation.type'] == 'send'
    assert found['messaging.operation.name'] == operation
    assert found['messaging.destination.name'] == stream
    assert found['server.address'] == 'localhost'
    assert isinstance(found['server.port'], int)

async def read(
        client: StreamsClient, stream: str, count: int, amqp: bool = True,
) -> list[MessageCtx]:
    """``count`` messages of a stream, from the first, by ``async for``."""
    found = []
    async with contextlib.aclosing(
            client.subscribe(stream, offset=Offset.FIRST, timeout=30, amqp=amqp)) as bodies:
        async for _ in bodies:
            found.append(get_message_ctx())
            if len(found) == count:
                break
    return found

def parent_id(span: ReadableSpan) -> int:
    assert span.parent is not None
    return span.parent.span_id

async def test_send_then_process(traced: StreamsClient, stream: str, telemetry: Telemetry) -> None:
    """
    A message sent alone carries its send span's context; its process
    span, in ``async for``, is that span's child (and linked to it), and
    current in the loop's body.
    """
    with telemetry.tracer.start_as_current_span('request') as request:
        async with traced.publisher(stream) as publisher:
            await publisher.send({'n': 1})
    (send,) = telemetry.spans('send ' + stream)
    check_send(send, stream, 'send', SpanKind.PRODUCER)
    assert parent_id(send) == request.get_span_context().span_id
    inner = []
    async with contextlib.aclosing(
            traced.subscribe(stream, offset=Offset.FIRST, timeout=30)) as bodies:
        async for body in bodies:
            assert body == {'n': 1}
            with telemetry.tracer.start_as_current_span('handle'):
                inner.append(get_message_ctx())
            break
    (process,) = telemetry.spans('process ' + stream)
    assert process.kind == SpanKind.CONSUMER
    assert process.context.trace_id == send.context.trace_id
    assert parent_id(process) == send.context.span_id
    assert [link.context.span_id for link in process.links] == [send.context.span_id]
    found = attrs(process)
    assert found['messaging.operation.type'] == 'process'
    assert found['messaging.destination.name'] == stream
    (handle,) = telemetry.spans('handle')
    assert parent_id(handle) == process.context.span_id
    # the context as the Java client writes it, in the annotations
    assert Symbol('traceparent') in inner[0].annotations

async def test_batches_linked(traced: StreamsClient, stream: str, telemetry: Telemetry) -> None:
    """
    ``send_many``, ``batch``/``flush`` of both batch publishers, the
    pipelined publisher and sub-entry batches: a create span per message
    (its context in the message), a send span per batch linked to them
    with the batch's count; each message processed as the child of its
    create span.
    """
    async with traced.publisher(stream, cls=Publisher) as publisher:
        await publisher.send_many(['a', 'b'])
        await publisher.send(SubEntryBatch(['c', 'd']))
    async with traced.publisher(stream, cls=PublisherBatchFast) as fast:
        fast.batch('e')
        fast.batch('f')
        await fast.flush()
    async with traced.publisher(stream, cls=PublisherBatchLimit) as limit:
        await limit.batch('g', max_len=2)
        await limit.batch('h', max_len=2)
        await limit.batch('i', max_len=2)  # flushes g and h
        await limit.flush()
    async with traced.publisher(stream, cls=PublisherBatchFast, sub_entry_size=2) as sub:
        await sub.send_many(['j', 'k'])
    async with traced.publisher(stream, cls=PublisherPipelined) as pipelined:
        await pipelined.send('l')
        await pipelined.send_many(['m', 'n'])
    sends = [s for s in telemetry.spans() if attrs(s)['messaging.operation.type'] == 'send']
    counts = [(attrs(s)['messaging.operation.name'], attrs(s).get(
        'messaging.batch.message_count')) for s in sends]
    assert counts == [
        ('send_many', 2), ('send', 2), ('flush', 2), ('flush', 2), ('flush', 1),
        ('flush', 2), ('send', None), ('send_many', 2),
    ]
    creates = {s.context.span_id: s for s in telemetry.spans('create ' + stream)}
    assert len(creates) == 13
    for span in sends:
        if attrs(span).get('messaging.batch.message_count') is not None:
            assert span.kind == SpanKind.CLIENT
            linked = [link.context.span_id for link in span.links]
            assert len(linked) == attrs(span)['messaging.batch.message_count']
            assert set(linked) <= set(creates)
    by_body: dict[tp.Any, MessageCtx] = {}
    for msg in await read(traced, stream, 14):
        by_body[msg.body] = msg
    processes = telemetry.spans('process ' + stream)
    assert len(processes) == 14
    parents = {parent_id(p) for p in processes}
    (single,) = [s for s in sends if attrs(s)['messaging.operation.name'] == 'send'
                 and 'messaging.batch.message_count' not in attrs(s)]
    assert parents == set(creates) | {single.context.span_id}
    assert sorted(map(str, by_body)) == list('abcdefghijklmn')

async def test_serializer(traced: StreamsClient, stream: str, telemetry: Telemetry) -> None:
    """
    A traced publisher given a serializer: each object is serialized,
    then traced (the message sent carries its span's context and the
    content type); the publisher is an instance of its class.
    """
    serializer = JSONSerializer()
    async with traced.publisher(stream, serializer=serializer) as publisher:
        assert isinstance(publisher, Publisher)
        await publisher.send({'n': 1})
        await publisher.send_many([{'n': 2}])
    async with traced.publisher(stream, cls=PublisherBatchFast, serializer=serializer) as fast:
        assert isinstance(fast, PublisherBatchFast)
        fast.batch({'n': 3})
        await fast.flush()
    names = [attrs(s)['messaging.operation.name'] for s in telemetry.spans()
             if attrs(s)['messaging.operation.type'] == 'send']
    assert names == ['send', 'send_many', 'flush']
    assert len(telemetry.spans('create ' + stream)) == 2
    found = []
    async with contextlib.aclosing(traced.subscribe(
            stream, offset=Offset.FIRST, timeout=30, serializer=serializer)) as objects:
        async for obj in objects:
            msg = get_message_ctx()
            assert msg.properties.content_type == Symbol('application/json')
            assert Symbol('traceparent') in msg.annotations
            found.append(obj)
            if len(found) == 3:
                break
    assert found == [{'n': 1}, {'n': 2}, {'n': 3}]

async def test_bin_publisher(traced: StreamsClient, stream: str, telemetry: Telemetry) -> None:
    """A raw binary publisher has its spans; its messages carry nothing."""
    async with traced.publisher(stream, cls=PublisherBin) as publisher:
        await publisher.send(b'raw')
    (send,) = telemetry.spans('send ' + stream)
    check_send(send, stream, 'send', SpanKind.PRODUCER)
    (msg,) = await read(traced, stream, 1, amqp=False)
    assert msg.body == b'raw'
    (process,) = telemetry.spans('process ' + stream)
    assert process.parent is None or process.parent.span_id != send.context.span_id

async def test_windows_and_chunks(
        traced: StreamsClient, stream: str, telemetry: Telemetry,
) -> None:
    """A window, a chunk: a process span linked to each of its messages' contexts."""
    async with traced.publisher(stream) as publisher:
        for i in range(3):
            await publisher.send(i)
    sends = {s.context.span_id for s in telemetry.spans('send ' + stream)}
    async with traced.subscribe_windows(
            stream, offset=Offset.FIRST, max_messages=3, max_wait=None) as windows:
        async for window in windows:
            assert [m.body for m in window] == [0, 1, 2]
            break
    async with contextlib.aclosing(
            traced.subscribe_chunks(stream, offset=Offset.FIRST)) as chunks:
        n = 0
        async for chunk in chunks:
            n += len(chunk)
            if n == 3:
                break
    processes = telemetry.spans('process ' + stream)
    window_span = processes[0]
    assert attrs(window_span)['messaging.batch.message_count'] == 3
    assert {link.context.span_id for link in window_span.links} == sends
    linked = {link.context.span_id for p in processes[1:] for link in p.links}
    assert linked == sends
    assert sum(attrs(p)['messaging.batch.message_count'] for p in processes[1:]) == 3
    assert all(p.kind == SpanKind.CONSUMER for p in processes)
    consumed = telemetry.points('messaging.client.consumed.messages')
    assert sum(p.value for p in consumed) == 6

async def test_settle(traced: StreamsClient, stream: str, telemetry: Telemetry) -> None:
    """An offset commit: a settle span naming the reference."""
    async with traced.publisher(stream) as publisher:
        await publisher.send('x')
    await traced.commit_offset(stream, 'group-a', 0)
    (settle,) = telemetry.spans('commit_offset ' + stream)
    found = attrs(settle)
    assert found['messaging.operation.type'] == 'settle'
    assert found['messaging.consumer.group.name'] == 'group-a'
    assert settle.kind == SpanKind.CLIENT

async def test_metrics(traced: StreamsClient, stream: str, telemetry: Telemetry) -> None:
    """Sent and consumed messages counted, the durations recorded, with the attributes."""
    async with traced.publisher(stream) as publisher:
        await publisher.send('x')
        await publisher.send_many(['y', 'z'])
    await read(traced, stream, 3)
    sent = telemetry.points('messaging.client.sent.messages')
    assert sum(p.value for p in sent) == 3
    assert {p.attributes['messaging.operation.name'] for p in sent} == {'send', 'send_many'}
    assert all(p.attributes['messaging.destination.name'] == stream for p in sent)
    (consumed,) = telemetry.points('messaging.client.consumed.messages')
    assert consumed.value == 3
    durations = telemetry.points('messaging.client.operation.duration')
    assert sum(p.count for p in durations) == 2
    (process,) = telemetry.points('messaging.process.duration')
    assert process.count == 3  # (the last one ended with the iteration)

async def test_errors_typed(traced: StreamsClient, stream: str, telemetry: Telemetry) -> None:
    """A send failing: its span and its metrics name the error's type."""
    async with traced.publisher(stream, cls=PublisherBin) as publisher:
        with pytest.raises(TypeError):
            await publisher.send('not bytes')  # type: ignore[arg-type]
    (send,) = telemetry.spans('send ' + stream)
    assert attrs(send)['error.type'] == 'TypeError'
    (sent,) = telemetry.points('messaging.client.sent.messages')
    assert sent.attributes['error.type'] == 'TypeError'

async def test_uninstrument(traced: StreamsClient, stream: str, telemetry: Telemetry) -> None:
    """Uninstrumented: the client's publishers and subscriptions are its classes', untraced."""
    with pytest.raises(InstrumentationError):
        instrument(traced)
    assert uninstrument(traced)
    assert not uninstrument(traced)
    async with traced.publisher(stream) as publisher:
        assert type(publisher) is Publisher
        await publisher.send('x')
    await read(traced, stream, 1)
    assert telemetry.spans() == []

async def test_explicit_tracing_reads_it(
        traced: StreamsClient, stream: str, telemetry: Telemetry,
) -> None:
    """The context written by the instrumentation is what ``tracing.process`` continues."""
    async with traced.publisher(stream) as publisher:
        await publisher.send('x')
    (send,) = telemetry.spans('send ' + stream)
    uninstrument(traced)
    async for _ in traced.subscribe(stream, offset=Offset.FIRST, timeout=30):
        with tracing.process(tracer=telemetry.tracer):
            pass
        break
    (process,) = telemetry.spans(stream + ' process')
    assert parent_id(process) == send.context.span_id

async def test_context_in_app_properties(
        url: str, stream: str, telemetry: Telemetry,
) -> None:
    """``context_in='app_properties'``: the context as a property; read back from there."""
    client = streams_client(url)
    instrument(client, tracer_provider=telemetry.tracer_provider,
               meter_provider=telemetry.meter_provider, context_in='app_properties')
    await client.create_stream(stream)
    try:
        async with client.publisher(stream) as publisher:
            await publisher.send('x')
        (msg,) = await read(client, stream, 1)
        assert 'traceparent' in msg.app_properties
        assert Symbol('traceparent') not in (msg.annotations or {})
        (send,) = telemetry.spans('send ' + stream)
        (process,) = telemetry.spans('process ' + stream)
        assert parent_id(process) == send.context.span_id
    finally:
        await client.delete_stream(stream)
        await client.disconnect()

@pytest.fixture
async def traced43(url43: str, stream: str, telemetry: Telemetry) -> AsyncIterator[StreamsClient]:
    """An instrumented client of RabbitMQ 4.3 (``stop_at_end``)."""
    async for client in instrumented(url43, stream, telemetry):
        yield client

async def test_pipe(traced43: StreamsClient, stream: str, telemetry: Telemetry) -> None:
    """
    ``pipe``: each output's send span is the child of its input's process
    span, itself the child of the input's send span: one trace across
    two streams.
    """
    target = stream + '-out'
    await traced43.create_stream(target)
    try:
        async with traced43.publisher(stream) as publisher:
            await publisher.send('in')
        assert await pipe(
            traced43, stream, target, lambda m: 'out', name='p', stop_at_end=True) == 1
        (source,) = telemetry.spans('send ' + stream)
        (output,) = telemetry.spans('send ' + target)
        (process,) = telemetry.spans('process ' + stream)
        assert parent_id(process) == source.context.span_id
        assert parent_id(output) == process.context.span_id
        assert output.context.trace_id == source.context.trace_id
    finally:
        await traced43.delete_stream(target)

async def test_handlers(traced43: StreamsClient, stream: str, telemetry: Telemetry) -> None:
    """
    ``client.process()``: each handler's call in a process span, the child
    of its message's send span, current in the handler; a failed attempt's
    span names its error.
    """
    async with traced43.publisher(stream) as publisher:
        await publisher.send_many([1, 2, 3])
    creates = {s.context.span_id for s in telemetry.spans('create ' + stream)}
    inside: list[int] = []
    failed: list[object] = []

    async def handler(msg: MessageCtx) -> None:
        with telemetry.tracer.start_as_current_span('handler') as span:
            inside.append(parent_id(tp.cast(ReadableSpan, span)))
        if msg.body == 2 and not failed:
            failed.append(msg.body)
            raise ValueError('once')

    from rbfly.streams.subscriptions.errors import OnError
    n = await traced43.process(
        stream, handler, offset=Offset.FIRST, stop_at_end=True,
        on_error=OnError(retries=1, backoff=0.01))
    assert n == 3
    processes = telemetry.spans('process ' + stream)
    assert len(processes) == 4  # one retried
    assert {parent_id(p) for p in processes} == creates
    assert set(inside) == {p.context.span_id for p in processes}
    (error,) = [p for p in processes if 'error.type' in attrs(p)]
    assert attrs(error)['error.type'] == 'ValueError'

async def test_super_stream(url43: str, super_stream: str, telemetry: Telemetry) -> None:
    """A super stream's publisher traces each partition's send; a subscription processes."""
    client = streams_client(url43)
    instrument(client, tracer_provider=telemetry.tracer_provider,
               meter_provider=telemetry.meter_provider)
    try:
        partitions = await client.create_super_stream(super_stream, 2)
        async with client.super_stream_publisher(
                super_stream, str) as publisher:
            for i in range(4):
                await publisher.send(i)
        sends = telemetry.spans()
        assert {attrs(s)['messaging.destination.name'] for s in sends} <= set(partitions)
        assert len(sends) == 4
        n = 0
        async with contextlib.aclosing(client.subscribe_super_stream(
                super_stream, offset=Offset.FIRST, timeout=30)) as bodies:
            async for _ in bodies:
                n += 1
                if n == 4:
                    break
        processes = [s for s in telemetry.spans() if s.kind == SpanKind.CONSUMER]
        assert {parent_id(p) for p in processes} == {s.context.span_id for s in sends}
        assert all(attrs(p)['messaging.destination.name'] in partitions for p in processes)
    finally:
        await client.delete_super_stream(super_stream)
        await client.disconnect()

def test_blocking(broker_url: str, stream: str, telemetry: Telemetry) -> None:
    """
    The blocking client: its publishers' sends and its subscriptions'
    records traced on its loop thread; each record's process span the
    child of its message's send span.
    """
    from rbfly.streams.blocking import blocking_client

    with blocking_client(broker_url, timeout=30) as client:
        instrument(client, tracer_provider=telemetry.tracer_provider,
                   meter_provider=telemetry.meter_provider)
        client.create_stream(stream)
        try:
            with client.publisher(stream) as publisher:
                publisher.send('a')
                publisher.send_batch(['b', 'c'])
            with client.subscribe(stream, offset=Offset.FIRST, timeout=30) as records:
                bodies = [next(records).body for _ in range(3)]
            assert bodies == ['a', 'b', 'c']
            sends = [s for s in telemetry.spans() if s.kind == SpanKind.PRODUCER]
            assert {attrs(s)['messaging.destination.name'] for s in sends} == {stream}
            processes = telemetry.spans('process ' + stream)
            linked = {link.context.span_id for p in processes for link in p.links}
            assert linked == {s.context.span_id for s in sends}
            assert uninstrument(client)
        finally:
            client.delete_stream(stream)
