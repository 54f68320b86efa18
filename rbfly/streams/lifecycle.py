"""
The state of one publisher or subscription, with the reason it changed.

Connection events (:py:mod:`rbfly.streams.events`) say what happens to a
connection; an application with many publishers and subscriptions also
wants to know which of them are working: a publisher whose stream leader
moved waits for its new leader while the client's connection is fine, and
a subscription ended by a deleted stream is gone for good. Each publisher
and subscription therefore has a :py:class:`Lifecycle`, the one owner of
its :py:class:`ResourceState`:

- ``OPENING``: created, being declared on a connection;
- ``OPEN``: declared; messages flow;
- ``RECOVERING``: its connection was lost or its stream moved; the client
  declares it again (a publisher keeps what it accepted, a subscription
  resumes after the last chunk received);
- ``CLOSED``: ended by the application, or given up (its stream was
  deleted, reconnection failed); final.

Listeners (``on_state`` of :py:meth:`~rbfly.streams.StreamsClient.publisher`
and of the subscribe methods) get a :py:class:`StateChange` for each
change, in the event loop, synchronously: they must not block. An
exception a listener raises is logged and otherwise ignored: reporting
never stops the client (as with connection events).
"""

from __future__ import annotations

import dataclasses as dtc
import enum
import logging
import typing as tp

logger = logging.getLogger('rbfly.streams.client')

class ResourceState(enum.Enum):
    """State of a publisher or a subscription."""
    OPENING = 'opening'
    """Created; being declared on a connection."""
    OPEN = 'open'
    """Declared on a connection."""
    RECOVERING = 'recovering'
    """Its connection was lost, or its stream moved; being declared again."""
    CLOSED = 'closed'
    """Ended by the application, or given up; final."""

@dtc.dataclass(frozen=True)
class StateChange:
    """
    A change of a publisher's or subscription's state.

    :ivar kind: ``'publisher'`` or ``'subscription'``.
    :ivar stream: Its stream (a partition, for a super stream's).
    :ivar state: The new state.
    :ivar previous: The state before.
    :ivar reason: Why, in words (e.g. ``'connection lost'``,
        ``'stream moved'``, ``'closed by the application'``).
    :ivar error: The error behind the change, if any (e.g. the
        :py:class:`~rbfly.streams.ConnectionLost` of a lost connection, the
        :py:class:`~rbfly.streams.error.StreamDoesNotExist` that ended it).
    """
    kind: tp.Literal['publisher', 'subscription']
    stream: str
    state: ResourceState
    previous: ResourceState
    reason: str
    error: Exception | None = None

StateListener: tp.TypeAlias = tp.Callable[[StateChange], None]
"""Called with each state change of a publisher or subscription."""

class Lifecycle:
    """
    The state of one publisher or subscription, and its listeners.

    :ivar state: The current state.
    :ivar reason: Why it is in that state.
    :ivar error: The error behind it, if any.
    """
    __slots__ = ('_listeners', 'error', 'kind', 'reason', 'state', 'stream')

    def __init__(
            self, kind: tp.Literal['publisher', 'subscription'], stream: str,
            listener: StateListener | None = None,
    ) -> None:
        self.kind: tp.Literal['publisher', 'subscription'] = kind
        self.stream = stream
        self.state = ResourceState.OPENING
        self.reason = 'created'
        self.error: Exception | None = None
        self._listeners: list[StateListener] = [] if listener is None else [listener]

    def listen(self, listener: StateListener) -> None:
        """Add a listener of the state changes from now on."""
        if not callable(listener):
            raise TypeError('a state listener must be callable, got {!r}'.format(listener))
        self._listeners.append(listener)

    def move(self, state: ResourceState, reason: str, error: Exception | None = None) -> None:
        """
        Change the state, and tell the listeners. Nothing changes once
        ``CLOSED``, nor when already in ``state`` (the first reason for
        it stands: a lost connection is not also reported as the lost
        publisher it makes).
        """
        previous = self.state
        if previous is ResourceState.CLOSED or previous is state:
            return
        self.state = state
        self.reason = reason
        self.error = error
        if not self._listeners:
            return
        change = StateChange(self.kind, self.stream, state, previous, reason, error)
        for listener in self._listeners:
            try:
                listener(change)
            except Exception:
                logger.exception('state listener %r failed on %s', listener, change)

    def opened(self) -> None:
        """Declared on a connection: open, or recovered."""
        opening = self.state is ResourceState.OPENING
        self.move(ResourceState.OPEN, 'declared' if opening else 'recovered')

    def lost(self, error: Exception) -> None:
        """Its connection was lost (or it must be declared elsewhere)."""
        if self.state is not ResourceState.OPENING:
            self.move(ResourceState.RECOVERING, str(error) or type(error).__name__, error)

    def __repr__(self) -> str:
        return '<Lifecycle {} {!r} {} ({})>'.format(
            self.kind, self.stream, self.state.name, self.reason,
        )

__all__ = ['Lifecycle', 'ResourceState', 'StateChange', 'StateListener']
