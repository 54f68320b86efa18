"""
Single-active-consumer groups of the fake broker (sans-IO), run as
RabbitMQ 4.3 runs them (its ``rabbit_stream_sac_coordinator`` and stream
reader; measured on RabbitMQ 4.3.6 with rbfly's client, and held to it by
``tests/integration/test_behaviour.py``, which runs on both).

A group is the subscriptions with one consumer name (``name``) on one
stream that asked for a single active consumer
(``single-active-consumer=true``), in the order they joined. One member at
a time is active, and only the active one receives chunks. Which one:

- a plain stream: the first member. A member that joins later waits, and
  is told nothing. When the active one leaves (it unsubscribes, or its
  connection closes) the next one is activated at once.
- a partition of a super stream (the subscription names it in its
  ``super-stream`` property): the member at index ``i % n``, where ``i``
  is the partition's index in its super stream (the order of its
  partitions, as ``Partitions`` answers them) and ``n`` the number of
  members. So two members of a group on three partitions share them: the
  first gets partitions 0 and 2, the second partition 1. A member that
  joins or leaves may move that index to another member: then the active
  one *steps down* first (see below). An active member that leaves needs
  no step down: the member the index points to is activated at once.

To activate a member the broker sends it ``ConsumerUpdate(active=true)``
and waits for its answer, the offset specification to start reading from
(``none``: its subscription's own); chunks come after the answer.

A step down: the broker sends ``ConsumerUpdate(active=false)`` to the
active member and stops sending it chunks at once (none comes after the
update, even while it has not answered); it waits for the answer (the
member stores its offset first, so that the next one continues after
it), and only then activates the member the index points to now. While
it waits, each member that joins or leaves has it told again (another
``active=false``, another answer), unless the index points back to it;
its first answer activates the member chosen then (itself again, told
``active=true``, when the index is back to it), later ones change nothing.

A member that never answers a ``ConsumerUpdate`` (of either kind) holds
the group: RabbitMQ closes a connection that leaves a request of the
broker unanswered for its request timeout (``rabbitmq_stream``'s
``request_timeout``, 60 s; it checks on a timer of that period, so the
connection is closed 60 to 120 s after the update; measured 119 s). The
connection is closed without a ``Close`` frame; its members leave their
groups, and the next ones are activated. The fake broker closes it once
the ``request_timeout`` of its
:py:class:`~rbfly.testing.config.BrokerConfig` passed
(see :py:meth:`rbfly.testing.core.BrokerCore.expire`).

A member that leaves (or whose connection closes) while it steps down
has its step down taken as answered first: the member chosen with it still
in the group is activated, and then it is removed, which may step that
member down again at once, for the one chosen without it (measured).

A subscription naming a super stream it is not a partition of is a member
of a plain stream's group. A group is of one partition index: a
subscription of another one (naming no super stream, say) is refused
with ``PRECONDITION_FAILED``.

A hand-off on demand (:py:meth:`Group.hand_off`) exists only in the fake
broker, for an application's tests of its hand-off code.
"""

from __future__ import annotations

import typing as tp
from collections.abc import Callable
from dataclasses import dataclass

if tp.TYPE_CHECKING:
    from .session import BrokerSubscription

MemberState: tp.TypeAlias = tp.Literal['active', 'waiting', 'deactivating']
"""
A member's state, as RabbitMQ's ``list_stream_group_consumers`` says it:
``active`` (told it is active; receiving chunks once it answered),
``waiting``, or ``deactivating`` (told to step down, not answered yet).
"""

@dataclass(frozen=True)
class GroupMember:
    """
    A member of a single-active-consumer group, as the broker saw it when
    a test asked (:py:meth:`rbfly.testing.FakeBroker.group_members`).

    :ivar connection_name: The ``connection_name`` its client gave
        (``streams_client(url, connection_name=...)``), to tell the
        members apart; ``None`` when it gave none.
    :ivar subscription_id: Its subscription's id on its connection.
    :ivar state: ``active``, ``waiting`` or ``deactivating``.
    :ivar receiving: Whether chunks are sent to it: it is active and
        answered its activation.
    """
    connection_name: str | None
    subscription_id: int
    state: MemberState
    receiving: bool

    @property
    def active(self) -> bool:
        """Whether it is the group's active member (told so)."""
        return self.state == 'active'

