"""
OpenTelemetry instrumentation of a client (``pip install rbfly[otel]``):
traces and metrics in one call, off until called.

:py:func:`instrument` makes a client trace every publishing path (each
publisher class, ``send_many``, batches and sub-entry batches, super
stream publishers, dead letters) and every consuming path (``async for``,
windows, chunks, ``client.process()`` handlers, and so ``pipe``), with the
current OpenTelemetry messaging conventions (see
:py:mod:`rbfly.streams.semconv`), and report its metrics::

    from rbfly.streams.otel import instrument

    client = streams_client(uri)
    instrument(client)      # the global tracer and meter providers

A message carries the context of its ``send`` (or ``create``) span in its
annotations, as :py:mod:`rbfly.streams.tracing` and the Java stream client
write it (``context_in='app_properties'`` or ``'both'`` for the
application properties, where the AMQP 1.0 clients of .NET and Java put
it); a ``process`` span continues it, read from either place. What each
path traces is said in :py:mod:`rbfly.streams.otel._publishers` and
:py:mod:`rbfly.streams.otel._consumers`.

Zero cost when off: :py:func:`instrument` replaces the client's factories
of publishers and subscriptions, on that client only, with ones handing
out traced publishers (a subclass of the class asked for) and traced
views of the iterators; a client not instrumented runs the same code as
before, with no test per message (measured with the instruction counter:
:doc:`/perf`). :py:func:`uninstrument` puts the factories back: the
publishers and subscriptions made after it are not traced.

Metrics of the messaging conventions, recorded by the traced objects:
``messaging.client.sent.messages`` and ``messaging.client.consumed.messages``
(counters), ``messaging.client.operation.duration`` (sends and offset
commits) and ``messaging.process.duration`` (histograms, in seconds), with
``messaging.system``, ``messaging.operation.name``,
``messaging.destination.name``, ``server.address``, ``server.port`` and
``error.type``.

And the client's own metrics, read when the meter provider collects (so
publishing and consuming pay nothing for them), under the names of the
official Go and .NET stream clients (``rabbitmq.stream.*``).
The client's totals. Counters: ``published``, ``confirmed``, ``errored``
(entries), ``consumed`` (messages), ``chunks``, ``chunk_bytes``,
``connections_opened``, ``connections_lost``, and rbfly's
``chunks_skipped``, ``messages_lost`` and ``undecodable``, and those of
concurrent handlers: ``handled``, ``handler_retries``, ``handler_skipped``,
``dead_lettered``. Gauges: ``connections``, ``publishers``,
``subscriptions``, ``outstanding_publish_confirmations``, and rbfly's own
``buffered_chunks``, ``buffered_bytes`` and ``consumer_lag``.

Per stream (a partition, for a super stream), with the OpenTelemetry
messaging attributes ``messaging.system`` (``rabbitmq``),
``messaging.destination.name`` (the stream) and, for a consumer with a
name (a single active consumer's, or the offset reference's),
``messaging.consumer.group.name``: ``consumer.consumed`` (a counter),
``consumer.lag`` (a gauge), ``consumer.rate`` (messages a second, a
gauge; see :py:class:`~rbfly.streams.metrics.ConsumerMetrics`);
``publisher.published``, ``publisher.confirmed``, ``publisher.errored``
(counters), ``publisher.outstanding_publish_confirmations`` (a gauge).
They have names of their own rather than the totals' names with
attributes: a total without attributes and its parts with them under one
name would be counted twice by a query summing the name's series, and a
total given up for its parts would change the series of existing
dashboards.

Histograms, in seconds: ``publisher.confirm_latency`` and
``consumer.end_to_end_latency``, with the same attributes. OpenTelemetry
for Python has no observable histogram: the samples (at most ten a second
for each publisher and each consumer, see
:py:mod:`rbfly.streams.metrics`) are recorded in synchronous histograms as
they are taken, through a latency listener
(:py:meth:`~rbfly.streams.StreamsClient.add_latency_listener`), with
:py:data:`~rbfly.streams.metrics.BOUNDS` as the advised bucket
boundaries. Recording costs about 16 us a sample (the SDK's, measured),
at most 0.2 ms a second for each publisher and consumer. Samples taken before
:py:func:`instrument` was called are in
:py:meth:`~rbfly.streams.StreamsClient.stream_metrics` only.
"""

