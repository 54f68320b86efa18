"""
OpenTelemetry metrics of a client (``pip install rbfly[otel]``).

:py:func:`instrument` registers observable instruments that read
:py:meth:`~rbfly.streams.StreamsClient.metrics` and
:py:meth:`~rbfly.streams.StreamsClient.stream_metrics` when the meter
provider collects, so publishing and consuming pay nothing for them. The
names follow the official Go and .NET stream clients'
(``rabbitmq.stream.*``)::

    from opentelemetry import metrics
    from rbfly.streams.otel import instrument

    client = streams_client(uri)
    instrument(client, metrics.get_meter('my-service'))

The client's totals. Counters: ``published``, ``confirmed``, ``errored``
(entries), ``consumed`` (messages), ``chunks``, ``chunk_bytes``,
``connections_opened``, ``connections_lost``, and rbfly's
``chunks_skipped`` and ``messages_lost``. Gauges: ``connections``, ``publishers``,
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
from collections.abc import Iterable

from .metrics import BOUNDS, CONFIRM, ConsumerMetrics, Metrics, PublisherMetrics

if tp.TYPE_CHECKING:
    from opentelemetry.metrics import CallbackOptions, Meter, Observation

    from .client import StreamsClient

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

def instrument(
        client: StreamsClient,
        meter: Meter | None = None,
        attributes: tp.Mapping[str, str] | None = None,
) -> None:
    """
    Report a client's metrics through OpenTelemetry.

    :param client: The client to observe.
    :param meter: Meter to register the instruments with; default: the
        global meter provider's ``rbfly`` meter.
    :param attributes: Attributes of every observation (e.g. which client
        it is, when a process has several).
    :raises ImportError: When ``opentelemetry-api`` is not installed.
    """
    from opentelemetry import metrics as otel
    from opentelemetry.metrics import Observation

    if meter is None:
        meter = otel.get_meter('rbfly')
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
            PREFIX + name, callbacks=[observe(field)], unit=unit, description=text,
        )
    for name, field, unit, text in GAUGES:
        meter.create_observable_up_down_counter(
            PREFIX + name, callbacks=[observe(field)], unit=unit, description=text,
        )
    for instruments, per in ((CONSUMER_INSTRUMENTS, consumers),
                             (PUBLISHER_INSTRUMENTS, publishers)):
        for name, field, unit, text, kind in instruments:
            create = {
                'counter': meter.create_observable_counter,
                'updown': meter.create_observable_up_down_counter,
                'gauge': meter.create_observable_gauge,
            }[kind]
            create(PREFIX + name, callbacks=[per(field)], unit=unit, description=text)

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

__all__ = ['PREFIX', 'instrument', 'stream_attributes']
