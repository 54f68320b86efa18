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

On a broker that may keep a single active consumer in its group after
dropping its subscription (see :py:func:`sac_cleanup_reliable`), the
subscription stays off the client's own connection
(:py:func:`own_connection_allowed`): it goes to a connection of its own,
to the same node, closed when its stream moves (:py:mod:`.recovery`).

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

SAC_CLEANUP_FIXED = (4, 1, 2)
"""
The first RabbitMQ version that keeps single active consumers' groups in
step with its connections when a stream member goes down (see
:py:func:`sac_cleanup_reliable`).
"""

def sac_cleanup_reliable(broker_version: tuple[int, ...]) -> bool:
    """
    Whether the broker removes a single active consumer from its group
    whenever it drops its subscription after a stream member went down:
    RabbitMQ 4.1.2 and 4.2.0 on. Before (3.13, 4.0, 4.1.0-4.1.1), it keeps
    the subscription in the group (a ghost member) while forgetting it on
    the connection, in two ways (rbfly issue 30):

    - a connection that looked up a stream's leader (QueryOffset,
      StoreOffset, DeclarePublisher) watches that leader; when the leader
      dies, the broker drops every subscription of the stream on the
      connection, but unregisters only those reading from the leader
      (rabbitmq-server issue 13961);
    - the unregistration is a command to the stream coordinator; while
      the coordinator elects a leader (its leader's node died), the
      command fails, and the broker logs it and goes on
      (rabbitmq-server issue 14040).

    Either way the client subscribes again after the MetadataUpdate; the
    ghost stays until the connection closes, and while the broker holds it
    active, the partition has no consumer: 2,525 and 2,720 of 20,000
    messages never processed in 2 of 4 runs of the consumer group harness
    on RabbitMQ 4.0.5, a partition leader's node killed.

    So there a single active consumer's subscription has a connection of
    its own, which holds nothing else and looks up no leader (the first
    way), and which is closed when its stream moves (the second: the
    broker removes every consumer of a closed connection from its groups,
    once its coordinator has a leader); it subscribes again on a new one.
    A connection for each subscription, and a connection closed for each
    subscription whose stream moved: not for a connection shared by
    several, whose other single active consumers, handing a partition
    over at that moment, could leave their groups with no active member
    (RabbitMQ 4.0.5 waits for the answer of a consumer that stepped down;
    2 of 4 runs when the shared connection was closed).
    """
    return broker_version >= SAC_CLEANUP_FIXED

def own_connection_allowed(single_active: bool, broker_version: tuple[int, ...]) -> bool:
    """
    Whether a subscription may go on the client's own connection, the one
    that queries and stores offsets and declares publishers: not a single
    active consumer's on a broker that leaves ghosts in its group (see
    :py:func:`sac_cleanup_reliable`).
    """
    return not single_active or sac_cleanup_reliable(broker_version)

def leader_place(members: tp.Sequence[Node], home: Node | None) -> Node | None:
    """
    The node a publisher of a stream goes to: its leader's, or ``None``
    for the client's own connection (the leader is on its node, or the
    leader or the home node are not known).
    """
    if not members or home is None or members[-1] == home:
        return None
    return members[-1]

__all__ = [
    'SAC_CLEANUP_FIXED', 'leader_place', 'own_connection_allowed', 'sac_cleanup_reliable',
    'subscription_places',
]
