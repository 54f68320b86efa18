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

A subscription of a read that waits, that received nothing for
:py:data:`STALL_AFTER` seconds, with credit left with the broker and
nothing buffered, though a chunk was committed at or after the offset
it reads next (the committed chunk the broker's deliveries carry,
RabbitMQ 3.11+), is a *suspect*: its stream's first offset is asked
for. Past the offset the subscription reads next, the broker's reader
cannot go on by itself: the subscription is subscribed again after the
last chunk received, as after a lost connection (its ``resume``
callback, if any, says where), and the broker's new reader starts at
the first offset; the offsets removed are told as at a resume
(``on_gap``, ``when='resume'``). Otherwise (the chunks skipped hold no
messages) nothing is done, and it is not asked about again before its
next chunk.

Not checked: a single active consumer (subscribing again would leave its
group: a write to its stream wakes the broker's reader), and a read with
a filter (the broker skips the chunks the filter rules out: the last
chunk received may be far behind the stream's first offset with nothing
lost).

:py:func:`suspect` is the rule alone (no clock read, no asyncio: tested
without sockets); :py:class:`StallCheck` asks and subscribes again.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
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

Resubscribe: tp.TypeAlias = Callable[['Subscription', str], bool]
"""
Subscribes a subscription again after its last chunk received, for a
reason given; false when it cannot now.
"""

POKE_INTERVAL = 1.0
"""Least seconds between two looks for suspects among a read's subscriptions."""

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
    Checks the suspects among the subscriptions of a read (see the
    module), each in a task of its own; ended with the read.

    A read's wait pokes it as it begins, and every ``after`` seconds while
    it waits (at most once in :py:data:`POKE_INTERVAL` seconds: the read of
    the clock and of the subscriptions' state is all a poke costs). A
    subscription's quiet time counts from the first poke that saw it with
    credit, as it is now (its last chunk, connection and id): not from
    its last chunk alone, as credit granted late (a paused stream resumed,
    a slow application's chunk taken) or a subscription declared again
    leaves a broker reader with no time to answer yet. A suspect found in
    the stream, or subscribed again, is not asked about again before a
    chunk arrives (once per quiet spell); one whose question failed may be
    asked about ``after`` seconds later.

    :param first: Asks a stream's first offset.
    :param resubscribe: Subscribes a subscription again; false when
        it cannot now (its connection, or its stream, is being recovered).
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
        self._poked = -math.inf
        # the arrival time of a subscription's last chunk when it was found
        # in the stream (not asked again before the next chunk), and when it
        # may be asked about again
        self._in_stream: dict[Subscription, float] = {}
        self._due: dict[Subscription, float] = {}
        # a subscription as a poke first saw it quiet with credit (its last
        # chunk's arrival, connection, id), and when
        self._quiet: dict[Subscription, tuple[tuple[float, object, int], float]] = {}
        self._tasks: dict[Subscription, asyncio.Task[bool]] = {}

    def poke(self, subs: tp.Iterable[Subscription]) -> None:
        """Check those of ``subs`` that are suspects and may be asked about now."""
        now = self._clock()
        if now - self._poked < POKE_INTERVAL:
            return
        self._poked = now
        for sub in subs:
            if sub.inflight == 0:
                self._quiet.pop(sub, None)
                continue
            seen = (sub.arrived, sub.protocol, sub.ident)
            quiet = self._quiet.get(sub)
            if quiet is None or quiet[0] != seen:
                self._quiet[sub] = quiet = (seen, now)
            if now - quiet[1] < self.after or sub in self._tasks \
                    or self._in_stream.get(sub) == sub.arrived \
                    or now < self._due.get(sub, -math.inf) or not suspect(sub, now, self.after):
                continue
            self._due[sub] = now + self.after
            task = self._tasks[sub] = asyncio.get_running_loop().create_task(self.check(sub))
            task.add_done_callback(functools.partial(self._done, sub))

    def _done(self, sub: Subscription, task: asyncio.Task[bool]) -> None:
        if self._tasks.get(sub) is task:
            del self._tasks[sub]
        if not task.cancelled() and (error := task.exception()) is not None:
            logger.error('stream %r: the check of a stalled reader failed', sub.stream,
                         exc_info=error)

    async def check(self, sub: Subscription) -> bool:
        """
        Ask the first offset of the stream of ``sub``; past the offset it
        reads next, and the subscription as it was (no chunk arrived, not
        paused, moved, recovered nor ended meanwhile), subscribe it again.
        Whether it was.
        """
        arrived = sub.arrived
        protocol = sub.protocol
        ident = sub.ident
        try:
            first = await self._first(sub.stream)
        except StreamsError as ex:  # (asked again after a while)
            logger.debug('stream %r: its first offset not known: %s', sub.stream, ex)
            return False
        received = sub.received_offset
        if first is None or received is None or first <= received:
            self._in_stream[sub] = arrived
            return False
        if sub.arrived != arrived or sub.protocol is not protocol or sub.ident != ident \
                or protocol is None or not protocol.is_open or sub.closed or sub.finished \
                or sub.seeking or sub.paused:
            return False
        if not self._resubscribe(sub, 'its broker reader stopped behind the stream\'s first'
                                 ' offset'):
            return False
        # (the new reader starts at the first offset: not asked about
        # again before its first chunk)
        self._in_stream[sub] = arrived
        logger.warning(
            'stream %r: no chunk for %.1fs, and its first offset %d is past the offset %d'
            ' read next (the broker\'s reader stopped after retention): subscribed again',
            sub.stream, self._clock() - arrived, first, received,
        )
        return True

    def forget(self, sub: Subscription) -> None:
        """A subscription left the read (a seek replaced it)."""
        self._in_stream.pop(sub, None)
        self._due.pop(sub, None)
        self._quiet.pop(sub, None)
        task = self._tasks.pop(sub, None)
        if task is not None:
            task.cancel()

    def close(self) -> None:
        """The read ended: the questions under way are cancelled."""
        for task in self._tasks.values():
            task.cancel()
        self._tasks.clear()
        self._in_stream.clear()
        self._due.clear()
        self._quiet.clear()

__all__ = ['POKE_INTERVAL', 'STALL_AFTER', 'First', 'Resubscribe', 'StallCheck', 'suspect']
