"""
The reconnection delay policy.
"""

import itertools

import pytest

from rbfly.streams.backoff import Backoff, Pace

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
    {'attempts': 0}, {'stalls': -1}, {'stall_time': -1},
])
def test_invalid(kw: dict[str, float]) -> None:
    """Nonsense policies are refused."""
    with pytest.raises(ValueError):
        Backoff(**kw)  # type: ignore[arg-type]

def test_default_stalls() -> None:
    """By default the client gives up after 10 connections in a row lost before progress."""
    assert Backoff().stalls == 10

def test_pace_by_progress() -> None:
    """
    Losses before progress take the delays in turn and set when the next
    connection may open; progress starts afresh (no wait).
    """
    pace = Pace(Backoff(initial=1, maximum=4, multiplier=2, jitter=0))
    assert pace.wait(0) == 0
    assert pace.stall(10) == 1
    assert pace.wait(10) == 1 and pace.wait(10.5) == 0.5 and pace.wait(12) == 0
    assert pace.stall(20) == 2
    assert pace.failed(30) == 4  # a failed attempt takes a delay, not a stall
    assert pace.stalled == 2
    pace.progressed()
    assert (pace.stalled, pace.wait(30)) == (0, 0)
    assert pace.stall(40) == 1

def test_pace_gives_up_after_stalls() -> None:
    """After the backoff's stalls, :py:meth:`Pace.stall` gives up and starts afresh."""
    pace = Pace(Backoff(initial=1, maximum=1, jitter=0, stalls=2, stall_time=0))
    assert [pace.stall(0), pace.stall(0), pace.stall(0)] == [1, 1, None]
    assert (pace.gave_up_after, pace.stalled, pace.wait(0)) == (3, 0, 0)
    assert pace.stall(0) == 1

def test_pace_stall_time() -> None:
    """
    Stalls within the backoff's ``stall_time`` of the first do not give
    up (a cluster's leader election drops connections for seconds); the
    first stall after it does.
    """
    pace = Pace(Backoff(initial=1, maximum=1, jitter=0, stalls=2, stall_time=30))
    assert [pace.stall(t) for t in (100, 101, 102, 129.9)] == [1, 1, 1, 1]
    assert pace.stall(130) is None
    assert pace.gave_up_after == 5
    assert pace.stall(200) == 1  # afresh: its own stall time from here
    assert [pace.stall(t) for t in (201, 229)] == [1, 1]
    pace.progressed()
    assert [pace.stall(t) for t in (300, 301, 302)] == [1, 1, 1]
    assert pace.stall(330) is None

def test_pace_no_stalls_gives_up_at_once() -> None:
    """``stalls=0`` gives up at the first stall, whatever the stall time."""
    pace = Pace(Backoff(initial=1, maximum=1, jitter=0, stalls=0))
    assert pace.stall(0) is None

def test_stall_time_nan_refused() -> None:
    """A stall time of NaN (never reached, never giving up) is refused."""
    with pytest.raises(ValueError):
        Backoff(stall_time=float('nan'))

def test_pace_gives_up_after_attempts() -> None:
    """The backoff's attempts used up: given up too."""
    pace = Pace(Backoff(initial=1, maximum=1, jitter=0, attempts=2, stalls=None))
    assert [pace.stall(0), pace.stall(0)] == [1, None]
    assert pace.gave_up_after == 2
    assert pace.failed(0) == 1 and pace.failed(0) is None

def test_pace_jitter() -> None:
    """The pace takes the jitter of its random source."""
    pace = Pace(Backoff(initial=1, maximum=1, jitter=0.5), rand=lambda: 1.0)
    assert pace.stall(0) == 0.5
