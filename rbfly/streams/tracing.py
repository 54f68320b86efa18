"""
OpenTelemetry tracing of published and processed messages
(``pip install rbfly[otel]``).

A trace crosses a stream inside its messages: the publishing side writes
the context of its ``publish`` span into the message, and the consuming
side continues the trace with a ``process`` span, its child. The context
is W3C Trace Context (``traceparent``, ``tracestate``), written as
message annotations, where the Java stream client's Micrometer
Observation writes it; it is read from the message annotations, else from
the application properties, as the Java client reads it. A message
published by one client thus continues its trace in the other.

Tracing is explicit and opt-in, so publishing and consuming pay nothing
for it otherwise::

    from rbfly.streams import tracing

    async with client.publisher(stream) as publisher:
        await tracing.send(publisher, {'order': 1})      # a 'publish' span

    async for body in client.subscribe(stream):
        with tracing.process():                          # a 'process' span
            handle(body)

Span names follow the Java client's conventions, as in RbFly 0.10:
``<stream> publish`` (a producer span) and ``<stream> process`` (a
consumer span). Their attributes are those of RbFly 0.10 (``messaging.system``
``rabbitmq``, ``messaging.operation``, ``messaging.destination.name`` or
``messaging.source.name``, ``net.protocol.name`` ``rabbitmq-stream``), and
those of the current messaging conventions beside them
(``messaging.operation.type``, ``messaging.operation.name``; see
:py:mod:`rbfly.streams.semconv`), as the conventions' transition asks
(``messaging/dup``): a dashboard of either kind finds them.

:py:func:`rbfly.streams.otel.instrument` traces every publishing and
consuming path of a client instead, without a call per message; the
context it writes is read here, and the other way round.
"""

from __future__ import annotations

import contextlib
import typing as tp
from collections.abc import Iterator

from ..amqp import MessageCtx, get_message_ctx
from ..types import AMQPBody
from .semconv import GETTER, OperationType, as_message, write_context
from .semconv import attributes as messaging_attributes

if tp.TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

    from .publishers.base import PublisherTrait

TRACER_NAME = 'rbfly.streams'
"""Name of the tracer used when none is given."""

def _tracer(tracer: Tracer | None) -> Tracer:
    from opentelemetry import trace
    return tracer if tracer is not None else trace.get_tracer(TRACER_NAME)

def _attributes(
        operation: str, stream: str, direction: str, operation_type: OperationType,
) -> dict[str, str | int]:
    attrs = messaging_attributes(operation_type, operation, stream)
    attrs.update({
        'messaging.operation': operation,
        direction: stream,
        'net.protocol.name': 'rabbitmq-stream',
        'net.protocol.version': '1.0',
    })
    return attrs

def inject(message: AMQPBody | MessageCtx) -> MessageCtx:
    """
    Write the current trace context into a message's annotations (a body
    becomes a :py:class:`~rbfly.amqp.MessageCtx`); return the message.
    """
    from opentelemetry import propagate
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return write_context(as_message(message), carrier)

def extract(message: MessageCtx) -> tp.Any:
    """
    The trace context a message carries (in its annotations, else in its
    application properties), as an OpenTelemetry context.
    """
    from opentelemetry import propagate
    return propagate.extract(message, getter=GETTER)  # type: ignore[arg-type]

async def send(
        publisher: PublisherTrait, message: AMQPBody | MessageCtx,
        tracer: Tracer | None = None,
) -> tp.Any:
    """
    Send a message with a publisher's ``send`` in a ``publish`` span (a
    producer span, child of the current one), its context written into
    the message. The span lasts what ``send`` lasts: until the broker's
    confirmation with :py:class:`~rbfly.streams.Publisher`, until the
    message is taken with :py:class:`~rbfly.streams.PublisherPipelined`.
    An error of ``send`` is recorded in the span.

    :return: What ``send`` returns.
    """
    from opentelemetry.trace import SpanKind
    stream = publisher.stream
    with _tracer(tracer).start_as_current_span(
            '{} publish'.format(stream), kind=SpanKind.PRODUCER,
            attributes=_attributes('publish', stream, 'messaging.destination.name', 'send'),
    ):
        return await publisher.send(inject(message))  # type: ignore[attr-defined]

@contextlib.contextmanager
def process(message: MessageCtx | None = None, tracer: Tracer | None = None) -> Iterator[Span]:
    """
    A ``process`` span of a received message (a consumer span, child of
    the context the message carries; default: the current message of
    ``async for``, see :py:func:`~rbfly.streams.get_message_ctx`), current
    while the block runs. An exception of the block is recorded in it.
    """
    from opentelemetry.trace import SpanKind
    ctx = get_message_ctx() if message is None else message
    stream = ctx.stream or ''
    with _tracer(tracer).start_as_current_span(
            '{} process'.format(stream), context=extract(ctx), kind=SpanKind.CONSUMER,
            attributes=_attributes('process', stream, 'messaging.source.name', 'process'),
    ) as span:
        yield span

__all__ = ['TRACER_NAME', 'extract', 'inject', 'process', 'send']