from __future__ import annotations

import typing as tp
import weakref
from collections.abc import Iterable

from ..metrics import BOUNDS, CONFIRM, ConsumerMetrics, Metrics, PublisherMetrics
from ..semconv import CarrierPlace, check_place

if tp.TYPE_CHECKING:
    from opentelemetry.metrics import CallbackOptions, Meter, MeterProvider, Observation
    from opentelemetry.trace import TracerProvider

    from ..client import StreamsClient

TRACER_NAME = 'rbfly.streams'
"""The name of the tracer and of the meter of the messaging metrics."""

PREFIX = 'rabbitmq.stream.'

# instrument name, Metrics field, unit, description
COUNTERS = (
    ('published', 'published', '{entry}', 'Entries sent by publishers'),
    ('confirmed', 'confirmed', '{entry}', 'Publishing ids confirmed by the broker'),
    ('errored', 'errored', '{entry}', 'Entries rejected or not encoded'),
    ('consumed', 'consumed', '{message}', 'Messages delivered to the application'),
    ('chunks', 'chunks', '{chunk}', 'Chunks taken by the application'),
    ('chunk_bytes', 'chunk_bytes', 'By', 'Bytes of the chunks taken'),
    ('chunks_skipped', 'chunks_skipped', '{chunk}', 'Chunks dropped for a CRC mismatch'),
    ('messages_lost', 'messages_lost', '{message}',
     'Offsets to read that retention had removed (at most)'),
    ('undecodable', 'undecodable', '{message}', 'Messages that were not AMQP 1.0'),
    ('handled', 'handled', '{message}', 'Messages concurrent handlers handled'),
    ('handler_retries', 'handler_retries', '{attempt}', 'Handler attempts made again'),
    ('handler_skipped', 'handler_skipped', '{message}', 'Messages the error policy skipped'),
    ('dead_lettered', 'dead_lettered', '{message}', 'Messages sent to a dead-letter stream'),
    ('connections_opened', 'connections_opened', '{connection}', 'Connections opened'),
    ('connections_lost', 'connections_lost', '{connection}', 'Connections lost'),
)
GAUGES = (
    ('connections', 'connections', '{connection}', 'Connections open'),
    ('publishers', 'publishers', '{publisher}', 'Publishers declared'),
    ('subscriptions', 'subscriptions', '{subscription}', 'Subscriptions'),
    ('outstanding_publish_confirmations', 'outstanding_confirms', '{entry}',
     'Entries sent and not confirmed yet'),
    ('buffered_chunks', 'buffered_chunks', '{chunk}', 'Chunks received and not taken yet'),
    ('buffered_bytes', 'buffered_bytes', 'By', 'Bytes of the chunks received and not taken'),
    ('consumer_lag', 'consumer_lag', '{message}',
     'Messages committed by the streams and not taken yet (a lower bound)'),
)

# per stream: instrument name, field of ConsumerMetrics or PublisherMetrics,
# unit, description, kind (counter, up-down counter, gauge)
CONSUMER_INSTRUMENTS = (
    ('consumer.consumed', 'consumed', '{message}',
     "Messages a consumer delivered to the application", 'counter'),
    ('consumer.lag', 'lag', '{message}',
     "Messages committed by a consumer's stream and not taken yet (a lower bound)",
     'updown'),
    ('consumer.rate', 'rate', '{message}/s',
     'Messages a consumer delivered a second, recently', 'gauge'),
)
PUBLISHER_INSTRUMENTS = (
    ('publisher.published', 'published', '{entry}', 'Entries sent to a stream', 'counter'),
    ('publisher.confirmed', 'confirmed', '{entry}',
     "Publishing ids of a stream's publishers confirmed", 'counter'),
    ('publisher.errored', 'errored', '{entry}',
     'Entries to a stream rejected or not encoded', 'counter'),
    ('publisher.outstanding_publish_confirmations', 'outstanding_confirms', '{entry}',
     'Entries sent to a stream and not confirmed yet', 'updown'),
)
# histogram name, description
CONFIRM_LATENCY = (
    'publisher.confirm_latency',
    "Time from sending a Publish frame to its last message's confirmation (sampled)",
)
END_TO_END_LATENCY = (
    'consumer.end_to_end_latency',
    'Age of a chunk taken by the application, since the broker wrote it (sampled)',
)

