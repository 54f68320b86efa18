"""
A broker reader stalled by retention, and subscribing again past it.

RabbitMQ's reader of a stream (osiris), at the end of a segment file,
opens the next one by name: the segment of the next offset, or of the
stream's first offset when that is past it. Retention deletes the
segment files first, and sets the stream's first offset after; a reader
that reaches the end of its (deleted) file in between finds neither file
and takes itself to be at the end of the stream. It looks again only
when a chunk is written: on a stream nobody writes to any more, the
subscription receives nothing more, though chunks are committed past
it, and a read to the end (``stop_at_end``) never ends (it waited for
its idle timeout, or for ever). Seen about once in 50 reads overtaken by
retention, on RabbitMQ 4.0.

A subscription waited on that received nothing for
:py:data:`STALL_AFTER` seconds, with credit left with the broker and
nothing buffered, though a chunk was committed at or after the offset
it reads next (the committed chunk the broker's deliveries carry,
RabbitMQ 3.11+), is a *suspect*: its stream's first offset is asked for,
once in such a quiet spell. Past the offset the subscription reads next,
the broker's reader cannot go on by itself: the subscription is
subscribed again after the last chunk received, as after a lost
connection, and the broker's new reader starts at the first offset; the
offsets removed are told as at a resume (``on_gap``, ``when='resume'``).
Otherwise (the chunks skipped hold no messages, or a filter rules them
out) nothing is done.

A single active consumer is not subscribed again (that would leave its
group): a write to its stream wakes the broker's reader.

:py:func:`suspect` is the rule alone (no clock read, no asyncio: tested
without sockets); :py:class:`StallCheck` asks and subscribes again.
"""

from __future__ import annotations

import asyncio
import logging
import typing as tp
from collections.abc import Awaitable, Callable
from time import monotonic

from ..error import StreamsError

if tp.TYPE_CHECKING:
    from .subscription import Subscription

logger = logging.getLogger('rbfly.streams.subscriber')

STALL_AFTER = 5.0
"""Seconds without a chunk after which a suspect's stream is asked for its first offset."""

First: tp.TypeAlias = Callable[[str], Awaitable[int | None]]
"""Asks a stream's first offset (``None``: the stream is empty)."""

Resubscribe: tp.TypeAlias = Callable[['Subscription', str], None]
"""Subscribes a subscription again after its last chunk received, for a reason given."""

def suspect(sub: Subscription, now: float, after: float = STALL_AFTER) -> bool:
    """
    Whether ``sub`` may wait for a broker reader stalled (see the
    module): at ``now`` (the monotonic clock), no chunk for ``after``
    seconds, credit left with the broker, nothing buffered, and a chunk
    committed at or after the offset it reads next.
    """
    committed = sub.committed_chunk_id
    received = sub.received_offset
    protocol = sub.protocol
    return (
        committed is not None and received is not None and committed >= received
        and sub.gaps is not None and sub.activation is None
        and sub.active and not (sub.closed or sub.finished or sub.paused or sub.seeking)
        and protocol is not None and protocol.is_open
        and sub.buffered_chunks == 0 and sub.inflight > 0
        and now - sub.arrived >= after
    )

class StallCheck:
    """
    Checks the suspects among the subscriptions a read waits on (see the
    module), each in a task of its own, once per quiet spell; ended with
    the read.

    :param first: Asks a stream's first offset.
    :param resubscribe: Subscribes a subscription again.
    :param after: Seconds without a chunk that make a suspect.
    :param clock: Seconds of a monotonic clock.
    """
    def __init__(
            self, first: First, resubscribe: Resubscribe, after: float = STALL_AFTER,
            clock: Callable[[], float] = monotonic,
    ) -> None:
        self.after = after
        self._first = first
        self._resubscribe = resubscribe
        self._clock = clock
        # a subscription's last arrival time when it was asked about: one
        # question per quiet spell
        self._asked: dict[Subscription, float] = {}
        self._tasks: set[asyncio.Task[bool]] = set()

    def poke(self, subs: tp.Iterable[Subscription]) -> None:
        """Check those of ``subs`` that are suspects and were not asked about in this spell."""
        now = self._clock()
        asked = self._asked
        for sub in subs:
            if asked.get(sub) != sub.arrived and suspect(sub, now, self.after):
                asked[sub] = sub.arrived
                task = asyncio.get_running_loop().create_task(self.check(sub))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def check(self, sub: Subscription) -> bool:
        """
        Ask the first offset of the stream of ``sub``; past the offset it
        reads next, and with no chunk arrived meanwhile, subscribe it
        again. Whether it was.
        """
        arrived = sub.arrived
        try:
            first = await self._first(sub.stream)
        except StreamsError as ex:  # (asked again in the next quiet spell)
            logger.debug('stream %r: its first offset not known: %s', sub.stream, ex)
            return False
        received = sub.received_offset
        if first is None or received is None or first <= received or sub.arrived != arrived \
                or sub.closed or sub.finished or sub.seeking:
            return False
        logger.warning(
            'stream %r: no chunk for %.1fs, and its first offset %d is past the offset %d'
            ' read next (the broker\'s reader stopped after retention): subscribing again',
            sub.stream, self._clock() - arrived, first, received,
        )
        self._resubscribe(sub, 'its broker reader stopped behind the stream\'s first offset')
        return True

    def forget(self, sub: Subscription) -> None:
        """A subscription left the read (a seek replaced it)."""
        self._asked.pop(sub, None)

    def close(self) -> None:
        """The read ended: the questions under way are cancelled."""
        for task in self._tasks:
            task.cancel()
        self._asked.clear()

__all__ = ['STALL_AFTER', 'First', 'Resubscribe', 'StallCheck', 'suspect']
