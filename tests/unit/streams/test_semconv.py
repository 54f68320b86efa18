"""
The messaging conventions without a broker: attributes, where a message
carries its context and how it is read back, the create spans of a batch,
and the traced publisher classes made for an instrumented client.
"""

import typing as tp

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, format_span_id

from rbfly.amqp import MessageCtx, decode_amqp, encode_message
from rbfly.streams import (
    Publisher,
    PublisherBatchFast,
    PublisherBatchLimit,
    PublisherBin,
    PublisherBinBatch,
    PublisherPipelined,
    semconv,
)
from rbfly.streams.otel._publishers import Traced, TracedBatch, traced_class
from rbfly.streams.otel._telemetry import Telemetry, metric_attributes
from rbfly.types import AMQPAppProperties, Symbol

TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'

@pytest.fixture
def telemetry() -> tuple[Telemetry, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    found = Telemetry(
        provider.get_tracer('t'), MeterProvider().get_meter('t'), 'annotations',
        lambda: ('broker', 5552),
    )
    return found, exporter

def test_attributes() -> None:
    """The conventions' names; the address, count and group only when known."""
    assert semconv.attributes('send', 'send_many', 'orders', ('rmq', 5552), 3) == {
        'messaging.system': 'rabbitmq', 'messaging.operation.type': 'send',
        'messaging.operation.name': 'send_many', 'messaging.destination.name': 'orders',
        'server.address': 'rmq', 'server.port': 5552, 'messaging.batch.message_count': 3,
    }
    found = semconv.attributes('process', 'process', 'orders', group='g')
    assert 'server.address' not in found and 'messaging.batch.message_count' not in found
    assert found['messaging.consumer.group.name'] == 'g'
    assert semconv.span_name('send', 'orders') == 'send orders'

def test_metric_attributes_drop_count() -> None:
    """A metric's attributes have no batch count (a number per batch)."""
    attrs = semconv.attributes('send', 'flush', 's', None, 100)
    assert 'messaging.batch.message_count' not in metric_attributes(attrs)
    assert 'messaging.batch.message_count' in attrs

@pytest.mark.parametrize(('place', 'annotation', 'property'), [
    ('annotations', True, False), ('app_properties', False, True), ('both', True, True),
])
def test_write_context(place: semconv.CarrierPlace, annotation: bool, property: bool) -> None:
    """The context goes where asked, survives encoding, and is read back from there."""
    shared: AMQPAppProperties = {'k': 'v'}
    msg = semconv.write_context(
        MessageCtx(b'x', app_properties=shared), {'traceparent': TRACEPARENT}, place)
    assert shared == {'k': 'v'}  # copied, not changed
    back = decode_amqp(encode_message(msg))
    assert (Symbol('traceparent') in (back.annotations or {})) is annotation
    assert ('traceparent' in back.app_properties) is property
    assert back.app_properties['k'] == 'v'
    assert semconv.GETTER.get(back, 'traceparent') == [TRACEPARENT]
    assert semconv.carries_context(back)

def test_getter_prefers_annotations() -> None:
    """Annotations first, then application properties; nothing: None."""
    msg = MessageCtx(b'x', annotations={Symbol('traceparent'): 'a'},
                     app_properties={'traceparent': 'p', 'tracestate': 's'})
    assert semconv.GETTER.get(msg, 'traceparent') == ['a']
    assert semconv.GETTER.get(msg, 'tracestate') == ['s']
    assert semconv.GETTER.get(MessageCtx(b'x'), 'traceparent') is None
    assert sorted(semconv.GETTER.keys(msg)) == ['traceparent', 'tracestate']
    assert not semconv.carries_context(MessageCtx(b'x'))

def test_no_context_nothing_written() -> None:
    msg = MessageCtx(b'x')
    assert semconv.write_context(msg, {}) is msg
    assert not msg.annotations

@pytest.mark.parametrize('place', ['annotation', '', None])
def test_check_place(place: object) -> None:
    with pytest.raises(ValueError, match='trace context goes into'):
        semconv.check_place(place)

def test_create_span(telemetry: tuple[Telemetry, InMemorySpanExporter]) -> None:
    """A create span: a producer span, its context in the message, and a link to it."""
    tel, exporter = telemetry
    msg, link = tel.create('body', 'orders', ('broker', 5552), True)
    (span,) = exporter.get_finished_spans()
    assert span.name == 'create orders' and span.kind == SpanKind.PRODUCER
    assert span.attributes is not None
    assert span.attributes['messaging.operation.type'] == 'create'
    assert link.context.span_id == span.context.span_id
    assert msg.body == 'body'
    value = msg.annotations[Symbol('traceparent')]
    assert isinstance(value, str) and value.split('-')[2] == format_span_id(span.context.span_id)
    found = tel.extract(msg)
    assert found is not None and found.is_remote
    assert (found.trace_id, found.span_id) == (span.context.trace_id, span.context.span_id)
    # a raw message: the span, and the message as it was
    raw, _ = tel.create(b'raw', 'orders', None, False)
    assert raw == b'raw'

def test_process_span_parent(telemetry: tuple[Telemetry, InMemorySpanExporter]) -> None:
    """A message's process span: the child of its context, linked to it; errors typed."""
    tel, exporter = telemetry
    msg = MessageCtx(b'x', annotations={Symbol('traceparent'): TRACEPARENT}, stream='s')
    with pytest.raises(KeyError), tel.processing(msg, 's', 'g'):
        raise KeyError('k')
    (span,) = exporter.get_finished_spans()
    assert span.parent is not None and span.parent.span_id == 0xb7ad6b7169203331
    assert [link.context.span_id for link in span.links] == [0xb7ad6b7169203331]
    assert span.attributes is not None
    assert span.attributes['error.type'] == 'KeyError'
    assert span.attributes['server.address'] == 'broker'
    assert span.attributes['messaging.consumer.group.name'] == 'g'

def test_batch_process_links(telemetry: tuple[Telemetry, InMemorySpanExporter]) -> None:
    """A batch's process span: linked to the messages carrying a context, a root otherwise."""
    tel, exporter = telemetry
    msgs = [MessageCtx(b'x', annotations={Symbol('traceparent'): TRACEPARENT}), MessageCtx(b'y')]
    tel.begin(msgs, 's', None, batch=True).end()
    (span,) = exporter.get_finished_spans()
    assert span.parent is None
    assert len(span.links) == 1
    assert span.attributes is not None
    assert span.attributes['messaging.batch.message_count'] == 2

@pytest.mark.parametrize(('cls', 'mixin'), [
    (Publisher, Traced), (PublisherPipelined, Traced), (PublisherBin, Traced),
    (PublisherBatchFast, TracedBatch), (PublisherBatchLimit, TracedBatch),
    (PublisherBinBatch, TracedBatch),
])
def test_traced_class(
        telemetry: tuple[Telemetry, InMemorySpanExporter], cls: type, mixin: type,
) -> None:
    """A traced publisher class: a subclass of the class asked for, its name kept."""
    traced: type = traced_class(cls, telemetry[0])
    assert issubclass(traced, cls) and issubclass(traced, mixin)
    assert traced.__name__ == cls.__name__
    if mixin is TracedBatch:
        import inspect
        assert inspect.iscoroutinefunction(tp.cast(tp.Any, traced).batch) \
            == inspect.iscoroutinefunction(tp.cast(tp.Any, cls).batch)