SYSTEM = 'messaging.system'
DESTINATION = 'messaging.destination.name'
GROUP = 'messaging.consumer.group.name'

def stream_attributes(
        attributes: tp.Mapping[str, str], stream: str, name: str | None,
) -> dict[str, str]:
    """
    Attributes of a stream's observations: ``attributes``, and the
    OpenTelemetry messaging attributes of the stream and the consumer's
    name (if any).
    """
    attrs = dict(attributes)
    attrs[SYSTEM] = 'rabbitmq'
    attrs[DESTINATION] = stream
    if name is not None:
        attrs[GROUP] = name
    return attrs

class InstrumentationError(RuntimeError):
    """
    A client instrumented twice: :py:func:`uninstrument` it first (or keep
    the first instrumentation).
    """

_instrumented: weakref.WeakKeyDictionary[tp.Any, _State] = weakref.WeakKeyDictionary()

class _State:
    """An instrumented client's: whether it still reports, and what to undo."""
    def __init__(self) -> None:
        self.active = True
        self.undo: list[tp.Callable[[], None]] = []

def instrument(
        client: StreamsClient | tp.Any,
        meter: Meter | None = None,
        attributes: tp.Mapping[str, str] | None = None,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        traces: bool = True,
        context_in: CarrierPlace = 'annotations',
) -> None:
    """
    Instrument a client: trace its publishing and consuming paths and
    report its metrics through OpenTelemetry.

    :param client: The client to instrument; or a
        :py:class:`~rbfly.streams.blocking.BlockingClient`: its async client
        is instrumented, and its publishers and subscriptions traced on its
        loop thread (a blocking publisher's send spans do not continue the
        calling thread's span; its messages' process spans continue them).
    :param meter: Meter of the client's own metrics (``rabbitmq.stream.*``);
        default: ``meter_provider``'s ``rbfly`` meter.
    :param attributes: Attributes of every observation of the client's own
        metrics (e.g. which client it is, when a process has several).
    :param tracer_provider: Makes the tracer (default: the global one).
    :param meter_provider: Makes the meters (default: the global one).
    :param traces: ``False``: the client's own metrics only, as RbFly
        before 1.0 did (no span, no messaging metric).
    :param context_in: Where a message published carries its trace
        context: ``'annotations'`` (as the Java stream client), ``'app_properties'``
        or ``'both'``.
    :raises InstrumentationError: When the client is instrumented already.
    :raises ValueError: For an unknown ``context_in``.
    :raises ImportError: When ``opentelemetry-api`` is not installed.
    """
    from opentelemetry import metrics as otel

    from ..client import StreamsClient

    if not isinstance(client, StreamsClient):
        # the blocking client: its async client (the facade's own)
        inner = getattr(client, 'async_client', None)
        if not isinstance(inner, StreamsClient):
            raise TypeError('instrument() takes a StreamsClient or a BlockingClient, got {!r}'
                            .format(client))
        client = inner
    place = check_place(context_in)
    if client in _instrumented:
        raise InstrumentationError('{!r} is instrumented already; uninstrument() it first'.format(
            client))
    state = _instrumented[client] = _State()
    if meter_provider is None:
        meter_provider = otel.get_meter_provider()
    if meter is None:
        meter = meter_provider.get_meter('rbfly')
    if traces:
        _trace(client, state, tracer_provider, meter_provider, place)
    _client_metrics(client, state, meter, attributes)

def _trace(
        client: StreamsClient, state: _State, tracer_provider: TracerProvider | None,
        meter_provider: MeterProvider, place: CarrierPlace,
) -> None:
    """Trace a client's publishers and subscriptions, and record the messaging metrics."""
    from opentelemetry import trace

    from ._telemetry import Telemetry
    from ._wiring import Wiring, client_address

    tracer = (tracer_provider or trace.get_tracer_provider()).get_tracer(TRACER_NAME)
    telemetry = Telemetry(
        tracer, meter_provider.get_meter(TRACER_NAME), place, client_address(client))
    wiring = Wiring(client, telemetry)
    wiring.install()
    state.undo.append(wiring.uninstall)

