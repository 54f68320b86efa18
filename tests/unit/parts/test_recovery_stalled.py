"""
A subscription whose broker reader stalled, subscribed again by the
recovery (:py:meth:`~rbfly.streams.parts.recovery.Recovery.resubscribe_stalled`,
see :py:mod:`rbfly.streams.subscriptions.stalled`): unsubscribed on its
connection and placed anew, unless it is being recovered already (its
connection closed or lost, being placed, or its stream changed), which
would place it twice. No sockets: the parts are fakes.
"""

from __future__ import annotations

import typing as tp

import pytest

from rbfly.streams.aio.records import attach, hold
from rbfly.streams.offset import Offset
from rbfly.streams.parts.recovery import Recovery
from rbfly.streams.parts.tasks import Background
from rbfly.streams.protocol.commands import OffsetSpec
from rbfly.streams.subscriptions.options import ReadOptions
from rbfly.streams.subscriptions.subscription import Subscription

class Protocol:
    is_open = True

    def __init__(self) -> None:
        self.publishers: dict[int, object] = {}
        self.subscriptions: dict[int, object] = {}

    def send(self, command: object) -> None:
        pass

class Manager:
    def __init__(self) -> None:
        self.publishers: set[object] = set()
        self.subscriptions: set[object] = set()

class Placer:
    def __init__(self) -> None:
        self.placed: set[object] = set()

    def placing(self, item: object) -> bool:
        return item in self.placed

class Declarer:
    def __init__(self) -> None:
        self.unsubscribed: list[Subscription] = []

    def unsubscribe(self, protocol: Protocol, sub: Subscription) -> None:
        self.unsubscribed.append(sub)

def parts() -> tuple[Recovery, Subscription, Manager, Placer, Declarer, list[Subscription]]:
    """A recovery, and a subscription held and declared on an open connection."""
    placer, declarer = Placer(), Declarer()
    recovery = Recovery(
        tp.cast(tp.Any, None), tp.cast(tp.Any, None), tp.cast(tp.Any, placer),
        tp.cast(tp.Any, declarer), tp.cast(tp.Any, None), Background(),
    )
    relocated: list[Subscription] = []
    recovery.relocate_subscription = relocated.append  # type: ignore[method-assign, assignment]
    sub = Subscription(
        's', OffsetSpec.offset(100), 100, {}, ReadOptions(amqp=False),
        resume_offset=Offset.offset(100),
    )
    manager = Manager()
    hold(tp.cast(tp.Any, manager), sub)
    attach(tp.cast(tp.Any, Protocol()), sub, 0)
    sub.declared()
    return recovery, sub, manager, placer, declarer, relocated

def test_resubscribed() -> None:
    """Unsubscribed on its connection, let go by its manager, and placed anew."""
    recovery, sub, manager, _, declarer, relocated = parts()
    assert recovery.resubscribe_stalled(sub, 'stalled')
    assert declarer.unsubscribed == [sub] and relocated == [sub]
    assert sub not in manager.subscriptions and sub.owner is None
    assert sub.lifecycle.reason == 'stalled'

def closed_connection(recovery: Recovery, sub: Subscription, placer: Placer) -> None:
    tp.cast(Protocol, sub.protocol).is_open = False

def lost_connection(recovery: Recovery, sub: Subscription, placer: Placer) -> None:
    sub.protocol = None

def being_placed(recovery: Recovery, sub: Subscription, placer: Placer) -> None:
    placer.placed.add(sub)

def stream_changed(recovery: Recovery, sub: Subscription, placer: Placer) -> None:
    recovery._changing[('s', tp.cast(tp.Any, sub.protocol))] = {sub}

@pytest.mark.parametrize('change', [
    closed_connection, lost_connection, being_placed, stream_changed,
])
def test_refused(change: tp.Callable[[Recovery, Subscription, Placer], None]) -> None:
    """Being recovered already: left alone (placed twice, two readers would feed it)."""
    recovery, sub, manager, placer, declarer, relocated = parts()
    change(recovery, sub, placer)
    assert not recovery.resubscribe_stalled(sub, 'stalled')
    assert not declarer.unsubscribed and not relocated and sub in manager.subscriptions
