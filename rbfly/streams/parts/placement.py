"""
Placement of publishers and subscriptions on the nodes of a cluster:
pure decisions, given where a stream lives and where the client is.

A RabbitMQ node serves a subscription only from a member of the stream
(its leader or a replica) on that node; it answers "stream not available"
otherwise. Publishing works through any node, but a node without the
leader forwards each message to the leader's node and back. So a
subscription goes to the client's connection when its node holds a member
of the stream, and otherwise to a connection to a member's node: replicas
first (they spare the leader), then the leader; a publisher goes to the
leader's node (or stays on the client's connection when that node cannot
be reached: forwarding works; not with ``publishers_on_leader``).

The functions here read no connection and send nothing (the
:py:mod:`.placer` acts on their answers), so they are tested as tables.
"""

from __future__ import annotations

import typing as tp

from ..error import StreamNotAvailable
from .connector import Node, Where

def subscription_places(
        stream: str, members: tp.Sequence[Node], home: Node | None,
        replicas_only: bool, connected: tp.Container[Where],
) -> list[Where]:
    """
    Where to subscribe to a stream, best first: ``None`` for the client's
    own connection when its node (``home``) holds a member (or when the
    members or the home node are not known), else the members' nodes,
    replicas first and those with a connection open (``connected``) before
    the others. With ``replicas_only``, the replicas' nodes alone.

    :param members: Nodes of the stream's members, replicas first, the
        leader last (empty while it has no leader).
    :raises StreamNotAvailable: When a client reading from replicas only
        finds none.
    """
    if replicas_only:
        replicas = list(members[:-1])
        if not replicas:
            raise StreamNotAvailable('stream {!r} has no replica to read from (the'
                                     ' client reads from replicas only)'.format(stream))
        if home in replicas:
            return [None]
        replicas.sort(key=lambda n: n not in connected)
        return list(replicas)
    if not members or home is None or home in members:
        return [None]
    places: list[Where] = list(members)
    places.sort(key=lambda n: n not in connected)  # stable: replicas stay first
    return places

def leader_place(members: tp.Sequence[Node], home: Node | None) -> Node | None:
    """
    The node a publisher of a stream goes to: its leader's, or ``None``
    for the client's own connection (the leader is on its node, or the
    leader or the home node are not known).
    """
    if not members or home is None or members[-1] == home:
        return None
    return members[-1]

__all__ = ['leader_place', 'subscription_places']
