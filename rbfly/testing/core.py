"""
Sans-IO core of the fake broker: frames in, frames out, no sockets and no
clock.

:py:class:`BrokerCore` owns the :py:class:`~rbfly.testing.store.Store` and
the sessions; :py:class:`~rbfly.testing.session.Session` is one client
connection (:py:mod:`rbfly.testing.session`), which knows the core only
as the :py:class:`~rbfly.testing.session.SessionHost` it asks for what
the sessions share (so the imports point one way). A session reads the
client's bytes (:py:meth:`~rbfly.testing.session.Session.receive_data`) and writes its
answers through the ``write`` callable it was given; a message published on
one session reaches the subscribers of the others through the core, in the
same call. The time, for chunk timestamps, comes from the ``clock`` the
core was given.

The single-active-consumer groups are
:py:class:`~rbfly.testing.groups.Group` objects
(:py:mod:`rbfly.testing.groups` says how RabbitMQ 4.3 runs them); the core
keeps them by stream and consumer name, adds and removes their members,
and passes them their members' answers.

The frames are RabbitMQ's, encoded and decoded by rbfly's own codec
(:py:mod:`rbfly.streams.protocol`), except ``Publish``: its messages may
be sub-entry batches, which the broker stores as they are, so the core
reads them itself.
"""

from __future__ import annotations

import typing as tp
from collections.abc import Callable

from .config import BrokerConfig
from .groups import Group, GroupMember
from .publish import read_publish
from .session import (
    FRAME_MAX,
    HEARTBEAT,
    BrokerSubscription,
    ConsumerUpdateSent,
    Publisher,
    Session,
)
from .store import Store

class BrokerCore:
    """
    The fake broker: one store, the sessions of its clients, and the
    single-active-consumer groups.

    :param config: What the broker says of itself and whom it lets in.
    :param clock: Milliseconds since the Unix epoch, for chunk timestamps.
    """
    def __init__(self, config: BrokerConfig, clock: Callable[[], int]) -> None:
        self.config = config
        self.clock = clock
        self.store = Store()
        self.sessions: set[Session] = set()
        self.groups: dict[tuple[str, str], Group] = {}
        self._watchers: list[Callable[[], None]] = []

    def open_session(self, write: Callable[[bytes], None], close: Callable[[], None]) -> Session:
        """
        A session for a new client connection.

        :param write: Sends bytes to the client.
        :param close: Closes the connection (after ``write``'s bytes).
        """
        session = Session(self, write, close)
        self.sessions.add(session)
        return session

    def session_closed(self, session: Session) -> None:
        """A session's connection is gone: forget the session."""
        self.sessions.discard(session)

    def subscriptions(self, stream: str) -> list[BrokerSubscription]:
        """The subscriptions to a stream, of every session."""
        return [s for session in self.sessions for s in session.subscriptions.values()
                if s.stream == stream]

    def published(self, stream: str) -> None:
        """A chunk was written: deliver it to the stream's subscribers."""
        for sub in self.subscriptions(stream):
            sub.session.pump(sub)

    def stream_deleted(self, stream: str) -> None:
        """Tell every session using the stream, and forget their use of it."""
        for session in list(self.sessions):
            session.stream_gone(stream)
        keys = [k for k in self.groups if k[0] == stream]
        for key in keys:
            self.groups.pop(key).close()
        if keys:
            self._changed()

    #
    # single active consumers
    #
    def may_join(self, stream: str, name: str, partition: int) -> bool:
        """
        Whether a subscription may join the group of a stream and a name:
        not when the group is of another partition index (RabbitMQ's
        ``partition_index_conflict``, answered ``PRECONDITION_FAILED``).
        """
        group = self.groups.get((stream, name))
        return group is None or group.partition == partition

    def join(self, sub: BrokerSubscription, partition: int) -> None:
        """
        Add a subscription to its group, made for it if there is none.

        :param partition: Index of the stream in the super stream the
            subscription names; -1 for a plain stream.
        """
        key = (sub.stream, tp.cast(str, sub.group))
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = Group(sub.stream, key[1], partition)
        group.join(sub)
        self._changed()

    def leave(self, sub: BrokerSubscription) -> None:
        """Remove a subscription from its group; the next one may take over."""
        key = (sub.stream, tp.cast(str, sub.group))
        group = self.groups.get(key)
        if group is None:
            return
        group.leave(sub)
        if not group.members:
            del self.groups[key]
            group.close()
        self._changed()

    def answered(self, update: ConsumerUpdateSent) -> None:
        """
        A member answered a ``ConsumerUpdate``: after a step down (and not
        told it is active again meanwhile), activate the member chosen now.
        """
        sub = update.sub
        group = self.groups.get((sub.stream, tp.cast(str, sub.group)))
        if group is None:
            return
        if update.stepping_down and not sub.active:
            group.activate()
        group.settle()
        self._changed()

    def hand_off(self, stream: str, name: str) -> Group:
        """
        Start a hand-off of a group to its next member (see
        :py:meth:`~rbfly.testing.groups.Group.hand_off`).

        :raises LookupError: When there is no such group.
        """
        group = self.groups.get((stream, name))
        if group is None:
            raise LookupError('no single active consumer group {!r} on stream {!r}'.format(
                name, stream,
            ))
        group.hand_off()
        self._changed()
        return group

    def group_members(self, stream: str, name: str) -> list[GroupMember]:
        """The members of a group in its order (none when there is no such group)."""
        group = self.groups.get((stream, name))
        return [] if group is None else group.snapshot()

    def watch_groups(self, callback: Callable[[], None]) -> None:
        """
        Call ``callback`` once, at the next change of a group (a member
        joined or left, was told to step down or to be active, answered).
        """
        self._watchers.append(callback)

    def _changed(self) -> None:
        watchers, self._watchers = self._watchers, []
        for callback in watchers:
            callback()

    def expire(self) -> int:
        """
        Close, without a word, the connections that left a
        ``ConsumerUpdate`` unanswered for the request timeout, as RabbitMQ
        does (:py:mod:`rbfly.testing.groups`); their members leave their
        groups. Returns the number of connections closed.
        """
        timeout = self.config.request_timeout
        if timeout is None:
            return 0
        before = self.clock() - timeout
        late = [s for s in self.sessions if s.overdue(before)]
        for session in late:
            session.drop()
        return len(late)


__all__ = [
    'FRAME_MAX',
    'HEARTBEAT',
    'BrokerConfig',
    'BrokerCore',
    'BrokerSubscription',
    'ConsumerUpdateSent',
    'Publisher',
    'Session',
    'read_publish',
]
