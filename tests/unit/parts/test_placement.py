"""
Placement decisions as tables: where a subscription goes
(:py:func:`~rbfly.streams.parts.placement.subscription_places`) and where a
publisher goes (:py:func:`~rbfly.streams.parts.placement.leader_place`),
given the stream's members (replicas first, the leader last), the client's
own node (``home``) and the nodes it has connections to.
"""

from __future__ import annotations

import typing as tp

import pytest

from rbfly.streams.error import StreamNotAvailable
from rbfly.streams.parts.connector import Node, Where
from rbfly.streams.parts.placement import leader_place, subscription_places

A: Node = ('a', 5552)
B: Node = ('b', 5552)
C: Node = ('c', 5552)
D: Node = ('d', 5552)  # holds no member of the stream

class Case(tp.NamedTuple):
    members: list[Node]
    home: Node | None
    replicas_only: bool
    connected: set[Where]
    expected: list[Where]

# members are [replica, replica, leader]: B and C are replicas, A the leader
SUBSCRIPTION_CASES = {
    'home holds the leader': Case([B, C, A], A, False, set(), [None]),
    'home holds a replica': Case([B, C, A], C, False, set(), [None]),
    'home holds a member, others connected': Case([B, C, A], B, False, {A, C}, [None]),
    'home holds no member: replicas first, leader last': Case(
        [B, C, A], D, False, set(), [B, C, A],
    ),
    'connected replica first': Case([B, C, A], D, False, {C}, [C, B, A]),
    'connected leader first': Case([B, C, A], D, False, {A}, [A, B, C]),
    'connected replica and leader first, replica before leader': Case(
        [B, C, A], D, False, {A, C}, [C, A, B],
    ),
    'all connected: order kept': Case([B, C, A], D, False, {A, B, C, None}, [B, C, A]),
    'own connection counts for nothing': Case([B, C, A], D, False, {None}, [B, C, A]),
    'leader alone, elsewhere': Case([A], D, False, set(), [A]),
    'unknown home': Case([B, C, A], None, False, {A}, [None]),
    'no leader (electing)': Case([], D, False, {A}, [None]),
    'no leader, unknown home': Case([], None, False, set(), [None]),
    'replicas only: replicas, leader left out': Case([B, C, A], D, True, set(), [B, C]),
    'replicas only: connected replica first': Case([B, C, A], D, True, {C, A}, [C, B]),
    'replicas only: home among replicas': Case([B, C, A], C, True, {B}, [None]),
    'replicas only: home holds the leader only': Case([B, C, A], A, True, set(), [B, C]),
    'replicas only: unknown home': Case([B, C, A], None, True, set(), [B, C]),
}

@pytest.mark.parametrize('case', SUBSCRIPTION_CASES.values(), ids=SUBSCRIPTION_CASES.keys())
def test_subscription_places(case: Case) -> None:
    members = list(case.members)
    places = subscription_places('orders', members, case.home, case.replicas_only, case.connected)
    assert places == case.expected
    assert members == case.members  # the caller's list is not reordered

NO_REPLICA_CASES = {
    'leader only, home elsewhere': ([A], D),
    'leader only, on home': ([A], A),
    'leader only, unknown home': ([A], None),
    'no leader': ([], D),
}

@pytest.mark.parametrize(
    ('members', 'home'), NO_REPLICA_CASES.values(), ids=NO_REPLICA_CASES.keys(),
)
def test_replicas_only_without_replica(members: list[Node], home: Node | None) -> None:
    """A client reading from replicas only finds none: the stream is not available to it."""
    with pytest.raises(StreamNotAvailable, match="stream 'orders' has no replica") as info:
        subscription_places('orders', members, home, True, {A})
    assert info.value.code == 0x06

LEADER_CASES = {
    'leader on home': ([B, C, A], A, None),
    'leader elsewhere': ([B, C, A], D, A),
    'home holds a replica': ([B, C, A], B, A),
    'leader alone, elsewhere': ([A], B, A),
    'leader alone, on home': ([A], A, None),
    'unknown home': ([B, C, A], None, None),
    'no leader': ([], D, None),
    'no leader, unknown home': ([], None, None),
}

@pytest.mark.parametrize(
    ('members', 'home', 'expected'), LEADER_CASES.values(), ids=LEADER_CASES.keys(),
)
def test_leader_place(members: list[Node], home: Node | None, expected: Node | None) -> None:
    assert leader_place(members, home) == expected
