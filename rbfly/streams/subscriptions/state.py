"""
What a subscription is doing now, for debugging a consumer that stopped
making progress: whether the broker sends to it, where it is in its
stream, what it buffers, and the credits the broker holds for it.

A consumer that waits for messages that do not come is in one of a few
states, which tell the cause apart:

- a single active consumer the broker did not make active
  (``active`` false, no consumer update under way): another member of
  its group holds the stream, or the broker lost track of it;
- a consumer update under way (``updating``): the client is finding the
  offset to answer the broker with (querying the stored offset, or a
  hand-off waiting for the application to process what it holds);
- no credit left (``credits`` 0, nothing buffered): the client did not
  grant the broker more, a flow strategy waiting for chunks processed;
- credits, nothing buffered and ``received_offset`` at the stream's end
  (:py:meth:`~rbfly.streams.StreamsClient.end_offset`): nothing more to
  read; short of the end, the broker does not send;
- not on a connection (``connected`` false): lost, being subscribed
  again.

See :py:meth:`rbfly.streams.StreamsClient.subscription_states`.
"""

from __future__ import annotations

import dataclasses as dtc

from ..lifecycle import ResourceState

@dtc.dataclass(frozen=True, slots=True)
class SubscriptionState:
    """
    A subscription as it was when asked (a snapshot: it does not change
    with the subscription).

    :ivar stream: The stream (a partition, for a super stream).
    :ivar name: The consumer's name (``name`` of the subscription; ``None``
        without one).
    :ivar ident: The subscription's id on its connection (-1 before it
        was first subscribed).
    :ivar state: Its lifecycle state (opening, open, recovering, closed).
    :ivar connected: Whether it is subscribed on an open connection.
    :ivar single_active: Whether it is a single active consumer.
    :ivar active: Whether the broker sends it chunks: always for a
        subscription that is not a single active consumer; for one,
        between its activation and its deactivation (or the loss of its
        connection).
    :ivar next_offset: The offset of the next message the application is
        handed (messages before it are dropped).
    :ivar received_offset: The offset after the last chunk of messages
        received (``None``: none received since it started, or since its
        last activation).
    :ivar buffered_chunks: Chunks received and not taken by the
        application yet.
    :ivar buffered_bytes: Their bytes.
    :ivar credits: The credits the broker holds for it, as the client
        counts them: granted and not used by a chunk yet (the broker sends
        a chunk for each; 0: it sends none until the client grants more).
    :ivar updating: The broker's consumer updates (activations and
        deactivations) the client is answering now.
    """
    stream: str
    name: str | None
    ident: int
    state: ResourceState
    connected: bool
    single_active: bool
    active: bool
    next_offset: int
    received_offset: int | None
    buffered_chunks: int
    buffered_bytes: int
    credits: int
    updating: int

    def __str__(self) -> str:
        """One line of a log, or of a failure's report."""
        return '{} ({}) #{} {}{}{}: next {} received {} buffered {} ({} B) credits {}{}'.format(
            self.stream, self.name, self.ident, self.state.value,
            '' if self.connected else ', no connection',
            (', active' if self.active else ', inactive') if self.single_active else '',
            self.next_offset, self.received_offset, self.buffered_chunks,
            self.buffered_bytes, self.credits,
            ', {} consumer update(s) under way'.format(self.updating) if self.updating else '',
        )

__all__ = ['SubscriptionState']
