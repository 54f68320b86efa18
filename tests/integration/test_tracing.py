"""
Tracing through a stream: the process span of a consumer continues the
trace of the publish span, over the broker.
"""


from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind

from rbfly.streams import Offset, PublisherPipelined, StreamsClient, tracing

async def test_publish_then_process(client: StreamsClient, stream: str) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer('test')
    with tracer.start_as_current_span('request'):
        async with client.publisher(stream) as publisher:
            await tracing.send(publisher, {'n': 1}, tracer=tracer)
        async with client.publisher(stream, cls=PublisherPipelined) as pipelined:
            await tracing.send(pipelined, {'n': 2}, tracer=tracer)
    received = []
    async for body in client.subscribe(stream, offset=Offset.FIRST, timeout=30):
        with tracing.process(tracer=tracer):
            received.append(body)
        if len(received) == 2:
            break
    assert received == [{'n': 1}, {'n': 2}]
    spans = {s.name: s for s in exporter.get_finished_spans()}
    request = spans['request']
    publishes = [s for s in exporter.get_finished_spans() if s.name == stream + ' publish']
    processes = [s for s in exporter.get_finished_spans() if s.name == stream + ' process']
    assert len(publishes) == len(processes) == 2
    for publish, process in zip(publishes, processes, strict=True):
        assert publish.kind == SpanKind.PRODUCER and process.kind == SpanKind.CONSUMER
        assert publish.parent is not None
        assert publish.parent.span_id == request.context.span_id
        assert process.context.trace_id == request.context.trace_id
        assert process.parent is not None
        assert process.parent.span_id == publish.context.span_id
        assert process.attributes is not None
        assert process.attributes['messaging.source.name'] == stream
