"""
Who holds a publisher or a subscription (:py:mod:`rbfly.streams.aio.records`):
the manager's set and the item's ``owner``; the connection's id table and
the item's ``protocol`` and ``ident``. Fake managers and connections are
plain objects with the sets and tables; the items are real publishers
(with a fake host) and subscriptions.
"""

from __future__ import annotations

import typing as tp

import pytest

from rbfly.error import RbFlyError
from rbfly.streams.aio.connection import ABANDONED, StreamsProtocol
from rbfly.streams.aio.manager import ConnectionManager
from rbfly.streams.aio.records import (
    MAX_IDS,
    Held,
    Kind,
    attach,
    detach,
    free_id,
    hold,
    let_go,
    release_id,
    reserve,
)
from rbfly.streams.metrics import Counters
from rbfly.streams.offset import Offset
from rbfly.streams.protocol.base import OffsetSpec
from rbfly.streams.publishers.awaited import Publisher
from rbfly.streams.subscriptions.options import ReadOptions
from rbfly.streams.subscriptions.subscription import Subscription

class Host:
    """A publisher's host (:py:class:`rbfly.streams.publishers.base.PublisherHost`)."""
    def __init__(self) -> None:
        self.counters = Counters()
        self.spin = 0.0

    def publisher_unknown(self, publisher: object) -> None:
        raise AssertionError('not sent anything')

    async def wait_recovery(self, publisher: object) -> None:
        raise AssertionError('no connection to recover')

class Manager:
    """What the records see of a connection manager."""
    def __init__(self) -> None:
        self.publishers: set[object] = set()
        self.subscriptions: set[object] = set()

class Connection:
    """What the records see of a connection."""
    def __init__(self) -> None:
        self.publishers: dict[int, object] = {}
        self.subscriptions: dict[int, object] = {}

def manager() -> ConnectionManager[tp.Any, tp.Any]:
    return tp.cast(ConnectionManager[tp.Any, tp.Any], Manager())

def connection() -> StreamsProtocol:
    return tp.cast(StreamsProtocol, Connection())

def publisher() -> Publisher:
    return Publisher(tp.cast(tp.Any, Host()), 'orders', 0, 'name', 0)

def subscription(credit: int = 4) -> Subscription:
    return Subscription(
        'orders', OffsetSpec.next(), 0, {}, ReadOptions(credit=credit),
        resume_offset=Offset.NEXT,
    )

def item(kind: Kind) -> Held:
    return tp.cast(Held, publisher() if kind == 'publishers' else subscription())

def table(holder: tp.Any, kind: Kind) -> tp.Any:
    return holder.publishers if kind == 'publishers' else holder.subscriptions

def other(kind: Kind) -> Kind:
    return 'subscriptions' if kind == 'publishers' else 'publishers'

KINDS = pytest.mark.parametrize('kind', ['publishers', 'subscriptions'])

#
# held by a manager
#

@KINDS
def test_hold_and_let_go(kind: Kind) -> None:
    m = manager()
    x = item(kind)
    assert x.owner is None
    hold(m, x)
    assert x.owner is m
    assert table(m, kind) == {x}
    assert table(m, other(kind)) == set()

    hold(m, x)  # again: nothing changes
    assert x.owner is m and table(m, kind) == {x}

    assert let_go(x) is m
    assert x.owner is None
    assert table(m, kind) == set()

@KINDS
def test_let_go_of_unheld(kind: Kind) -> None:
    x = item(kind)
    assert let_go(x) is None
    assert x.owner is None

@KINDS
def test_hold_moves_from_previous_owner(kind: Kind) -> None:
    first, second = manager(), manager()
    x, y = item(kind), item(kind)
    hold(first, x)
    hold(first, y)
    hold(second, x)
    assert x.owner is second
    assert table(first, kind) == {y}
    assert table(second, kind) == {x}
    assert let_go(x) is second
    assert table(first, kind) == {y}  # the previous owner's set is not touched again
    assert table(second, kind) == set()

def test_hold_leaves_attachment() -> None:
    """Holding is not being attached: the connection's records stay as they are."""
    m, c = manager(), connection()
    p = publisher()
    attach(c, p, 3)
    hold(m, p)
    let_go(p)
    assert (p.protocol, p.ident, c.publishers) == (c, 3, {3: p})

#
# attached to a connection
#

