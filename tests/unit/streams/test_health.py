"""
The verdict on a client's health (:py:func:`rbfly.streams.health.judge`)
and the probes' answers (:py:class:`rbfly.streams.probes.Probes`), from
snapshots made by hand: no broker, no socket, no clock.
"""

import dataclasses as dtc
import json

import pytest

from rbfly.streams import ResourceState
from rbfly.streams.health import (
    ConnectionHealth,
    HealthLimits,
    PublisherHealth,
    SubscriptionHealth,
    Verdict,
    judge,
)
from rbfly.streams.probes import Probes

OPEN = ResourceState.OPEN
CONNECTED = ConnectionHealth(True, ('rabbit', 5552), True, 12.0, None, 1, 1)
LOST = ConnectionHealth(True, ('rabbit', 5552), False, 2.5, 'connection reset', 1, 1)
PUB = PublisherHealth('orders', 'app-1', OPEN, 0, 0.05, None)
SUB = SubscriptionHealth('orders', 'billing', OPEN, True, True, 0, 0.2)

def test_healthy() -> None:
    """Open, confirming, taking messages: healthy, no reason; ``ok``."""
    h = judge([CONNECTED], [PUB], [SUB])
    assert (h.verdict, h.reasons, h.ok, str(h)) == (Verdict.HEALTHY, (), True, 'healthy')

def test_idle_client_healthy() -> None:
    """A client with nothing open and nothing held (connected on its next call)."""
    idle = ConnectionHealth(True, None, False, None, None, 0, 0)
    assert judge([idle], [], []).verdict is Verdict.HEALTHY
    # lost, but holding nothing: nothing to reconnect for
    assert judge([dtc.replace(LOST, publishers=0, subscriptions=0)], [], []).ok

def test_lost_connection_unhealthy() -> None:
    """A lost connection holding work: unhealthy, saying where, since when and why."""
    h = judge([LOST], [dtc.replace(PUB, state=ResourceState.RECOVERING)], [SUB])
    assert (h.verdict, h.ok) == (Verdict.UNHEALTHY, False)
    assert h.reasons[0] == ("connection to rabbit:5552 lost 2.5s ago (connection reset):"
                            " reconnecting, holding 1 publisher(s) and 1 subscription(s)")
    assert str(h).startswith('unhealthy\n- connection to rabbit:5552 lost')

def test_closed_publisher_unhealthy() -> None:
    h = judge([CONNECTED], [dtc.replace(PUB, state=ResourceState.CLOSED, unconfirmed=3)], [])
    assert h.verdict is Verdict.UNHEALTHY
    assert h.reasons == ("publisher 'app-1' of stream 'orders' closed, 3 message(s)"
                         " unconfirmed",)

@pytest.mark.parametrize('waiting, expected', [
    (None, Verdict.HEALTHY), (9.9, Verdict.HEALTHY), (10.0, Verdict.DEGRADED),
])
def test_confirmation_stall(waiting: float | None, expected: Verdict) -> None:
    """A message waiting ``confirm_stall`` seconds for its confirmation: degraded."""
    pub = dtc.replace(PUB, unconfirmed=100, waiting=waiting)
    h = judge([CONNECTED], [pub], [])
    assert h.verdict is expected
    if expected is Verdict.DEGRADED:
        assert h.reasons == ("publisher 'app-1' of stream 'orders': a message waits 10.0s for"
                             " its confirmation (100 unconfirmed)",)
        assert h.ok

def test_message_stall() -> None:
    """
    A subscription with a lag and no message for ``message_stall``
    seconds: degraded; caught up and waiting, or an inactive member of a
    single active group, however long: healthy.
    """
    limits = HealthLimits(message_stall=30)
    stalled = dtc.replace(SUB, lag=500, since_message=31.0)
    assert judge([CONNECTED], [], [stalled], limits).reasons == (
        "subscription 'billing' of stream 'orders': lag 500, no message for 31.0s",)
    assert judge([CONNECTED], [], [dtc.replace(stalled, lag=0)], limits).verdict \
        is Verdict.HEALTHY
    assert judge([CONNECTED], [], [dtc.replace(stalled, active=False)], limits).verdict \
        is Verdict.HEALTHY
    assert judge([CONNECTED], [], [stalled]).verdict is Verdict.HEALTHY  # 60 s by default

def test_reasons_unhealthy_first() -> None:
    h = judge([CONNECTED, LOST], [dtc.replace(PUB, unconfirmed=1, waiting=60.0)], [])
    assert h.verdict is Verdict.UNHEALTHY
    assert [r.split(' ')[0] for r in h.reasons] == ['connection', 'publisher']

def test_limits_checked() -> None:
    with pytest.raises(ValueError, match='confirm_stall must be more than 0 seconds, got 0'):
        HealthLimits(confirm_stall=0)

class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

def test_probes() -> None:
    """
    ``/readyz`` fails at once when unhealthy; ``/livez`` after ``grace``
    seconds unhealthy without a break, and passes again once healthy.
    """
    clock = Clock()
    state = [judge([CONNECTED], [], [])]
    probes = Probes(lambda: state[0], grace=60, clock=clock)
    assert (probes.readyz().status, probes.livez().status) == (200, 200)
    state[0] = judge([LOST], [], [])
    assert probes.readyz().status == 503
    assert 'connection to rabbit:5552 lost' in probes.readyz().body
    clock.now += 59.9
    assert probes.livez().status == 200
    clock.now += 0.1
    r = probes.livez()
    assert r.status == 503 and r.body.startswith('unhealthy for 60s\n'), r.body
    doc = json.loads(probes.health_json().body)
    assert (doc['verdict'], doc['connections'][0]['node']) == ('unhealthy', ['rabbit', 5552])
    state[0] = judge([CONNECTED], [], [])
    assert (probes.readyz().status, probes.livez().status) == (200, 200)
    # unhealthy again: the grace starts again
    state[0] = judge([LOST], [], [])
    clock.now += 30
    assert (probes.readyz().status, probes.livez().status) == (503, 200)
