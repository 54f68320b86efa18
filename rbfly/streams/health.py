"""
A client's health in one call: :py:meth:`~rbfly.streams.StreamsClient.health`
gives a :py:class:`Health`, what its connections, publishers and
subscriptions are doing now and a verdict, for a service's liveness and
readiness probes (see ``doc/operating.rst``).

The verdict (:py:func:`judge`, a function of the snapshot and of
:py:class:`HealthLimits`, without I/O or clock):

- **unhealthy** (the client cannot do its work now): a connection holding
  publishers or subscriptions is lost (the client is reconnecting: not
  ready; a liveness probe gives it time, see the recipe), or a publisher
  or subscription was given up (closed with an error);
- **degraded** (working, with something to look at): a publisher or
  subscription being declared again (its stream's leader moved); a
  publisher whose oldest timed message waits for its confirmation longer
  than ``confirm_stall``; a subscription with a lag that took no message
  for ``message_stall`` seconds (a consumer caught up and waiting for
  messages is healthy, however long it waits);
- **healthy** otherwise; a client with nothing open (connected on its next
  call) is healthy.

Times are approximate by design: a publisher's are those of the
confirmations it times for its latency metric (one at a time, at most
every :py:data:`~rbfly.streams.metrics.SAMPLE_INTERVAL`), a consumer's
those of the chunks it samples, so keeping them costs the publishing and
consuming paths nothing; they are within about a tenth of a second, and
a confirmation's latency, of the last one.
"""

from __future__ import annotations

import dataclasses as dtc
import enum
from collections.abc import Sequence

from .lifecycle import ResourceState

class Verdict(enum.Enum):
    """How a client is doing (see :py:mod:`rbfly.streams.health`)."""
    HEALTHY = 'healthy'
    DEGRADED = 'degraded'
    UNHEALTHY = 'unhealthy'

@dtc.dataclass(frozen=True, slots=True)
class HealthLimits:
    """
    When a publisher or subscription counts as stalled.

    :ivar confirm_stall: Seconds a sent message may wait for its
        confirmation (RabbitMQ confirms in milliseconds; a replicated
        stream whose replicas are slow in seconds).
    :ivar message_stall: Seconds a subscription with a lag may take no
        message.
    """
    confirm_stall: float = 10.0
    message_stall: float = 60.0

    def __post_init__(self) -> None:
        for name in ('confirm_stall', 'message_stall'):
            if not getattr(self, name) > 0:
                raise ValueError('{} must be more than 0 seconds, got {!r}'.format(
                    name, getattr(self, name)))

@dtc.dataclass(frozen=True, slots=True)
class ConnectionHealth:
    """
    One of the client's connections.

    :ivar own: The client's own connection (else one to a cluster's node
        where publishers or subscriptions are placed).
    :ivar node: The broker's ``(host, port)`` it goes (or went) to;
        ``None`` before the first one.
    :ivar open: Whether it is open.
    :ivar since: Seconds since it opened (open), or was lost (not open;
        ``None``: never opened, or closed by the client).
    :ivar error: Why it was lost (``None``: open, or never lost).
    :ivar publishers: Publishers it holds (to declare again, when lost).
    :ivar subscriptions: Subscriptions it holds.
    """
    own: bool
    node: tuple[str, int] | None
    open: bool
    since: float | None
    error: str | None
    publishers: int
    subscriptions: int

@dtc.dataclass(frozen=True, slots=True)
class PublisherHealth:
    """
    A publisher.

    :ivar stream: Its stream (a partition's, for a super stream's).
    :ivar name: Its name (deduplication).
    :ivar state: Its state.
    :ivar unconfirmed: Messages sent and not confirmed yet.
    :ivar since_confirmation: Seconds since its last timed confirmation
        (``None``: none yet).
    :ivar waiting: Seconds the timed message sent last waits for its
        confirmation (``None``: it has none waiting).
    """
    stream: str
    name: str
    state: ResourceState
    unconfirmed: int
    since_confirmation: float | None
    waiting: float | None

