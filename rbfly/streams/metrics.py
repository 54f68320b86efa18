"""
Metrics of a client: counters since it was created, and what it holds now.

``client.metrics()`` returns a :py:class:`Metrics` snapshot of the whole
client; ``client.stream_metrics()`` a :py:class:`StreamMetrics` snapshot
per stream (a partition, for a super stream): for each consumer (a stream
and the subscription's name, if any) its lag, messages consumed, rate and
end-to-end latency, for each stream published to the entries published,
confirmed and rejected, and the confirmation latency. The counters only
grow; feed them to a monitoring system by reading them periodically:
:py:func:`rbfly.streams.otel.instrument` registers them as OpenTelemetry
instruments, and a Prometheus collector can set its counters from them
the same way.

The counters are plain integers incremented per frame or chunk (not per
message), so keeping them costs nothing measurable.

Latencies are sampled, not measured per message: a publisher times the
confirmation of the last message of a Publish frame, one at a time, and
after a sample the first frame it sends :py:data:`SAMPLE_INTERVAL`
seconds later (reading the clock every 16 frames meanwhile, not per
frame); a consumer (a stream and a name) takes the age of a chunk it
hands to the application at most once every :py:data:`SAMPLE_INTERVAL`
seconds. A sample costs about a microsecond (two clock readings and a
bucket's increment, in Python; measured 0.6-0.8 us): at most ten a second
for each publisher and consumer, it costs nothing measurable, whatever the
message rate, where timing every message would cost about as much as
sending it. Samples go in a fixed array of counters, one per bucket of
:py:data:`BOUNDS`; a latency listener
(:py:meth:`~rbfly.streams.StreamsClient.add_latency_listener`) gets each
sample too, e.g. to record it in a histogram of a monitoring system with
buckets of its own.
"""

from __future__ import annotations

import dataclasses as dtc
import logging
import math
import typing as tp
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterable
from time import monotonic, time

logger = logging.getLogger(__name__)

BOUNDS: tuple[float, ...] = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)
"""
Upper bounds of the latency histograms' buckets, in seconds: from 100 us
(a confirmation on a local broker comes in 200 us to 1 ms) to a minute (a
consumer catching up with a stream's history sees the age of old chunks);
a last bucket counts what is above.
"""

SAMPLE_INTERVAL = 0.1
"""Seconds at least between two latency samples of a publisher or consumer key."""

RATE_WINDOW = 10.0
"""Seconds over which a consumer's rate is computed, at least (see :py:class:`RateWindow`)."""

CONFIRM = 'confirm'
"""A latency sample's kind: from a message's send to its confirmation."""

END_TO_END = 'end_to_end'
"""A latency sample's kind: from a chunk's write by the broker to its consumption."""

LatencyListener: tp.TypeAlias = Callable[[str, str, 'str | None', float], None]
"""
Called with each latency sample: its kind (``'confirm'``,
:py:data:`CONFIRM`, or ``'end_to_end'``), the stream, the consumer's name (``None`` for a
publisher's, or a subscription without a name) and the seconds.
"""

