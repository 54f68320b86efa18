"""
OpenTelemetry's messaging semantic conventions, as RabbitMQ streams use
them, without OpenTelemetry: the attributes' names and values, the span
names, and where a message carries its trace context. Shared by
:py:mod:`rbfly.streams.tracing` (the explicit calls) and
:py:mod:`rbfly.streams.otel` (instrumentation in one call); nothing here
does I/O or imports ``opentelemetry``.

The conventions (messaging spans and metrics, semantic conventions 1.26
and later, in development status):

- span name ``{messaging.operation.name} {messaging.destination.name}``
  (``send orders``, ``process orders``);
- ``messaging.system`` ``rabbitmq``; ``messaging.operation.type`` one of
  ``create``, ``send``, ``receive``, ``process``, ``settle``;
  ``messaging.operation.name`` the client's own name of the operation;
  ``messaging.destination.name`` the stream (a partition, for a super
  stream); ``server.address`` and ``server.port`` the broker's;
  ``messaging.batch.message_count`` for an operation on a batch;
  ``messaging.consumer.group.name`` a consumer's name; ``error.type``
  the class of the error an operation failed with;
- a message carries its creation context: the span of its ``send`` when
  sent alone, the ``create`` span made for it when sent in a batch (the
  batch's ``send`` span links to them); a ``process`` span of one
  message is the child of that context, and links to it; a ``process``
  span of a batch (a window, a chunk) links to each message's context.

The context is W3C Trace Context (``traceparent``, ``tracestate``),
written as message annotations (symbol keys), where the Java stream
client's Micrometer Observation writes and reads it, or in the
application properties (string keys), where the AMQP 1.0 clients of .NET
and Java put it and an application reads it as a property; or both. It
is read from the annotations, else from the application properties.
"""

from __future__ import annotations

import typing as tp
from collections.abc import Iterable, Mapping

from ..amqp import MessageCtx
from ..types import AMQPBody, Symbol

SYSTEM = 'messaging.system'
OPERATION_TYPE = 'messaging.operation.type'
OPERATION_NAME = 'messaging.operation.name'
DESTINATION = 'messaging.destination.name'
BATCH_COUNT = 'messaging.batch.message_count'
CONSUMER_GROUP = 'messaging.consumer.group.name'
SERVER_ADDRESS = 'server.address'
SERVER_PORT = 'server.port'
ERROR_TYPE = 'error.type'

RABBITMQ = 'rabbitmq'
"""The value of ``messaging.system``."""

OperationType: tp.TypeAlias = tp.Literal['create', 'send', 'receive', 'process', 'settle']

CarrierPlace: tp.TypeAlias = tp.Literal['annotations', 'app_properties', 'both']
"""Where a message carries its trace context."""

PLACES: tp.Final = ('annotations', 'app_properties', 'both')

SENT_MESSAGES = 'messaging.client.sent.messages'
CONSUMED_MESSAGES = 'messaging.client.consumed.messages'
OPERATION_DURATION = 'messaging.client.operation.duration'
PROCESS_DURATION = 'messaging.process.duration'

DURATION_BOUNDS: tp.Final = (
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
)
"""The buckets (seconds) the conventions advise for the duration histograms."""

Address: tp.TypeAlias = 'tuple[str, int] | None'

def span_name(operation: str, destination: str) -> str:
    """The name of a span: the operation's name, then the stream's."""
    return '{} {}'.format(operation, destination)

def attributes(
        operation_type: OperationType,
        operation: str,
        destination: str,
        address: Address = None,
        count: int | None = None,
        group: str | None = None,
) -> dict[str, str | int]:
    """
    The attributes of a messaging span (and of its metrics).

    :param operation_type: The conventions' kind of the operation.
    :param operation: Its name in rbfly (``send``, ``batch``, ``flush``...).
    :param destination: The stream.
    :param address: The broker's host and port, when known.
    :param count: Messages of a batch (``None``: not a batch).
    :param group: The consumer's name, when it has one.
    """
    attrs: dict[str, str | int] = {
        SYSTEM: RABBITMQ,
        OPERATION_TYPE: operation_type,
        OPERATION_NAME: operation,
        DESTINATION: destination,
    }
    if address is not None:
        attrs[SERVER_ADDRESS] = address[0]
        attrs[SERVER_PORT] = address[1]
    if count is not None:
        attrs[BATCH_COUNT] = count
    if group is not None:
        attrs[CONSUMER_GROUP] = group
    return attrs

def check_place(place: object) -> CarrierPlace:
    """
    Where a message is to carry its context, checked.

    :raises ValueError: When it is none of :py:data:`PLACES`.
    """
    if place not in PLACES:
        raise ValueError('the trace context goes into {}, got {!r}'.format(
            ', '.join(map(repr, PLACES)), place,
        ))
    return place

def as_message(message: AMQPBody | MessageCtx) -> MessageCtx:
    """A message with sections: a body becomes a :py:class:`~rbfly.amqp.MessageCtx`."""
    return message if type(message) is MessageCtx else MessageCtx(tp.cast(AMQPBody, message))

def write_context(
        message: MessageCtx, carrier: Mapping[str, str],
        place: CarrierPlace = 'annotations',
) -> MessageCtx:
    """
    Write a trace context (a propagator's carrier: ``traceparent``,
    ``tracestate``) into a message; return it. The sections written are
    copied first, so a dictionary the application shares between
    messages is not changed.
    """
    if not carrier:
        return message
    if place != 'app_properties':
        annotations = dict(message.annotations or {})
        for key, value in carrier.items():
            annotations[Symbol(key)] = value
        message.annotations = annotations
    if place != 'annotations':
        properties = dict(message.app_properties or {})
        properties.update(carrier)
        message.app_properties = properties
    return message

class MessageGetter:
    """
    Reads a trace context from a message (a propagator's getter: the
    message is the carrier): a key from the annotations, else from the
    application properties.
    """
    def get(self, carrier: MessageCtx, key: str) -> list[str] | None:
        annotations = carrier.annotations
        value = annotations.get(Symbol(key)) if annotations else None
        if value is None:
            properties = carrier.app_properties
            value = properties.get(key) if properties else None
        return None if value is None else [str(value)]

    def keys(self, carrier: MessageCtx) -> list[str]:
        names = [str(k) for k in (carrier.annotations or {})]
        return names + [k for k in (carrier.app_properties or {}) if k not in names]

GETTER: tp.Final = MessageGetter()
"""The getter of :py:class:`MessageGetter` (it holds nothing)."""

def carries_context(message: MessageCtx, fields: Iterable[str] = ('traceparent',)) -> bool:
    """Whether a message carries a trace context (one of ``fields``)."""
    getter = GETTER
    return any(getter.get(message, f) is not None for f in fields)

__all__ = [
    'BATCH_COUNT', 'CONSUMED_MESSAGES', 'CONSUMER_GROUP', 'DESTINATION', 'DURATION_BOUNDS',
    'ERROR_TYPE', 'GETTER', 'OPERATION_DURATION', 'OPERATION_NAME', 'OPERATION_TYPE', 'PLACES',
    'PROCESS_DURATION', 'RABBITMQ', 'SENT_MESSAGES', 'SERVER_ADDRESS', 'SERVER_PORT', 'SYSTEM',
    'CarrierPlace', 'MessageGetter', 'OperationType', 'as_message', 'attributes',
    'carries_context', 'check_place', 'span_name', 'write_context',
]
