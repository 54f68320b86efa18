"""
Automatic offset tracking: a subscription with a name stores, under that
name, the offset of the last message the application processed, every
``store_every`` messages and ``store_interval`` seconds after the last
message, and when the subscription ends; ``Offset.reference(name)``
resumes after it.

A message counts as processed when the application asks for the next one,
or when the subscription ends (as the Java client counts the last message
dispatched): after a crash, messages since the last stored offset are read
again (at-least-once).

StoreOffset has no answer: an offset is stored on the current connection,
or with the next one stored when there is no connection. Where another
consumer continues from the stored offset (a single active consumer
handing its stream over, the subscription ending) the tracker *commits*:
it stores, and waits until the broker reports the offset (its
``commit()``).

A single active consumer owns the streams it is active on: after handing
one over (or losing its connection, when another consumer may take it),
the tracker forgets that stream's offsets and ignores what is processed
of it until it owns it again, so that a late store cannot move the new
owner's offset backwards.
"""

from __future__ import annotations

import asyncio
import logging
import typing as tp

from ..protocol.commands import StoreOffset

if tp.TYPE_CHECKING:
    from ..aio.connection import StreamsProtocol

Commit: tp.TypeAlias = tp.Callable[[str, str, int], tp.Awaitable[None]]
"""Stores an offset (stream, reference, offset) and waits until the broker has it."""

# the offset tracking's logger, as documented (doc/logging.rst): the module's former name
logger = logging.getLogger('rbfly.streams.tracking')

class OffsetTracker:
    """
    Stores offsets of processed messages under a reference name.

    :param protocol: Returns the client's connection, if open.
    :param reference: Offset reference name.
    :param every: Store after this many processed messages.
    :param interval: Store this many seconds after a processed message
        that was not stored yet.
    :param commit: Stores an offset and waits until the broker has it
        (:py:meth:`rbfly.streams.parts.offsets.Offsets.commit`).
    """
    def __init__(
            self,
            protocol: tp.Callable[[], StreamsProtocol | None],
            reference: str,
            every: int,
            interval: float,
            commit: Commit | None = None,
    ) -> None:
        if every < 1:
            raise ValueError('store_every must be at least 1, got {}'.format(every))
        if interval <= 0:
            raise ValueError('store_interval must be positive, got {}'.format(interval))
        self._protocol = protocol
        self.reference = reference
        self._every = every
        self._interval = interval
        self._commit = commit
        self._count = 0
        # offsets processed and not stored, and stored and not known to be
        # committed, per stream; streams handed over (not owned)
        self._pending: dict[str, int] = {}
        self._sent: dict[str, int] = {}
        self._released: set[str] = set()
        # per stream, the offset an activation started at: what is
        # processed before it was handed out before the stream was handed
        # over and back, and must not be stored
        self._floor: dict[str, int] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._pull: tp.Callable[[], tuple[str, int, int] | None] | None = None

    def attach(self, pull: tp.Callable[[], tuple[str, int, int] | None]) -> None:
        """
        Take processed messages from ``pull`` before storing: a message
        iterator's cursor (owned by the reader's progress, as this
        tracker) reports them in batches (see :py:meth:`batch_limit`), and
        hands over the rest, as ``(stream, offset, count)``, when asked.
        """
        self._pull = pull

    def batch_limit(self) -> int:
        """
        Processed messages an iterator may hold back before reporting them:
        none while no timer runs (the first one starts it), else as many as
        are missing for a store.
        """
        return 1 if self._timer is None else max(1, self._every - self._count)

    def processed(self, stream: str, offset: int, count: int = 1) -> None:
        """
        The application processed messages of a stream up to ``offset``
        (ignored for a stream handed over: its new owner stores it).
        """
        if stream in self._released or offset < self._floor.get(stream, 0):
            return
        self._pending[stream] = offset
        self._count += count
        if self._count >= self._every:
            self.store()
        elif self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # an iterator dropped after its loop ended
                self.store()
            else:
                self._timer = loop.call_later(self._interval, self.store)

    def store(self) -> None:
        """
        Store the pending offsets now (when connected).
        """
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pull = self._pull
        held = pull() if pull is not None else None
        if held is not None:
            stream, offset, count = held
            if stream not in self._released and offset >= self._floor.get(stream, 0):
                self._pending[stream] = offset
                self._count += count
        protocol = self._protocol()
        if not self._pending or protocol is None or not protocol.is_open:
            return
        pending = self._pending
        self._pending = {}
        self._count = 0
        self._sent.update(pending)
        for stream, offset in pending.items():
            protocol.send(StoreOffset(self.reference, stream, offset))
            logger.debug('stored offset %d of stream %r under %r', offset, stream,
                         self.reference)

    async def commit(self, stream: str | None = None) -> None:
        """
        Store the offset of the last message processed of a stream (of
        every stream: ``None``), and wait until the broker has it; also
        an offset stored before and not known to be written. Without a
        connection, nothing is stored (a warning says so): the next owner
        reads again from the offset stored last.

        :raises rbfly.streams.error.OffsetCommitTimeout: When the broker
            does not report an offset in time.
        """
        self.store()  # takes what the iterator holds back; sends it, if connected
        streams = [stream] if stream is not None \
            else list(self._pending.keys() | self._sent.keys())
        for s in streams:
            # (read again after each commit: a step-down may have released
            # a stream meanwhile)
            offset = self._pending.get(s, self._sent.get(s))
            if offset is None or s in self._released:
                continue
            protocol = self._protocol()
            if self._commit is None or protocol is None or not protocol.is_open:
                logger.warning('offset %d of stream %r under %r not confirmed stored: no'
                               ' connection', offset, s, self.reference)
                continue
            await self._commit(s, self.reference, offset)
            if self._pending.get(s) == offset:
                del self._pending[s]
            if self._sent.get(s) == offset:
                del self._sent[s]
            logger.debug('committed offset %d of stream %r under %r', offset, s, self.reference)

    def release(self, stream: str) -> None:
        """
        The consumer no longer owns a stream (handed over, or its
        connection lost): forget its offsets, and ignore what is processed
        of it until :py:meth:`own`.
        """
        self._released.add(stream)
        self._pending.pop(stream, None)
        self._sent.pop(stream, None)

    def own(self, stream: str, start: int) -> None:
        """
        The consumer is active on a stream (again), from offset ``start``
        on: track it; offsets before ``start`` are of messages handed out
        before (not stored: the stream went through another owner since).
        """
        self._released.discard(stream)
        self._floor[stream] = start

    def seek(self, stream: str, start: int | None) -> None:
        """
        The application moved its reading of a stream to offset ``start``
        (``None``: known as its first message comes): what it processed
        of it before is not stored any more; the offset before ``start``
        is, at the next store (else the first message processed after).
        """
        self._pending.pop(stream, None)
        if start:
            self.processed(stream, start - 1, 0)

    def close(self) -> None:
        """Store what is pending; stop the timer."""
        self.store()
        self._pull = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

__all__ = ['OffsetTracker']