@dtc.dataclass(frozen=True, slots=True)
class Histogram:
    """
    Latency samples counted in buckets.

    :ivar bounds: Upper bounds of the buckets, in seconds
        (:py:data:`BOUNDS`).
    :ivar counts: Samples in each bucket: ``counts[i]`` counts the samples
        above ``bounds[i - 1]`` and at most ``bounds[i]``; the last,
        ``counts[len(bounds)]``, those above the last bound.
    :ivar count: Samples, in all.
    :ivar sum: Their sum, in seconds.
    """
    bounds: tuple[float, ...]
    counts: tuple[int, ...]
    count: int
    sum: float

    @staticmethod
    def merge(histograms: Iterable[Histogram]) -> Histogram:
        """
        The samples of histograms of the same bounds, together (e.g. a
        client's confirmation latency over all its streams).

        :raises ValueError: When the bounds differ.
        """
        counts = [0] * (len(BOUNDS) + 1)
        count = 0
        total = 0.0
        for h in histograms:
            if h.bounds != BOUNDS:
                raise ValueError('histograms of other bounds cannot be merged')
            for i, n in enumerate(h.counts):
                counts[i] += n
            count += h.count
            total += h.sum
        return Histogram(BOUNDS, tuple(counts), count, total)

    def quantile(self, q: float) -> float | None:
        """
        An upper bound of the ``q``-quantile of the samples (``0.99``: the
        99th percentile): the upper bound of the bucket it is in
        (``math.inf`` in the last bucket); ``None`` without samples.

        :raises ValueError: When ``q`` is not in 0..1.
        """
        if not 0.0 <= q <= 1.0:
            raise ValueError('a quantile is in 0..1, got {!r}'.format(q))
        if not self.count:
            return None
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        for i, n in enumerate(self.counts):
            seen += n
            if seen >= rank:
                return self.bounds[i] if i < len(self.bounds) else math.inf
        return math.inf  # counts summing to less than count: not made here

class Buckets:
    """
    The mutable histogram behind :py:class:`Histogram`: a fixed array of
    counters, one per bucket of :py:data:`BOUNDS`, and the count and sum
    of the samples.
    """
    __slots__ = ('count', 'counts', 'sum')

    def __init__(self) -> None:
        self.counts = [0] * (len(BOUNDS) + 1)
        self.count = 0
        self.sum = 0.0

    def record(self, seconds: float) -> None:
        """
        Count a sample in its bucket (a negative one, a clock difference
        between the broker and the client, counts as 0).
        """
        seconds = max(seconds, 0.0)
        self.counts[bisect_left(BOUNDS, seconds)] += 1
        self.count += 1
        self.sum += seconds

    def snapshot(self) -> Histogram:
        return Histogram(BOUNDS, tuple(self.counts), self.count, self.sum)

class RateWindow:
    """
    A rate computed from a counter when it is read: the counter's growth
    since the oldest reading kept, over the time since then.

    A reading is kept at most every ``window / 8`` seconds, and only the
    latest one at least ``window`` seconds old is kept of the older ones,
    so the rate covers ``window`` seconds and a little more when read
    often, the time since the previous reading when read less often (every
    minute, by a monitoring system: the last minute's rate), and the time
    since the counter started before that.

    :param now: The counter's start (monotonic clock), and its value then.
    :param window: Seconds the rate covers, at least.
    """
    __slots__ = ('_readings', 'window')

    def __init__(self, now: float, count: int = 0, window: float = RATE_WINDOW) -> None:
        if not window > 0:
            raise ValueError('a rate window is positive, got {!r}'.format(window))
        self.window = window
        self._readings: deque[tuple[float, int]] = deque([(now, count)])

    def rate(self, now: float, count: int) -> float:
        """The counter's rate, per second, with its value ``count`` at ``now``."""
        readings = self._readings
        start = now - self.window
        while len(readings) > 1 and readings[1][0] <= start:
            readings.popleft()
        then, before = readings[0]
        if now - readings[-1][0] >= self.window / 8:
            readings.append((now, count))
        return (count - before) / (now - then) if now > then else 0.0

class PublisherCounters:
    """
    Counters of the publishers of one stream (one object for the
    client's lifetime, kept by :py:class:`Counters`; a publisher holds
    it).
    """
    __slots__ = ('_listeners', 'confirm_latency', 'confirmed', 'errored', 'published', 'stream')

    def __init__(self, stream: str, listeners: list[LatencyListener]) -> None:
        self.stream = stream
        self.published = 0
        self.confirmed = 0
        self.errored = 0
        self.confirm_latency = Buckets()
        self._listeners = listeners

    def sample(self, seconds: float) -> None:
        """A confirmation took ``seconds`` since its message was sent."""
        self.confirm_latency.record(seconds)
        if self._listeners:
            notify(self._listeners, CONFIRM, self.stream, None, seconds)