class Group:
    """
    A single-active-consumer group: its members in their order, which one
    is active, and a step down under way.

    It tells a member through the member's session
    (:py:meth:`rbfly.testing.session.Session.consumer_update`); its
    session tells the broker of the answer, which calls
    :py:meth:`activate` after a step down.

    :param stream: The stream.
    :param name: The consumer name.
    :param partition: The stream's index in its super stream; -1 for a
        plain stream.
    """
    def __init__(self, stream: str, name: str, partition: int) -> None:
        self.stream = stream
        self.name = name
        self.partition = partition
        self.members: list[BrokerSubscription] = []
        # the member told it is active (or, stepping down, told it is not
        # and not answered yet); at most one, as in RabbitMQ
        self.current: BrokerSubscription | None = None
        self.stepping_down = False
        self._waiters: list[Callable[[], None]] = []

    def chosen(self) -> BrokerSubscription | None:
        """The member that should be active: the first, or by partition index."""
        members = self.members
        if not members:
            return None
        return members[self.partition % len(members) if self.partition >= 0 else 0]

    @property
    def settled(self) -> bool:
        """No step down under way, and the active member (if any) answered its activation."""
        current = self.current
        return not self.stepping_down and (current is None or current.reading)

    def join(self, sub: BrokerSubscription) -> None:
        """A subscription joins, last; the first member is activated."""
        self.members.append(sub)
        if len(self.members) == 1:
            self._activate(sub)
        elif self.partition >= 0:
            self._rebalance()
        self.settle()

    def leave(self, sub: BrokerSubscription) -> None:
        """A member leaves; another one may take over (the group may be empty after)."""
        if sub not in self.members:
            return
        if sub is self.current and self.stepping_down:
            # its step down is answered first, as RabbitMQ answers the
            # pending update of a consumer it removes before it removes it:
            # the member chosen with it still in the group is activated (if
            # that is itself, it is told nothing, being gone)
            self.activate()
        self.members.remove(sub)
        if sub is self.current:
            # the active one, or the one stepping down, is gone: no step
            # down needed, the chosen member is activated at once
            self.current = None
            self.stepping_down = False
            chosen = self.chosen()
            if chosen is not None:
                self._activate(chosen)
        elif self.partition >= 0:
            self._rebalance()
        self.settle()

    def activate(self) -> None:
        """
        A step down was answered: activate the member chosen now (RabbitMQ's
        ``activate_consumer``), unless it is active already.
        """
        chosen = self.chosen()
        if chosen is None:
            return
        if chosen is not self.current or self.stepping_down:
            self._activate(chosen)
        self.settle()

    def hand_off(self) -> None:
        """
        Hand the group over to the next member (fake broker only): the
        members' order turns by one, the first going last (as if it left
        and joined again), so that the member after the active one (in the
        group's order, the first after the last) is chosen; the active one
        steps down, and once it answered, the chosen one is activated. A
        group of one member stays as it is.
        """
        members = self.members
        if len(members) > 1:
            members.append(members.pop(0))
            self._rebalance()
        self.settle()

    def snapshot(self) -> list[GroupMember]:
        """The members, in the group's order, as they are now."""
        def state(sub: BrokerSubscription) -> MemberState:
            if sub is not self.current:
                return 'waiting'
            return 'deactivating' if self.stepping_down else 'active'
        return [
            GroupMember(
                sub.session.client_properties.get('connection_name'),
                sub.subscription_id, state(sub), sub.reading,
            )
            for sub in self.members
        ]

    def when_settled(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the group is settled (at once if it is), or closed."""
        self._waiters.append(callback)
        self.settle()

    def settle(self) -> None:
        """Call the callbacks waiting for the group to settle, if it is."""
        if self.settled:
            self._wake()

    def close(self) -> None:
        """The group is gone (its stream deleted, its last member left): wake its waiters."""
        self.members.clear()
        self.current = None
        self.stepping_down = False
        self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for callback in waiters:
            callback()

    def _rebalance(self) -> None:
        # the chosen member changed: the active one steps down first (told
        # again when already stepping down, as RabbitMQ does)
        current = self.current
        chosen = self.chosen()
        if current is None:
            if chosen is not None:
                self._activate(chosen)
        elif chosen is not current:
            self.stepping_down = True
            current.session.consumer_update(current, False, stepping_down=True)

    def _activate(self, sub: BrokerSubscription) -> None:
        self.current = sub
        self.stepping_down = False
        sub.session.consumer_update(sub, True)

__all__ = ['Group', 'GroupMember', 'MemberState']
