"""
Where a reader's chunks come from: the subscriptions of a stream, or of
the partitions of a super stream, subscribed as the reading starts,
taken from in turn, and ended with it.

A :py:class:`Subscriptions` source is what the reader's progress
(:py:mod:`rbfly.streams.subscriptions.progress`) takes chunks from:
:py:meth:`~Subscriptions.poll` takes one without waiting, and
:py:meth:`~Subscriptions.wait` waits until one may be there. Nothing is
taken while waiting, so a wait cancelled loses nothing.

A subscription that stops at the end of its stream (``stop_at_end``)
leaves the turn once its last chunk is taken; the messages at or after
the end are dropped. With a filter, the messages the broker's Bloom
filter let through and the filter does not match are dropped too.
"""

from __future__ import annotations

import typing as tp
from collections.abc import Awaitable, Callable

from ...amqp import MessageCtx
from ..types import MessageFilter
from .subscription import Chunk, Subscription, wait_any

if tp.TYPE_CHECKING:
    from .handoff import HandOff

Make: tp.TypeAlias = Callable[[], Awaitable[list[Subscription]]]
"""Builds the subscriptions of a read (one, or a super stream's partitions)."""

class Source(tp.Protocol):
    """What a reader's progress takes chunks from."""

    async def open(self, group: HandOff | None) -> None:
        """Subscribe (a single active consumer's hand-offs to ``group``)."""
        ...

    def poll(self) -> Chunk | None:
        """
        The next chunk, if one is there (possibly emptied by a filter or
        the end); ``None`` otherwise.

        :raises Exception: The error that ended a subscription.
        """
        ...

    @property
    def finished(self) -> bool:
        """Whether every subscription reached its end (``stop_at_end``)."""
        ...

    async def wait(self, timeout: float | None) -> None:
        """
        Wait until :py:meth:`poll` may have a chunk.

        :raises TimeoutError: After ``timeout`` seconds.
        """
        ...

    def end(self) -> None:
        """End the subscriptions (unsubscribe)."""
        ...

def post_filter(flt: MessageFilter, messages: list[MessageCtx]) -> list[MessageCtx]:
    """
    The messages a filter matches: the broker filters chunks with a Bloom
    filter; this drops its false positives.
    """
    extract = flt.extract
    values = flt.values
    unfiltered = flt.match_unfiltered
    result = []
    for m in messages:
        value = extract(m)
        if value in values or (unfiltered and value is None):
            result.append(m)
    return result

class Subscriptions:
    """
    The subscriptions of a read, taken from in turn.

    :param make: Builds the subscriptions (checked against the broker).
    :param place: Places a subscription on a connection (subscribes).
    :param end: Ends a subscription (unsubscribes).
    :param filter: The subscriptions' filter, if any.
    """
    def __init__(
            self, make: Make, place: Callable[[Subscription], Awaitable[None]],
            end: Callable[[Subscription], None], filter: MessageFilter | None,
    ) -> None:
        self._make = make
        self._place = place
        self._end = end
        self._filter = filter
        self.subs: list[Subscription] = []
        self._active: list[Subscription] = []
        self._turn = 0

    async def open(self, group: HandOff | None) -> None:
        subs = self.subs = await self._make()
        for sub in subs:
            sub.group = group
        try:
            for sub in subs:
                await self._place(sub)
        except BaseException:
            self.end()
            raise
        self._active = [s for s in subs if not s.finished]

    @property
    def finished(self) -> bool:
        return not self._active

    def poll(self) -> Chunk | None:
        active = self._active
        n = len(active)
        turn = self._turn
        for i in range(n):
            sub = active[(turn + i) % n]
            chunk = sub.poll()
            if chunk is not None:
                self._turn = (turn + i + 1) % n
                sub.bound(chunk)
                if sub.finished:
                    active.remove(sub)
                if self._filter is not None:
                    _filter(self._filter, chunk)
                return chunk
        return None

    async def wait(self, timeout: float | None) -> None:
        active = self._active
        if len(active) == 1:
            await active[0].wait(timeout)
        else:
            await wait_any(active, timeout)

    def end(self) -> None:
        self._active = []
        for sub in self.subs:
            self._end(sub)
            sub.interrupt()  # (a take waiting on it: the progress ended)

def _filter(flt: MessageFilter, chunk: Chunk) -> None:
    """
    Keep the messages of a chunk a filter matches; a chunk left empty is
    not handed out, so the credit a flow strategy holds for it goes back.
    """
    chunk[:] = post_filter(flt, chunk)
    if not chunk and chunk.release is not None:
        chunk.release()

__all__ = ['Make', 'Source', 'Subscriptions', 'post_filter']
