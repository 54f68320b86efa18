"""
Reconnection delays: exponential, capped and jittered.

Jitter spreads the reconnections of many clients after a broker restart,
so they do not all arrive at once. The random source is injectable, so the
policy is tested without sleeping or chance.
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
    """
    initial: float = 0.1
    maximum: float = 30.0
    multiplier: float = 2.0
    jitter: float = 0.5
    attempts: int | None = None

    def __post_init__(self) -> None:
        if self.initial < 0 or self.maximum < self.initial or self.multiplier < 1:
            raise ValueError('backoff needs 0 <= initial <= maximum and multiplier >= 1')
        if not 0 <= self.jitter <= 1:
            raise ValueError('backoff jitter must be within 0..1')
        if self.attempts is not None and self.attempts < 1:
            raise ValueError('backoff attempts must be at least 1')

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

__all__ = ['Backoff']
