"""
The client observed: its counters and metrics, its subscriptions' state,
its health, and latency samples as they are taken; the methods of
:py:class:`~rbfly.streams.StreamsClient` that read them (see
:py:mod:`.forward`), from its connections and counters. Nothing here
sends anything to a broker.
"""

from __future__ import annotations

import asyncio
from time import monotonic

from ..health import Health, HealthLimits
from ..metrics import Counters, LatencyListener, Metrics, StreamMetrics
from ..parts.connections import Connections
from ..subscriptions.state import SubscriptionState

class Observing:
    """
    The facade's methods telling how the client is doing.

    :param connections: The client's connections, and what they hold.
    :param counters: The client's counters since it was created.
    """
    def __init__(self, connections: Connections, counters: Counters) -> None:
        self._connections = connections
        self._counters = counters

    def metrics(self) -> Metrics:
        """
        Counters of the client since it was created, and its connections,
        publishers and subscriptions now (see :py:mod:`rbfly.streams.metrics`).
        """
        return self._connections.metrics(self._counters)

    def stream_metrics(self) -> StreamMetrics:
        """
        The client's metrics per stream (a partition, for a super stream):
        of each consumer (a stream and a subscription name, if any) its
        lag, messages consumed, rate and end-to-end latency; of each
        stream published to, its entries published, confirmed and
        rejected, and the confirmation latency (see
        :py:mod:`rbfly.streams.metrics`).
        """
        return self._connections.stream_metrics(self._counters)

    def subscription_states(self) -> list[SubscriptionState]:
        """
        The client's subscriptions as they are now, for debugging a
        consumer that stopped making progress: of each, whether the broker
        sends to it (a single active consumer: whether it is active), its
        next and received offsets, the chunks it buffers, the credits the
        broker holds for it, its consumer updates under way (see
        :py:mod:`rbfly.streams.subscriptions.state`). Those its connections
        hold: subscribed, or to be subscribed again after a loss; its own
        connection's first.
        """
        return self._connections.subscription_states()

    def health(self, limits: HealthLimits | None = None) -> Health:
        """
        The client's health now, for a service's liveness and readiness
        probes: its connections (open or not, the broker, since when), its
        publishers (messages unconfirmed, seconds since the last
        confirmation), its subscriptions (seconds since the last message,
        lag), and a verdict, healthy, degraded or unhealthy, with the
        reasons (see :py:mod:`rbfly.streams.health`). It reads what the
        client holds, sends nothing.

        :param limits: When a publisher or subscription counts as stalled
            (default: :py:class:`~rbfly.streams.health.HealthLimits`).
        """
        try:  # the connections' times are the event loop's
            now = asyncio.get_running_loop().time()
        except RuntimeError:  # not in the loop (the blocking facade's thread): the same clock
            now = monotonic()
        return self._connections.health(HealthLimits() if limits is None else limits, now)

    def add_latency_listener(self, listener: LatencyListener) -> None:
        """
        Call ``listener(kind, stream, name, seconds)`` with each latency
        sample from now on: its kind, ``'confirm'`` or ``'end_to_end'``,
        the stream, the consumer's name (``None`` for a confirmation, or a
        subscription without a name) and the latency (see
        :py:mod:`rbfly.streams.metrics`), e.g. to record it in a histogram
        of a monitoring system with buckets of its own
        (:py:func:`rbfly.streams.otel.instrument` does). It runs as a
        confirmation is read, or as the application takes a chunk: it
        should return quickly; an error it raises is logged, not raised.
        Samples are rare (at most ten a second for each publisher
        and each consumer), so it costs the publishing and
        consuming paths nothing measurable.

        :raises TypeError: When ``listener`` is not callable.
        """
        if not callable(listener):
            raise TypeError('a listener must be callable, got {!r}'.format(listener))
        self._counters.listeners.append(listener)

__all__ = ['Observing']