@dtc.dataclass(frozen=True, slots=True)
class SubscriptionHealth:
    """
    A subscription.

    :ivar stream: Its stream (a partition, for a super stream).
    :ivar name: Its name (``None``: without one).
    :ivar state: Its state.
    :ivar connected: Whether it is subscribed on an open connection.
    :ivar active: Whether the broker sends to it (a single active
        consumer's other members are not active: healthy and idle).
    :ivar lag: Messages committed and not taken yet, a lower bound
        (as the ``lag`` of :py:meth:`~rbfly.streams.StreamsClient.stream_metrics`).
    :ivar since_message: Seconds since its consumer (its stream and name)
        last took a chunk of messages (``None``: none yet).
    """
    stream: str
    name: str | None
    state: ResourceState
    connected: bool
    active: bool
    lag: int
    since_message: float | None

@dtc.dataclass(frozen=True, slots=True)
class Health:
    """
    A client's health (:py:meth:`~rbfly.streams.StreamsClient.health`).

    :ivar verdict: Healthy, degraded or unhealthy.
    :ivar reasons: Why it is not healthy, a line each (empty: healthy).
    :ivar connections: Its connections, its own first.
    :ivar publishers: Its publishers.
    :ivar subscriptions: Its subscriptions.
    """
    verdict: Verdict
    reasons: tuple[str, ...]
    connections: tuple[ConnectionHealth, ...]
    publishers: tuple[PublisherHealth, ...]
    subscriptions: tuple[SubscriptionHealth, ...]

    @property
    def ok(self) -> bool:
        """Not unhealthy: ready for work (a readiness probe's answer)."""
        return self.verdict is not Verdict.UNHEALTHY

    def __str__(self) -> str:
        """The verdict, and its reasons, a line each."""
        return '\n'.join([self.verdict.value, *('- ' + r for r in self.reasons)])

def _node(node: tuple[str, int] | None) -> str:
    return 'the broker' if node is None else '{}:{}'.format(*node)

def judge(
        connections: Sequence[ConnectionHealth],
        publishers: Sequence[PublisherHealth],
        subscriptions: Sequence[SubscriptionHealth],
        limits: HealthLimits = HealthLimits(),
) -> Health:
    """The verdict on a client's connections, publishers and subscriptions."""
    bad: list[str] = []
    slow: list[str] = []
    for c in connections:
        if not c.open and (c.publishers or c.subscriptions):
            bad.append('connection to {} lost{}{}: reconnecting, holding {} publisher(s)'
                       ' and {} subscription(s)'.format(
                           _node(c.node),
                           '' if c.since is None else ' {:.1f}s ago'.format(c.since),
                           '' if c.error is None else ' ({})'.format(c.error),
                           c.publishers, c.subscriptions))
    for p in publishers:
        what = 'publisher {!r} of stream {!r}'.format(p.name, p.stream)
        if p.state is ResourceState.CLOSED:
            bad.append('{} closed, {} message(s) unconfirmed'.format(what, p.unconfirmed))
        elif p.state is ResourceState.RECOVERING:
            slow.append('{} being declared again'.format(what))
        if p.unconfirmed and p.waiting is not None and p.waiting >= limits.confirm_stall:
            slow.append('{}: a message waits {:.1f}s for its confirmation ({} unconfirmed)'
                        .format(what, p.waiting, p.unconfirmed))
    for s in subscriptions:
        what = 'subscription {!r} of stream {!r}'.format(s.name, s.stream)
        if s.state is ResourceState.CLOSED:
            bad.append('{} closed'.format(what))
        elif s.state is ResourceState.RECOVERING and s.connected:
            slow.append('{} being subscribed again'.format(what))
        elif s.connected and s.active and s.lag and s.since_message is not None \
                and s.since_message >= limits.message_stall:
            slow.append('{}: lag {}, no message for {:.1f}s'.format(
                what, s.lag, s.since_message))
    verdict = Verdict.UNHEALTHY if bad else Verdict.DEGRADED if slow else Verdict.HEALTHY
    return Health(verdict, (*bad, *slow), tuple(connections), tuple(publishers),
                  tuple(subscriptions))

__all__ = [
    'ConnectionHealth', 'Health', 'HealthLimits', 'PublisherHealth', 'SubscriptionHealth',
    'Verdict', 'judge',
]
