"""Trace context in messages, without a broker: what is written where, and read back."""

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, format_trace_id

from rbfly.amqp import MessageCtx, decode_amqp, encode_message
from rbfly.streams import tracing
from rbfly.types import Symbol

@pytest.fixture
def spans() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter

def test_inject_into_annotations(spans: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    """The context goes into message annotations under the symbol ``traceparent``."""
    provider, _ = spans
    tracer = provider.get_tracer('t')
    with tracer.start_as_current_span('parent') as parent:
        msg = tracing.inject({'a': 1})
    assert msg.body == {'a': 1}
    value = msg.annotations[Symbol('traceparent')]
    assert isinstance(value, str)
    assert value.split('-')[1] == format_trace_id(parent.get_span_context().trace_id)
    # on the wire and back: an annotation of a symbol key, a string value
    back = decode_amqp(encode_message(msg))
    assert back.annotations[Symbol('traceparent')] == value

def test_no_context_no_annotation() -> None:
    """Outside of a span nothing is written."""
    msg = tracing.inject(MessageCtx(b'x', annotations={Symbol('k'): 1}))
    assert msg.annotations == {Symbol('k'): 1}

@pytest.mark.parametrize('where', ['annotations', 'app_properties'])
def test_process_continues_trace(
        spans: tuple[TracerProvider, InMemorySpanExporter], where: str,
) -> None:
    """A process span is the child of the context a message carries, in either place."""
    provider, exporter = spans
    tracer = provider.get_tracer('t')
    trace_id = 0x0af7651916cd43dd8448eb211c80319c
    traceparent = '00-{:032x}-b7ad6b7169203331-01'.format(trace_id)
    if where == 'annotations':
        msg = MessageCtx(b'x', annotations={Symbol('traceparent'): traceparent})
    else:
        msg = MessageCtx(b'x', app_properties={'traceparent': traceparent})
    with tracing.process(msg, tracer=tracer):
        pass
    (span,) = exporter.get_finished_spans()
    assert span.kind == SpanKind.CONSUMER
    assert span.context.trace_id == trace_id
    assert span.parent is not None and span.parent.span_id == 0xb7ad6b7169203331
    assert span.attributes is not None
    assert span.attributes['messaging.system'] == 'rabbitmq'
    assert span.attributes['messaging.operation'] == 'process'