class ConsumerCounters:
    """
    Counters of the subscriptions of one stream under one name (or none),
    for the client's lifetime, kept by :py:class:`Counters`; a
    subscription holds it.

    :ivar sample_at: When the next end-to-end latency sample is due
        (monotonic clock; see :py:meth:`sample`).
    """
    __slots__ = (
        '_listeners', '_rate', 'consumed', 'end_to_end_latency', 'name', 'sample_at', 'stream',
    )

    def __init__(
            self, stream: str, name: str | None, listeners: list[LatencyListener],
            now: float,
    ) -> None:
        self.stream = stream
        self.name = name
        self.consumed = 0
        self.end_to_end_latency = Buckets()
        self.sample_at = 0.0
        self._listeners = listeners
        self._rate = RateWindow(now)

    def sample(self, timestamp: float, arrived: float) -> None:
        """
        A chunk written by the broker at ``timestamp`` (its clock, seconds
        since the epoch) is taken by the application now; ``arrived``: when
        the subscription's last chunk arrived (monotonic clock), from
        which the next sample is due.

        The latency is this client's clock less the broker's: a difference
        of their clocks adds to it (a negative latency counts as 0). The
        broker timestamps a chunk in milliseconds, when it writes it: what
        a message waited in a publisher before is not in it.
        """
        self.sample_at = arrived + SAMPLE_INTERVAL
        seconds = time() - timestamp
        self.end_to_end_latency.record(seconds)
        if self._listeners:
            notify(self._listeners, END_TO_END, self.stream, self.name, max(0.0, seconds))

    def rate(self, now: float) -> float:
        """Messages consumed per second, recently (see :py:class:`RateWindow`)."""
        return self._rate.rate(now, self.consumed)

    @property
    def taken_at(self) -> float | None:
        """
        When the last chunk sampled arrived (monotonic clock; ``None``:
        none yet): a chunk the application takes is sampled unless one was
        within :py:data:`SAMPLE_INTERVAL` seconds before it, so the last
        chunk taken arrived at most that much later (for a health check,
        see :py:mod:`rbfly.streams.health`).
        """
        return self.sample_at - SAMPLE_INTERVAL if self.sample_at else None

def notify(
        listeners: list[LatencyListener], kind: str, stream: str, name: str | None,
        seconds: float,
) -> None:
    """
    Give a latency sample to the listeners; an error of one is logged, not
    raised (they run as a confirmation is read, or as the application
    takes a chunk).
    """
    for listener in listeners:
        try:
            listener(kind, stream, name, seconds)
        except Exception:  # the application's; see above
            logger.exception('latency listener %r failed', listener)

