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
or with the next one stored when there is no connection.
"""

from __future__ import annotations

import asyncio
import logging
import typing as tp
import weakref

from ..protocol.commands import StoreOffset

if tp.TYPE_CHECKING:
    from ..aio.connection import StreamsProtocol

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
    """
    def __init__(
            self,
            protocol: tp.Callable[[], StreamsProtocol | None],
            reference: str,
            every: int,
            interval: float,
    ) -> None:
        if every < 1:
            raise ValueError('store_every must be at least 1, got {}'.format(every))
        if interval <= 0:
            raise ValueError('store_interval must be positive, got {}'.format(interval))
        self._protocol = protocol
        self.reference = reference
        self._every = every
        self._interval = interval
        self._count = 0
        self._pending: dict[str, int] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._pull: weakref.WeakMethod[tp.Callable[[], tuple[str, int, int] | None]] | None \
            = None

    def attach(self, pull: tp.Callable[[], tuple[str, int, int] | None]) -> None:
        """
        Take processed messages from ``pull`` before storing: a message
        iterator reports them in batches (see :py:meth:`batch_limit`), and
        hands over the rest, as ``(stream, offset, count)``, when asked.
        A weak reference: the iterator holds the tracker, and, dropped
        (a ``break`` out of its loop), stores its last offset at once.
        """
        self._pull = weakref.WeakMethod(pull)

    def batch_limit(self) -> int:
        """
        Processed messages an iterator may hold back before reporting them:
        none while no timer runs (the first one starts it), else as many as
        are missing for a store.
        """
        return 1 if self._timer is None else max(1, self._every - self._count)

    def processed(self, stream: str, offset: int, count: int = 1) -> None:
        """
        The application processed messages of a stream up to ``offset``.
        """
        self._pending[stream] = offset
        self._count += count
        if self._count >= self._every:
            self.store()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._interval, self.store)

    def store(self) -> None:
        """
        Store the pending offsets now (when connected).
        """
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pull = self._pull() if self._pull is not None else None
        held = pull() if pull is not None else None
        if held is not None:
            stream, offset, count = held
            self._pending[stream] = offset
            self._count += count
        protocol = self._protocol()
        if not self._pending or protocol is None or not protocol.is_open:
            return
        pending = self._pending
        self._pending = {}
        self._count = 0
        for stream, offset in pending.items():
            protocol.send(StoreOffset(self.reference, stream, offset))
            logger.debug('stored offset %d of stream %r under %r', offset, stream,
                         self.reference)

    def close(self) -> None:
        """Store what is pending; stop the timer."""
        self.store()
        self._pull = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

__all__ = ['OffsetTracker']
