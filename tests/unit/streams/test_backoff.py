"""
The reconnection delay policy.
"""

import itertools

import pytest

from rbfly.streams.backoff import Backoff

def test_exponential_capped() -> None:
    """Without jitter the delays double up to the maximum."""
    delays = Backoff(initial=0.1, maximum=1, multiplier=2, jitter=0).delays()
    assert [round(d, 3) for d in itertools.islice(delays, 6)] == [0.1, 0.2, 0.4, 0.8, 1, 1]

def test_jitter_uses_injected_random() -> None:
    """Jitter takes a random fraction off each delay."""
    delays = Backoff(initial=1, maximum=1, jitter=0.5).delays(lambda: 1.0)
    assert next(delays) == 0.5
    delays = Backoff(initial=1, maximum=1, jitter=0.5).delays(lambda: 0.0)
    assert next(delays) == 1.0

def test_attempts() -> None:
    """A limited number of attempts means one delay fewer (no wait before the first)."""
    assert len(list(Backoff(attempts=3, jitter=0).delays())) == 2

@pytest.mark.parametrize('kw', [
    {'initial': -1}, {'initial': 2, 'maximum': 1}, {'multiplier': 0.5}, {'jitter': 2},
    {'attempts': 0},
])
def test_invalid(kw: dict[str, float]) -> None:
    """Nonsense policies are refused."""
    with pytest.raises(ValueError):
        Backoff(**kw)  # type: ignore[arg-type]