class Counters:
    """
    The client's counters (mutable; see :py:class:`Metrics`), and those of
    each stream (see :py:class:`StreamMetrics`).

    The publishers count in the counters of their stream
    (:py:meth:`publisher`): ``published``, ``confirmed`` and ``errored``
    are their sums.

    :ivar listeners: The latency listeners (see
        :py:meth:`~rbfly.streams.StreamsClient.add_latency_listener`).
    """
    __slots__ = (
        '_consumers',
        '_publishers',
        'chunk_bytes',
        'chunks',
        'chunks_skipped',
        'connections_lost',
        'connections_opened',
        'consumed',
        'dead_lettered',
        'handled',
        'handler_retries',
        'handler_skipped',
        'listeners',
        'messages_lost',
        'undecodable',
    )

    def __init__(self) -> None:
        self.chunks = 0
        self.chunk_bytes = 0
        self.chunks_skipped = 0
        self.consumed = 0
        self.connections_opened = 0
        self.connections_lost = 0
        self.messages_lost = 0
        self.undecodable = 0
        self.handled = 0
        self.handler_retries = 0
        self.handler_skipped = 0
        self.dead_lettered = 0
        self.listeners: list[LatencyListener] = []
        self._publishers: dict[str, PublisherCounters] = {}
        self._consumers: dict[tuple[str, str | None], ConsumerCounters] = {}

    def publisher(self, stream: str) -> PublisherCounters:
        """The counters of the publishers of ``stream`` (made on first use)."""
        counters = self._publishers.get(stream)
        if counters is None:
            counters = self._publishers[stream] = PublisherCounters(stream, self.listeners)
        return counters

    def consumer(self, stream: str, name: str | None) -> ConsumerCounters:
        """
        The counters of the subscriptions of ``stream`` under ``name``
        (made on first use).
        """
        key = (stream, name)
        counters = self._consumers.get(key)
        if counters is None:
            counters = self._consumers[key] = ConsumerCounters(
                stream, name, self.listeners, monotonic(),
            )
        return counters

    def publishing(self) -> list[PublisherCounters]:
        """The counters of every stream published to, in order of streams."""
        return [self._publishers[s] for s in sorted(self._publishers)]

    def consuming(self) -> list[ConsumerCounters]:
        """The counters of every consumer, in order of streams and names."""
        return [
            self._consumers[k]
            for k in sorted(self._consumers, key=lambda k: (k[0], k[1] is not None, k[1] or ''))
        ]

    @property
    def published(self) -> int:
        """Entries sent by publishers (the sum over streams)."""
        return sum(c.published for c in self._publishers.values())

    @property
    def confirmed(self) -> int:
        """Publishing ids confirmed (the sum over streams)."""
        return sum(c.confirmed for c in self._publishers.values())

    @property
    def errored(self) -> int:
        """Entries rejected or not encoded (the sum over streams)."""
        return sum(c.errored for c in self._publishers.values())


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
    :ivar messages_lost: Offsets subscriptions were to read and retention
        had removed (a start, a stored offset or a resume older than the
        stream's first, or retention overtaking a reader; see ``on_gap``
        of the subscribe methods), at most (offsets of records without
        messages count too).
    :ivar undecodable: Messages that were not AMQP 1.0 (raised, skipped,
        handed out as bytes, or given to the error policy of concurrent
        handlers, as ``on_decode_error`` says).
    :ivar handled: Messages concurrent handlers handled
        (:py:meth:`~rbfly.streams.StreamsClient.process`).
    :ivar handler_retries: Attempts concurrent handlers made again after
        an error.
    :ivar handler_skipped: Messages the error policy of concurrent
        handlers skipped.
    :ivar dead_lettered: Messages published to a dead-letter stream.
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
    messages_lost: int = 0
    undecodable: int = 0
    handled: int = 0
    handler_retries: int = 0
    handler_skipped: int = 0
    dead_lettered: int = 0

@dtc.dataclass(frozen=True, slots=True)
class ConsumerMetrics:
    """
    A consumer's metrics: the subscriptions of one stream (a partition,
    for a super stream) under one name, or without a name.

    :ivar stream: The stream.
    :ivar name: The subscriptions' name (a single active consumer's, or
        the offset reference's), ``None`` for those without one.
    :ivar subscriptions: Its subscriptions now.
    :ivar consumed: Messages it delivered to the application, since the
        client was created (counted as ``consumed`` of
        :py:class:`~rbfly.streams.Metrics`).
    :ivar lag: Messages its stream committed and its subscriptions have
        not taken yet, a lower bound (as ``consumer_lag`` of
        :py:class:`~rbfly.streams.Metrics`, summed over its subscriptions;
        0 without any).
    :ivar rate: Messages it delivered per second, over the last
        :py:data:`RATE_WINDOW` seconds or, when not read as often, since
        the previous reading (see :py:class:`RateWindow`).
    :ivar end_to_end_latency: Sampled ages of the chunks it delivered:
        when the application took a chunk less when the broker wrote it,
        to the millisecond, by the client's and the broker's clocks (an
        approximation: a difference of the clocks adds to it; the time a
        message spent in a publisher before is not in it; a subscription
        reading a stream's history sees the age of what it reads).
    """
    stream: str
    name: str | None
    subscriptions: int
    consumed: int
    lag: int
    rate: float
    end_to_end_latency: Histogram

