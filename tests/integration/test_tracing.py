"""
Tracing through a stream: the process span of a consumer continues the
trace of the publish span, over the broker; also between rbfly and the
official Java client with its Micrometer Observation bridged to
OpenTelemetry (``perf/java/TraceInterop.java``, built and run by
``scripts/java-perf.sh --trace-interop``).
"""

import asyncio
import subprocess
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, Tracer, format_span_id, format_trace_id

from rbfly.streams import Offset, PublisherPipelined, StreamsClient, tracing

SCRIPT = str(Path(__file__).resolve().parents[2] / 'scripts' / 'java-perf.sh')

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

@pytest.fixture(scope='module')
def java() -> str:
    """The Java side (perf/java/TraceInterop.java), built once."""
    result = subprocess.run([SCRIPT, '--prepare'], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        pytest.fail('scripts/java-perf.sh --prepare failed:\n{}'.format(result.stderr[-2000:]))
    return SCRIPT

async def java_side(java: str, url: str, stream: str, mode: str) -> str:
    p = urlsplit(url)
    uri = urlunsplit((p.scheme, p.netloc, '/' + quote(p.path[1:] or '/', safe=''), '', ''))
    proc = await asyncio.create_subprocess_exec(
        java, '--trace-interop', '--uri', uri, '--stream', stream, '--mode', mode,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode(errors='replace')[-2000:]
    return str(out.decode().strip())

def spans() -> tuple[Tracer, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer('test'), exporter

@pytest.mark.one_loop
async def test_java_publishes_rbfly_processes(
        java: str, url: str, client310: StreamsClient, stream: str,
) -> None:
    """A message traced by the Java client continues its trace in rbfly."""
    traceparent = await java_side(java, url, stream, 'publish')
    _, trace_id, span_id, _ = traceparent.split('-')
    tracer, exporter = spans()
    async for body in client310.subscribe(stream, offset=Offset.FIRST, timeout=30):
        with tracing.process(tracer=tracer):
            assert body == b'traced'
        break
    (process,) = exporter.get_finished_spans()
    assert format_trace_id(process.context.trace_id) == trace_id
    assert process.parent is not None
    assert format_span_id(process.parent.span_id) == span_id

@pytest.mark.one_loop
async def test_rbfly_publishes_java_processes(
        java: str, url: str, client310: StreamsClient, stream: str,
) -> None:
    """A message traced by rbfly continues its trace in the Java client."""
    tracer, exporter = spans()
    async with client310.publisher(stream) as publisher:
        await tracing.send(publisher, b'traced', tracer=tracer)
    (publish,) = exporter.get_finished_spans()
    trace_id, parent_id = (await java_side(java, url, stream, 'read')).split()
    assert trace_id == format_trace_id(publish.context.trace_id)
    assert parent_id == format_span_id(publish.context.span_id)
