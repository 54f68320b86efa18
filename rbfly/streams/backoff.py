"""
Reconnection delays: exponential, capped and jittered; and the pace of one
connection's reconnections, set by its progress.

Jitter spreads the reconnections of many clients after a broker restart,
so they do not all arrive at once. The random source is injectable, and
:py:class:`Pace` takes the time as an argument, so the policy is tested
without sleeping or chance.
"""

from __future__ import annotations

import dataclasses as dtc
import random
from collections.abc import Callable, Iterator

@dtc.dataclass(frozen=True)
class Backoff:
    """
    Delay policy between reconnection attempts.

    :param initial: First delay in seconds.
    :param maximum: Largest delay in seconds.
    :param multiplier: Growth of the delay after each failed attempt.
    :param jitter: Fraction of each delay that is random (0: none, 1: the
        delay is uniform between 0 and its nominal value).
    :param attempts: Attempts before giving up (``None``: never give up).
    :param stalls: Connections in a row lost before any progress (no
        confirmation, no chunk on them, within 10 seconds of opening)
        before giving up (``None``: never give up). Each waits the next
        delay; with the default delays, 10 of them take
        about a minute: a broker that accepts connections and drops each
        of them, or a chunk the client refuses for good, ends the
        publishers and subscriptions involved with
        :py:class:`~rbfly.streams.RecoveryStalled` instead of
        retrying every 30 seconds for ever. A broker that refuses
        connections (down, restarting) is waited for as ``attempts`` says.
    :param stall_time: Seconds from the first of such losses in a row
        before the client may give up, however many ``stalls`` came
        within them (``stalls=0`` gives up at the first loss all the
        same). A cluster electing a new stream leader drops the
        connections that ask about the stream meanwhile (RabbitMQ 4.0
        closes a connection whose publisher sequence query finds no
        leader), for seconds: short delays would use the stalls up within
        the election. With the default delays, the stalls take longer
        than this anyway. Each loss also takes one of the ``attempts``,
        when those are limited: they may end recovery sooner.
    """
    initial: float = 0.1
    maximum: float = 30.0
    multiplier: float = 2.0
    jitter: float = 0.5
    attempts: int | None = None
    stalls: int | None = 10
    stall_time: float = 30.0

    def __post_init__(self) -> None:
        if self.initial < 0 or self.maximum < self.initial or self.multiplier < 1:
            raise ValueError('backoff needs 0 <= initial <= maximum and multiplier >= 1')
        if not 0 <= self.jitter <= 1:
            raise ValueError('backoff jitter must be within 0..1')
        if self.attempts is not None and self.attempts < 1:
            raise ValueError('backoff attempts must be at least 1')
        if self.stalls is not None and self.stalls < 0:
            raise ValueError('backoff stalls must be at least 0')
        if not self.stall_time >= 0:  # NaN too
            raise ValueError('backoff stall_time must be at least 0')

    def delays(self, rand: Callable[[], float] = random.random) -> Iterator[float]:
        """
        Delays to wait before each attempt after the first.
        """
        delay = self.initial
        n = 1
        while self.attempts is None or n < self.attempts:
            yield delay * (1 - self.jitter * rand())
            delay = min(delay * self.multiplier, self.maximum)
            n += 1

class Pace:
    """
    The pace of the reconnections of one connection (or of the
    connections to one node): the backoff's delays, by progress.

    A connection that made progress (the broker confirmed a message or
    delivered a chunk on it) proves that the broker accepted what the
    client restored there: its loss starts afresh, reconnecting at once.
    One lost before any progress is a failed attempt: the next connection
    waits the backoff's next delay (at most one reconnection per delay),
    and after :py:attr:`Backoff.stalls` of them in a row, spanning at
    least :py:attr:`Backoff.stall_time` seconds, the client gives up.
    Failed attempts to connect or to restore take the delays too, without
    counting as stalls.

    The owner of the connection (the connection manager) reports its
    losses; the time is passed in (no clock here).

    :param backoff: The delays, and the limits of attempts and stalls.
    :param rand: Random source of the jitter.
    """
    def __init__(
            self, backoff: Backoff, rand: Callable[[], float] = random.random,
    ) -> None:
        self.backoff = backoff
        self._rand = rand
        self._delays: Iterator[float] | None = None
        self.stalled = 0
        """Connections in a row lost before any progress."""
        self.stalled_since = 0.0
        """Time of the first of those losses."""
        self.not_before = 0.0
        """Time before which no connection is to be opened."""
        self.gave_up_after = 0
        """Connections lost before any progress when :py:meth:`stall` last gave up."""

    def progressed(self) -> None:
        """A connection lost after progress (or a given-up one): start afresh."""
        self._delays = None
        self.stalled = 0
        self.not_before = 0.0

    def failed(self, now: float) -> float | None:
        """
        An attempt failed: the delay before the next one, or ``None`` when
        the backoff's attempts are used up (start afresh then).
        """
        if self._delays is None:
            self._delays = self.backoff.delays(self._rand)
        delay = next(self._delays, None)
        if delay is None:
            self.progressed()
            return None
        self.not_before = now + delay
        return delay

    def stall(self, now: float) -> float | None:
        """
        A connection was lost before any progress: the delay before the
        next one, or ``None`` to give up (stalls or attempts used up;
        start afresh then).
        """
        if self.stalled == 0:
            self.stalled_since = now
        self.stalled += 1
        limit = self.backoff.stalls
        stalled = self.stalled
        used_up = (
            limit is not None and stalled > limit
            and (limit == 0 or now - self.stalled_since >= self.backoff.stall_time)
        )
        delay = None if used_up else self.failed(now)
        if delay is None:
            self.progressed()
            self.gave_up_after = stalled
        return delay

    def wait(self, now: float) -> float:
        """Seconds to wait before opening a connection."""
        return max(0.0, self.not_before - now)

__all__ = ['Backoff', 'Pace']
