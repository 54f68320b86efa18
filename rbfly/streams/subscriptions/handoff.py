"""
Hand-offs of single active consumers: a consumer group's partitions moving
between its members without losing or repeating a message.

The broker makes one subscription of a group (a consumer name on a stream,
or on each partition of a super stream) active at a time. When it moves a
stream to another member (a member joins or leaves), it asks the active
one to step down and waits for its answer before it activates the next,
which then asks where to start. A hand-off is exact when the old member
answers only once the offset of the last message it finished processing
is stored, and the new one starts right after the stored offset.

"Finished processing" is the iteration moving past a message: the
application asks for the next message (or chunk), or ends the iteration;
automatic offset tracking (:py:mod:`rbfly.streams.subscriptions.tracking`)
counts messages the same way. So, asked to step down, a member

1. stops handing out that stream's chunks (those buffered are dropped:
   they are the next member's), and a message iterator the rest of the
   chunk at hand (the next member processes those messages);
2. waits until the application moved past the message (a chunk
   iterator: the chunk) of that stream it holds, if any
   (at most :py:data:`HANDOFF_TIMEOUT` seconds: the
   broker waits for the answer meanwhile);
3. with automatic tracking, commits the offset of the last message
   processed (stores it, and waits until the broker reports it), and
   forgets the stream, so that no late store moves the next member's
   offset backwards;
4. calls the application's ``consumer_update`` callback with a
   :py:class:`ConsumerUpdateContext` (an application keeping offsets of
   its own commits them here), and answers the broker.

Activated, a member looks up the offset stored under its name and starts
after it; with nothing stored, at the subscription's ``offset``; the
callback may choose another. A member losing its connection stops handing
out the stream's chunks too (another member may be active by the time it
subscribes again), and starts again as the broker activates it.

This is the Java client's behaviour with automatic tracking (store on
stepping down, wait for it, look the stored offset up on activation), and
what a Kafka consumer group gives on a rebalance with committed offsets.
"""

from __future__ import annotations

import dataclasses as dtc
import logging
import typing as tp

from ..offset import Offset

if tp.TYPE_CHECKING:
    from .tracking import OffsetTracker

logger = logging.getLogger('rbfly.streams.subscriber')

HANDOFF_TIMEOUT = 30.0
"""
Seconds a member stepping down waits for the application to finish the
chunk it holds before it answers the broker anyway (with a warning: the
next member may process that chunk's messages again).
"""

@dtc.dataclass(frozen=True, slots=True)
class ConsumerUpdateContext:
    """
    What a single active consumer's ``consumer_update`` callback is told
    when the broker makes it active or inactive on a stream.

    It is true when the consumer becomes active, false otherwise, so a
    callback written for a bare ``active`` flag (``if active: ...``) keeps
    working.

    :ivar stream: The stream, or the partition of a super stream.
    :ivar name: The consumer name (the group).
    :ivar active: Whether the consumer becomes active.
    :ivar stored_offset: The offset stored under ``name`` for ``stream``
        (``None``: nothing stored): on stepping down, after automatic
        tracking committed the last message processed.
    :ivar offset: Where the consumer starts when active, unless the
        callback returns another offset: right after ``stored_offset``,
        or the subscription's ``offset`` when nothing is stored.
    """
    stream: str
    name: str
    active: bool
    stored_offset: int | None
    offset: Offset

    def __bool__(self) -> bool:
        return self.active

class Reader(tp.Protocol):
    """
    What a hand-off needs of the iteration's progress
    (:py:class:`~rbfly.streams.subscriptions.progress.Progress`).
    """
    def cut(self, stream: str) -> None:
        """Hand out nothing more of ``stream`` taken so far."""
        ...

    async def released(self, stream: str, timeout: float) -> bool:
        """Wait until the application holds nothing of ``stream``."""
        ...

class HandOff:
    """
    A single active consumer's part of its hand-offs, for the streams of
    one iteration (a stream, or the partitions of a super stream).

    :param name: The consumer name.
    :param progress: The iteration's progress: what the application
        holds, and what was taken and not handed out yet.
    :param tracker: Automatic offset tracking, if on.
    :param timeout: Seconds to wait for the application to finish its
        chunk (:py:data:`HANDOFF_TIMEOUT`).
    """
    def __init__(
            self, name: str, progress: Reader, tracker: OffsetTracker | None,
            timeout: float = HANDOFF_TIMEOUT,
    ) -> None:
        self.name = name
        self._progress = progress
        self._tracker = tracker
        self._timeout = timeout

    async def step_down(self, stream: str) -> None:
        """
        The consumer hands ``stream`` over (its chunks are not handed out
        any more): wait until the application finished the chunk of it it
        holds, then commit the offset of the last message processed.
        """
        self._progress.cut(stream)
        if not await self._progress.released(stream, self._timeout):
            logger.warning(
                'stream %r handed over while the application still processes a chunk of it'
                ' after %ss: the next consumer of %r may process its messages again',
                stream, self._timeout, self.name,
            )
        tracker = self._tracker
        if tracker is None:
            return
        try:
            await tracker.commit(stream)
        except Exception as ex:  # noqa: BLE001 - the broker is answered anyway
            logger.warning(
                'offset of stream %r not committed under %r on handing it over: %s; the next'
                ' consumer reads again from the offset stored before', stream, self.name, ex,
            )
        finally:
            tracker.release(stream)

    def lost(self, stream: str) -> None:
        """
        The connection of the consumer's subscription to ``stream`` is
        lost: another consumer may be active on it when it subscribes
        again, so what it processed meanwhile is not stored, and the
        messages of it not handed out yet are not.
        """
        self._progress.cut(stream)
        if self._tracker is not None:
            self._tracker.release(stream)

    def activated(self, stream: str, start: int) -> None:
        """
        The consumer is active on ``stream`` from offset ``start`` on: its
        offsets are tracked again (from there: see
        :py:meth:`~rbfly.streams.subscriptions.tracking.OffsetTracker.own`).
        """
        if self._tracker is not None:
            self._tracker.own(stream, start)

__all__ = ['HANDOFF_TIMEOUT', 'ConsumerUpdateContext', 'HandOff', 'Reader']