def test_attach_subscription() -> None:
    """Attaching records the id both ways and grants the subscription its credit."""
    c = connection()
    sub = subscription(credit=7)
    woken: list[bool] = []
    sub.notify = lambda: woken.append(True)
    attach(c, sub, 5)
    assert c.subscriptions == {5: sub}
    assert c.publishers == {}
    assert (sub.protocol, sub.ident) == (c, 5)
    assert sub._policy.inflight == 7
    assert woken == [True]

    detach(sub)
    assert c.subscriptions == {}
    assert sub.protocol is None

def test_attach_publisher() -> None:
    """Attaching a publisher makes it ready to send."""
    c = connection()
    p = publisher()
    assert not p._ready.is_set()
    attach(c, p, 2)
    assert c.publishers == {2: p}
    assert c.subscriptions == {}
    assert (p.protocol, p.ident) == (c, 2)
    assert p._ready.is_set()

    detach(p)
    assert c.publishers == {}
    assert p.protocol is None

@KINDS
def test_detach_unattached(kind: Kind) -> None:
    x = item(kind)
    detach(x)
    assert x.protocol is None

@KINDS
def test_detach_leaves_id_taken_by_another(kind: Kind) -> None:
    """An id given to something else meanwhile stays with it."""
    c = connection()
    x, y = item(kind), item(kind)
    attach(c, x, 1)
    table(c, kind)[1] = ABANDONED
    detach(x)
    assert table(c, kind) == {1: ABANDONED}
    assert x.protocol is None
    attach(c, y, 1)
    detach(x)  # (not attached anywhere: no-op)
    assert table(c, kind) == {1: y}

def test_detach_from_failed_subscription() -> None:
    """A subscription that fails is detached from its connection."""
    c = connection()
    sub = subscription()
    attach(c, sub, 0)
    sub.fail(RbFlyError('gone'))
    assert c.subscriptions == {}
    assert sub.protocol is None
    with pytest.raises(RbFlyError, match='gone'):
        sub.poll()

#
# ids
#

@KINDS
def test_reserve_and_release(kind: Kind) -> None:
    """Reserved ids are the lowest free ones; a released id is taken again first."""
    c = connection()
    x, y, z = item(kind), item(kind), item(kind)
    assert reserve(c, x) == 0
    assert reserve(c, y) == 1
    assert table(c, kind) == {0: x, 1: y}
    assert table(c, other(kind)) == {}
    assert x.protocol is None  # reserved, not attached
    release_id(c, x, 0)
    assert table(c, kind) == {1: y}
    assert reserve(c, z) == 0
    assert table(c, kind) == {0: z, 1: y}

@KINDS
def test_release_id_of_someone_else(kind: Kind) -> None:
    """``release_id`` does not free an id held by something else now."""
    c = connection()
    x, y = item(kind), item(kind)
    ident = reserve(c, x)
    table(c, kind)[ident] = y  # taken over meanwhile (attached elsewhere, say)
    release_id(c, x, ident)
    assert table(c, kind) == {ident: y}
    table(c, kind)[ident] = ABANDONED
    release_id(c, x, ident)
    assert table(c, kind) == {ident: ABANDONED}
    release_id(c, x, 99)  # not taken at all
    assert table(c, kind) == {ident: ABANDONED}

@KINDS
def test_free_id_skips_taken(kind: Kind) -> None:
    c = connection()
    table(c, kind).update({0: 'a', 1: ABANDONED, 3: 'c'})
    table(c, other(kind)).update({2: 'x'})
    assert free_id(c, kind) == 2
    table(c, kind)[2] = 'b'
    assert free_id(c, kind) == 4

@KINDS
def test_free_id_exhausted(kind: Kind) -> None:
    """All 256 ids taken: an error naming the kind; the other kind is free."""
    c = connection()
    table(c, kind).update((i, 'taken') for i in range(MAX_IDS))
    with pytest.raises(RbFlyError, match='too many {} on one connection'.format(kind)):
        free_id(c, kind)
    with pytest.raises(RbFlyError, match=kind):
        reserve(c, item(kind))
    assert len(table(c, kind)) == MAX_IDS
    assert free_id(c, other(kind)) == 0
    del table(c, kind)[255]
    assert free_id(c, kind) == 255

def test_max_ids() -> None:
    assert MAX_IDS == 256