Callback: tp.TypeAlias = 'tp.Callable[[CallbackOptions], Iterable[Observation]]'

def _guarded(state: _State, callback: Callback) -> Callback:
    """An observable's callback observing nothing once the client is uninstrumented."""
    def guarded(options: CallbackOptions) -> Iterable[Observation]:
        return callback(options) if state.active else []
    return guarded

def _client_metrics(
        client: StreamsClient, state: _State, meter: Meter,
        attributes: tp.Mapping[str, str] | None,
) -> None:
    """Report the client's own metrics (``rabbitmq.stream.*``)."""
    from opentelemetry.metrics import Observation

    attrs = dict(attributes or {})
    # the attributes of each stream and consumer, made once
    keyed: dict[tuple[str, str | None], dict[str, str]] = {}

    def of(stream: str, name: str | None) -> dict[str, str]:
        found = keyed.get((stream, name))
        if found is None:
            found = keyed[stream, name] = stream_attributes(attrs, stream, name)
        return found

    def observe(field: str) -> tp.Callable[[CallbackOptions], Iterable[Observation]]:
        def callback(options: CallbackOptions) -> Iterable[Observation]:
            snapshot: Metrics = client.metrics()
            return [Observation(getattr(snapshot, field), attrs)]
        return callback

    def consumers(field: str) -> tp.Callable[[CallbackOptions], Iterable[Observation]]:
        def callback(options: CallbackOptions) -> Iterable[Observation]:
            found: tuple[ConsumerMetrics, ...] = client.stream_metrics().consumers
            return [Observation(getattr(c, field), of(c.stream, c.name)) for c in found]
        return callback

    def publishers(field: str) -> tp.Callable[[CallbackOptions], Iterable[Observation]]:
        def callback(options: CallbackOptions) -> Iterable[Observation]:
            found: tuple[PublisherMetrics, ...] = client.stream_metrics().publishers
            return [Observation(getattr(p, field), of(p.stream, None)) for p in found]
        return callback

    for name, field, unit, text in COUNTERS:
        meter.create_observable_counter(
            PREFIX + name, callbacks=[_guarded(state, observe(field))], unit=unit, description=text,
        )
    for name, field, unit, text in GAUGES:
        meter.create_observable_up_down_counter(
            PREFIX + name, callbacks=[_guarded(state, observe(field))], unit=unit, description=text,
        )
    for instruments, per in ((CONSUMER_INSTRUMENTS, consumers),
                             (PUBLISHER_INSTRUMENTS, publishers)):
        for name, field, unit, text, kind in instruments:
            create = {
                'counter': meter.create_observable_counter,
                'updown': meter.create_observable_up_down_counter,
                'gauge': meter.create_observable_gauge,
            }[kind]
            create(PREFIX + name, callbacks=[_guarded(state, per(field))], unit=unit,
                   description=text)

    advice = list(BOUNDS)
    confirm = meter.create_histogram(
        PREFIX + CONFIRM_LATENCY[0], unit='s', description=CONFIRM_LATENCY[1],
        explicit_bucket_boundaries_advisory=advice,
    )
    end_to_end = meter.create_histogram(
        PREFIX + END_TO_END_LATENCY[0], unit='s', description=END_TO_END_LATENCY[1],
        explicit_bucket_boundaries_advisory=advice,
    )

    def on_latency(kind: str, stream: str, name: str | None, seconds: float) -> None:
        histogram = confirm if kind == CONFIRM else end_to_end
        histogram.record(seconds, of(stream, name))

    client.add_latency_listener(on_latency)
    listeners = client._counters.listeners
    state.undo.append(lambda: listeners.remove(on_latency))

def uninstrument(client: StreamsClient | tp.Any) -> bool:
    """
    Undo :py:func:`instrument`: the publishers and subscriptions the
    client makes from now on are not traced (those made before are, until
    they end), and its metrics are not reported any more. Whether the
    client was instrumented.
    """
    client = getattr(client, 'async_client', client)
    state = _instrumented.pop(client, None)
    if state is None:
        return False
    state.active = False
    for undo in state.undo:
        undo()
    return True

__all__ = [
    'PREFIX', 'TRACER_NAME', 'InstrumentationError', 'instrument', 'stream_attributes',
    'uninstrument',
]
