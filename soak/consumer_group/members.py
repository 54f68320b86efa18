"""
The members the broker keeps in the group of each partition of a consumer
group run (:py:mod:`soak.consumer_group`), listed on a cluster
(``--cluster``) before the workers stop: each live worker has one
subscription there, so a member more is a ghost (a subscription the
broker forgot on its connection but not in the group, rbfly issue 30),
and a partition with no active member processes nothing.

Listed by :py:mod:`soak.consumer_group.cluster`, judged by
:py:mod:`soak.consumer_group.analysis`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

@dataclass(frozen=True, slots=True)
class GroupMember:
    """
    A member of a partition's group as the broker lists it: its
    connection, its subscription id there, its state (RabbitMQ 3.11-4.0:
    ``active`` or ``inactive``; 4.1+ adds the connection's, e.g. ``active
    (connected)``, ``waiting (disconnected)``).
    """
    connection: str
    subscription_id: int
    state: str

    @property
    def active(self) -> bool:
        return self.state.split(' ', 1)[0] == 'active'

def parse_group_members(text: str) -> list[GroupMember]:
    """
    The members of a group from ``rabbitmq-streams
    list_stream_group_consumers --formatter json`` (RabbitMQ 4.0: a JSON
    array of objects ``subscription_id``, ``connection_name``, ``state``,
    one a line).

    :raises ValueError: When the text is not such a list.
    """
    items = json.loads(text) if text.strip() else []
    if not isinstance(items, list):
        raise ValueError('not a list of group members: {!r}'.format(text[:200]))
    return [GroupMember(str(i['connection_name']), int(i['subscription_id']), str(i['state']))
            for i in items]

@dataclass
class GroupCheck:
    """
    The members of each partition's group, listed once every confirmed
    message was processed (or the drain deadline passed), the workers
    still running.

    :ivar live: The workers running then (each has one member a partition).
    :ivar members: The members of each partition's group (``None``: the
        listing failed).
    :ivar time: When they were listed.
    :ivar active_workers: The workers active on each partition then, as
        they saw it (computed from their logs: the broker's last consumer
        update, unless the subscription was lost or moved since).
    """
    live: int
    members: dict[str, list[GroupMember] | None]
    time: float
    active_workers: dict[str, list[int]] = field(default_factory=dict)

    def ghosts(self, partition: str) -> int:
        """Members beyond one for each live worker."""
        members = self.members.get(partition)
        return 0 if members is None else max(0, len(members) - self.live)

    def active(self, partition: str) -> int | None:
        members = self.members.get(partition)
        return None if members is None else sum(1 for m in members if m.active)

    @property
    def without_active(self) -> list[str]:
        """Partitions whose group has no active member (or was not listed)."""
        return [p for p in self.members if not self.active(p)]

    @property
    def without_active_worker(self) -> list[str]:
        """Partitions no worker consumed, as the workers saw it."""
        return [p for p in self.members if not self.active_workers.get(p)]
