"""
OpenTelemetry metrics of a client (``pip install rbfly[otel]``).

:py:func:`instrument` registers observable instruments that read
:py:meth:`~rbfly.streams.StreamsClient.metrics` when the meter provider
collects, so publishing and consuming pay nothing for them. The names
follow the official Go and .NET stream clients' (``rabbitmq.stream.*``)::

    from opentelemetry import metrics
    from rbfly.streams.otel import instrument

    client = streams_client(uri)
    instrument(client, metrics.get_meter('my-service'))

Counters: ``published``, ``confirmed``, ``errored`` (entries), ``consumed``
(messages), ``chunks``, ``chunk_bytes``, ``connections_opened``,
``connections_lost``, and rbfly's ``chunks_skipped``. Gauges: ``connections``, ``publishers``,
``subscriptions``, ``outstanding_publish_confirmations``, and rbfly's own
``buffered_chunks``, ``buffered_bytes`` and ``consumer_lag``.
"""

from __future__ import annotations

import typing as tp
from collections.abc import Iterable

from .metrics import Metrics

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

    def observe(field: str) -> tp.Callable[[CallbackOptions], Iterable[Observation]]:
        def callback(options: CallbackOptions) -> Iterable[Observation]:
            snapshot: Metrics = client.metrics()
            return [Observation(getattr(snapshot, field), attrs)]
        return callback

    for name, field, unit, text in COUNTERS:
        meter.create_observable_counter(
            PREFIX + name, callbacks=[observe(field)], unit=unit, description=text,
        )
    for name, field, unit, text in GAUGES:
        meter.create_observable_up_down_counter(
            PREFIX + name, callbacks=[observe(field)], unit=unit, description=text,
        )

__all__ = ['PREFIX', 'instrument']
