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

The frames are RabbitMQ's, encoded and decoded by rbfly's own codec
(:py:mod:`rbfly.streams.protocol`), except ``Publish``: its messages may
be sub-entry batches, which the broker stores as they are, so the core
reads them itself.
"""

from __future__ import annotations

import typing as tp
from collections.abc import Callable

from .config import BrokerConfig
from .publish import read_publish
from .session import FRAME_MAX, HEARTBEAT, BrokerSubscription, Publisher, Session
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
        self.groups: dict[tuple[str, str], list[BrokerSubscription]] = {}

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
        for key in [k for k in self.groups if k[0] == stream]:
            del self.groups[key]

    def join(self, sub: BrokerSubscription) -> None:
        """Add a subscription to its group; the first one is active."""
        assert sub.group is not None
        members = self.groups.setdefault((sub.stream, sub.group), [])
        members.append(sub)
        sub.active = False
        if len(members) == 1:
            sub.session.activate(sub)

    def leave(self, sub: BrokerSubscription) -> None:
        """Remove a subscription from its group; the next one takes over."""
        key = (sub.stream, tp.cast(str, sub.group))
        members = self.groups.get(key, [])
        if sub not in members:
            return
        was_first = members[0] is sub
        members.remove(sub)
        if not members:
            del self.groups[key]
        elif was_first:
            members[0].session.activate(members[0])


__all__ = [
    'FRAME_MAX',
    'HEARTBEAT',
    'BrokerConfig',
    'BrokerCore',
    'BrokerSubscription',
    'Publisher',
    'Session',
    'read_publish',
]
