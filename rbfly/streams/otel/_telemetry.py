"""
What the instrumented publishers and subscriptions share: the tracer and
the instruments of the messaging conventions' metrics, the spans of an
operation (with its duration recorded, and its error's type), and the
trace context written into and read from messages (see
:py:mod:`rbfly.streams.semconv`).
"""

from __future__ import annotations

import contextlib
import typing as tp
from collections.abc import Callable, Iterator, Sequence
from time import monotonic

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.metrics import Meter
from opentelemetry.trace import Link, Span, SpanKind, Tracer

from ...amqp import MessageCtx
from ...types import AMQPBody
from ..semconv import (
    BATCH_COUNT,
    CONSUMED_MESSAGES,
    DURATION_BOUNDS,
    ERROR_TYPE,
    GETTER,
    OPERATION_DURATION,
    PROCESS_DURATION,
    SENT_MESSAGES,
    Address,
    CarrierPlace,
    OperationType,
    as_message,
    span_name,
    write_context,
)
from ..semconv import attributes as messaging_attributes

Attributes: tp.TypeAlias = dict[str, str | int]

PRODUCER = SpanKind.PRODUCER
CONSUMER = SpanKind.CONSUMER
CLIENT = SpanKind.CLIENT

def metric_attributes(attrs: Attributes) -> Attributes:
    """A span's attributes as a metric's: without the batch's count (a number per batch)."""
    found = dict(attrs)
    found.pop(BATCH_COUNT, None)
    return found

