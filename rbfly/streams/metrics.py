"""
Metrics of a client: counters since it was created, and what it holds now.

``client.metrics()`` returns a :py:class:`Metrics` snapshot. The counters
only grow; feed them to a monitoring system by reading them periodically:
:py:func:`rbfly.streams.otel.instrument` registers them as OpenTelemetry
observable instruments, and a Prometheus collector can set its counters
from them the same way.

The counters are plain integers incremented per frame or chunk (not per
message), so keeping them costs nothing measurable.
"""

from __future__ import annotations

import dataclasses as dtc

class Counters:
    """The client's counters (mutable; see :py:class:`Metrics`)."""
    __slots__ = (
        'chunk_bytes',
        'chunks',
        'chunks_skipped',
        'confirmed',
        'connections_lost',
        'connections_opened',
        'consumed',
        'errored',
        'published',
    )

    def __init__(self) -> None:
        self.published = 0
        self.confirmed = 0
        self.errored = 0
        self.chunks = 0
        self.chunk_bytes = 0
        self.chunks_skipped = 0
        self.consumed = 0
        self.connections_opened = 0
        self.connections_lost = 0


@dtc.dataclass(frozen=True, slots=True)
class Metrics:
    """
    Counters of a client since it was created, and gauges of the moment.

    :ivar published: Entries sent by publishers (a message, or a sub-entry
        batch); an entry sent again after a lost connection counts again.
    :ivar confirmed: Publishing ids the broker confirmed.
    :ivar errored: Entries the broker rejected (or the client could not
        encode).
    :ivar chunks: Chunks taken by the application (of every chunk type).
    :ivar chunk_bytes: Bytes of those chunks.
    :ivar consumed: Messages delivered to the application, after the
        records before a subscription's offset were dropped (a filtered
        subscription counts the messages before its client-side filter).
    :ivar connections_opened: Connections opened, first and again.
    :ivar connections_lost: Connections lost (not closed by the client).
    :ivar connections: Connections open now.
    :ivar publishers: Publishers declared now.
    :ivar subscriptions: Subscriptions now.
    :ivar outstanding_confirms: Entries sent and not confirmed yet.
    :ivar chunks_skipped: Chunks dropped for a CRC mismatch
        (``crc_failure='skip'``).
    :ivar buffered_chunks: Chunks received by subscriptions and not taken
        by the application yet (what a flow strategy or ``buffer_bytes``
        bounds).
    :ivar buffered_bytes: Bytes of those chunks.
    :ivar consumer_lag: Messages the subscriptions' streams have committed
        (replicated) and the application has not taken yet, summed over
        subscriptions: a lower bound, known to chunk precision (the
        broker names the last committed chunk, RabbitMQ 3.11+; 0 before a
        chunk arrived).
    """
    published: int
    confirmed: int
    errored: int
    chunks: int
    chunk_bytes: int
    consumed: int
    connections_opened: int
    connections_lost: int
    connections: int
    publishers: int
    subscriptions: int
    outstanding_confirms: int
    buffered_chunks: int = 0
    chunks_skipped: int = 0
    buffered_bytes: int = 0
    consumer_lag: int = 0


__all__ = ['Counters', 'Metrics']