@dtc.dataclass(frozen=True, slots=True)
class PublisherMetrics:
    """
    The metrics of the publishers of one stream (a partition, for a super
    stream), since the client was created.

    :ivar stream: The stream.
    :ivar publishers: Its publishers now.
    :ivar published: Entries sent (as ``published`` of
        :py:class:`~rbfly.streams.Metrics`).
    :ivar confirmed: Publishing ids confirmed.
    :ivar errored: Entries rejected or not encoded.
    :ivar outstanding_confirms: Entries sent and not confirmed yet.
    :ivar confirm_latency: Sampled times from sending a Publish frame to
        the confirmation of its last message (a sample is dropped when the
        message fails or the connection is lost).
    """
    stream: str
    publishers: int
    published: int
    confirmed: int
    errored: int
    outstanding_confirms: int
    confirm_latency: Histogram

@dtc.dataclass(frozen=True, slots=True)
class StreamMetrics:
    """
    A client's metrics per stream: its consumers and the streams it
    published to, since it was created (in order of streams; a consumer
    or stream stays, with its counters, when its subscriptions or
    publishers are gone).

    :ivar consumers: The consumers.
    :ivar publishers: The streams published to.
    """
    consumers: tuple[ConsumerMetrics, ...]
    publishers: tuple[PublisherMetrics, ...]

    @property
    def confirm_latency(self) -> Histogram:
        """The confirmation latency over all streams."""
        return Histogram.merge(p.confirm_latency for p in self.publishers)

    @property
    def end_to_end_latency(self) -> Histogram:
        """The end-to-end latency over all consumers."""
        return Histogram.merge(c.end_to_end_latency for c in self.consumers)

class PublisherView(tp.Protocol):
    """What :py:func:`stream_metrics` reads of a publisher."""
    @property
    def stream(self) -> str: ...

    @property
    def unconfirmed(self) -> int: ...

class SubscriptionView(tp.Protocol):
    """What :py:func:`stream_metrics` reads of a subscription."""
    @property
    def stats(self) -> ConsumerCounters: ...

    @property
    def lag(self) -> int: ...

def stream_metrics(
        counters: Counters,
        publishers: Iterable[PublisherView],
        subscriptions: Iterable[SubscriptionView],
        now: float,
) -> StreamMetrics:
    """
    The metrics per stream of a client with its counters, its publishers
    and subscriptions now, at ``now`` (monotonic clock).
    """
    lags: dict[int, int] = {}
    subs: dict[int, int] = {}
    for s in subscriptions:
        key = id(s.stats)
        lags[key] = lags.get(key, 0) + s.lag
        subs[key] = subs.get(key, 0) + 1
    consumers = tuple(
        ConsumerMetrics(
            c.stream, c.name, subs.get(id(c), 0), c.consumed, lags.get(id(c), 0),
            c.rate(now), c.end_to_end_latency.snapshot(),
        )
        for c in counters.consuming()
    )
    outstanding: dict[str, int] = {}
    pubs: dict[str, int] = {}
    for p in publishers:
        outstanding[p.stream] = outstanding.get(p.stream, 0) + p.unconfirmed
        pubs[p.stream] = pubs.get(p.stream, 0) + 1
    published = tuple(
        PublisherMetrics(
            c.stream, pubs.get(c.stream, 0), c.published, c.confirmed, c.errored,
            outstanding.get(c.stream, 0), c.confirm_latency.snapshot(),
        )
        for c in counters.publishing()
    )
    return StreamMetrics(consumers, published)


__all__ = [
    'BOUNDS', 'CONFIRM', 'END_TO_END', 'RATE_WINDOW', 'SAMPLE_INTERVAL', 'Buckets',
    'ConsumerCounters', 'ConsumerMetrics', 'Counters', 'Histogram', 'LatencyListener',
    'Metrics', 'PublisherCounters', 'PublisherMetrics', 'RateWindow', 'StreamMetrics',
    'stream_metrics',
]