class Telemetry:
    """
    The tracer and the instruments of a client's instrumentation.

    :param tracer: Makes the spans.
    :param meter: Makes the instruments of the messaging metrics.
    :param place: Where a message carries its trace context.
    :param address: The broker's address a consumer's spans name (its
        client's connection's, when open).
    """
    def __init__(
            self, tracer: Tracer, meter: Meter, place: CarrierPlace,
            address: Callable[[], Address],
    ) -> None:
        self.tracer = tracer
        self.place = place
        self.address = address
        bounds = list(DURATION_BOUNDS)
        self.sent = meter.create_counter(
            SENT_MESSAGES, unit='{message}',
            description='Messages a producer attempted to send to the broker',
        )
        self.consumed = meter.create_counter(
            CONSUMED_MESSAGES, unit='{message}',
            description='Messages delivered to the application',
        )
        self.operation_duration = meter.create_histogram(
            OPERATION_DURATION, unit='s',
            description='Duration of a messaging operation of the client (send, settle)',
            explicit_bucket_boundaries_advisory=bounds,
        )
        self.process_duration = meter.create_histogram(
            PROCESS_DURATION, unit='s',
            description='Duration of processing a message (or a batch of them)',
            explicit_bucket_boundaries_advisory=bounds,
        )

    # -- context in messages --

    def inject(
            self, message: AMQPBody | MessageCtx, context: otel_context.Context | None = None,
    ) -> MessageCtx:
        """Write a context (the current one by default) into a message; return the message."""
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=context)
        return write_context(as_message(message), carrier, self.place)

    def extract(self, message: MessageCtx) -> trace.SpanContext | None:
        """The span context a message carries, if it carries a valid one."""
        found = propagate.extract(message, getter=GETTER)  # type: ignore[arg-type]
        span_context = trace.get_current_span(found).get_span_context()
        return span_context if span_context.is_valid else None

    def links(self, messages: Sequence[MessageCtx]) -> list[Link]:
        """Links to the contexts that messages carry (those that carry one)."""
        extract = self.extract
        found = (extract(m) for m in messages)
        return [Link(c) for c in found if c is not None]

    def create(self, message: tp.Any, stream: str, address: Address, amqp: bool,
               ) -> tuple[tp.Any, Link]:
        """
        A ``create`` span of a message sent in a batch (a producer span,
        child of the current context, ended at once): its context written
        into the message (an AMQP one); the message and a link to the span.
        """
        span = self.tracer.start_span(
            span_name('create', stream), kind=PRODUCER,
            attributes=messaging_attributes('create', 'create', stream, address),
        )
        if amqp:
            message = self.inject(message, trace.set_span_in_context(span))
        span.end()
        return message, Link(span.get_span_context())

    # -- operations --

    @contextlib.contextmanager
    def operation(
            self, operation_type: OperationType, operation: str, stream: str,
            address: Address, kind: SpanKind, *, count: int | None = None,
            links: Sequence[Link] | None = None, group: str | None = None,
            messages: int = 0,
    ) -> Iterator[Span]:
        """
        The span of a client's operation (send, settle), current in the
        block; its duration is recorded in ``messaging.client.operation.duration``
        and, of a send, its ``messages`` in ``messaging.client.sent.messages``,
        with the type of the error the block raised, if any.
        """
        attrs = messaging_attributes(operation_type, operation, stream, address, count, group)
        start = monotonic()
        error: str | None = None
        with self.tracer.start_as_current_span(
                span_name(operation, stream), kind=kind, attributes=attrs, links=links,
        ) as span:
            try:
                yield span
            except BaseException as ex:
                error = type(ex).__qualname__
                span.set_attribute(ERROR_TYPE, error)
                raise
            finally:
                recorded = metric_attributes(attrs)
                if error is not None:
                    recorded[ERROR_TYPE] = error
                self.operation_duration.record(monotonic() - start, recorded)
                if messages:
                    self.sent.add(messages, recorded)

    @contextlib.contextmanager
    def processing(
            self, message: MessageCtx, stream: str, group: str | None,
    ) -> Iterator[Span]:
        """
        The ``process`` span of a message, current in the block: the child
        of the context the message carries, linked to it (else of the
        current one); its duration recorded in ``messaging.process.duration``.
        """
        process = self.begin([message], stream, group, batch=False)
        token = otel_context.attach(trace.set_span_in_context(process.span))
        error: BaseException | None = None
        try:
            yield process.span
        except BaseException as ex:
            error = ex
            raise
        finally:
            otel_context.detach(token)
            process.end(error)

    def begin(
            self, messages: Sequence[MessageCtx], stream: str, group: str | None, batch: bool,
    ) -> Processing:
        """
        Start the ``process`` span of a message (``batch`` false), or of
        a batch of them (linked to each message's context); count the
        messages consumed.
        """
        address = self.address()
        if batch:
            count: int | None = len(messages)
            links = self.links(messages)
            parent = None
        else:
            count = None
            found = self.extract(messages[0])
            links = [] if found is None else [Link(found)]
            parent = None if found is None else trace.set_span_in_context(
                trace.NonRecordingSpan(found))
        attrs = messaging_attributes('process', 'process', stream, address, count, group)
        span = self.tracer.start_span(
            span_name('process', stream), context=parent, kind=CONSUMER,
            attributes=attrs, links=links,
        )
        recorded = metric_attributes(attrs)
        self.consumed.add(len(messages), recorded)
        return Processing(self, span, recorded)

class Processing:
    """A ``process`` span under way, and what its end records."""
    __slots__ = ('_start', '_telemetry', 'attributes', 'span')

    def __init__(self, telemetry: Telemetry, span: Span, attributes: Attributes) -> None:
        self._telemetry = telemetry
        self.span = span
        self.attributes = attributes
        self._start = monotonic()

    def end(self, error: BaseException | None = None) -> None:
        """End the span (with the error the processing raised, if any)."""
        recorded = self.attributes
        if error is not None:
            kind = type(error).__qualname__
            recorded = dict(recorded)
            recorded[ERROR_TYPE] = kind
            self.span.set_attribute(ERROR_TYPE, kind)
            if isinstance(error, Exception):
                self.span.record_exception(error)
                self.span.set_status(trace.Status(trace.StatusCode.ERROR, str(error)))
        self.span.end()
        self._telemetry.process_duration.record(monotonic() - self._start, recorded)

__all__ = ['Processing', 'Telemetry', 'metric_attributes']
