"""
Consumer groups seen from outside their consumers: where a group stands
on a stream, or on each partition of a super stream (the offset stored
under its name, the stream's end, the lag), and moving it (a reset).

A group is the subscriptions sharing a consumer name: single active
consumers of a stream, or of a super stream's partitions, storing their
offsets under that name, the last offset processed;
``Offset.reference(name)`` resumes after it. Which consumer of a group
is active the stream protocol does not say: RabbitMQ tells it through
``rabbitmq-streams list_stream_group_consumers`` and its management API
only.

"Nothing processed" is no offset stored, and the protocol cannot remove
one. So a reset to the first message of a stream starting at offset 0
stores :py:data:`BEFORE_FIRST`, 2**64 - 1: -1 to a client reading offsets
as signed 64-bit integers (the Java client), and ``(stored + 1) mod
2**64`` = 0 to rbfly: the group resumes at offset 0. When the stream
starts later (retention removed its head), the offset before its first
is stored, an offset every client reads.
"""

from __future__ import annotations

import asyncio
import logging
import typing as tp

from ..error import GroupActive, NoOffset, StreamDoesNotExist, StreamEndUnknown
from ..names import check_name
from ..offset import Offset, OffsetType
from ..types import PartitionReset, PartitionStatus
from .connections import Connections
from .ends import Ends, stream_end
from .offsets import BEFORE_FIRST, COMMIT_TIMEOUT, Offsets
from .streams import Streams
from .superstreams import SuperStreams

logger = logging.getLogger('rbfly.streams.client')


ACTIVITY_WATCH = 1.0
"""
Seconds a reset watches the offsets stored under a group's name for a
consumer storing: a consumer with automatic tracking stores every
``store_every`` messages and ``store_interval`` (5) seconds after its
last chunk, so a busy group shows within a second; a quiet one does not.
"""

def stored_before(start: int) -> int:
    """The offset to store for a group to resume at ``start``: the one before."""
    return start - 1 if start > 0 else BEFORE_FIRST

def resume_after(stored: int) -> int:
    """The offset a group that stored ``stored`` resumes at (as ``Offset.reference``)."""
    return (stored + 1) % 2 ** 64

def partition_status(
        stream: str, stored: int | None, stats: tp.Mapping[str, int] | None,
        messages_end: int | None = None,
) -> PartitionStatus:
    """
    Where a group stands on a stream, from the offset stored under its
    name, the stream's statistics (``None``: the broker has none, 3.10),
    and the offset after the stream's last message (0: no messages;
    ``None``: not known): the lag counts offsets up to the last message,
    not the offsets stored after it.
    """
    if stats is None:
        return PartitionStatus(stream, stored, None, None, None, False)
    first, end, exact = stream_end(stats)
    start = 0 if stored is None else resume_after(stored)
    if messages_end is not None:
        lag = max(0, messages_end - max(start, first or 0))
        return PartitionStatus(stream, stored, first, end, lag, exact, lag == 0)
    lag = 0
    if end is not None:
        lag = max(0, end - max(start, first or 0) + 1)
    return PartitionStatus(stream, stored, first, end, lag, exact)

class Groups:
    """
    Consumer group tooling: status and reset.

    :param connections: The client's connections (the broker's version
        decides what is available).
    :param offsets: Stored offsets: queried, and committed (a reset
        returns once the broker reports each offset stored).
    :param streams: Stream statistics, and offset specifications resolved
        (RabbitMQ 4.3+).
    :param super_streams: A super stream's partitions.
    :param ends: Where a stream's messages end (the lag).
    """
    def __init__(
            self, connections: Connections, offsets: Offsets, streams: Streams,
            super_streams: SuperStreams, ends: Ends,
    ) -> None:
        self._connections = connections
        self._offsets = offsets
        self._streams = streams
        self._super_streams = super_streams
        self._ends = ends

    async def streams(self, stream: str | None, super_stream: str | None) -> list[str]:
        """
        The stream, or the partitions of the super stream, in order.

        :raises ValueError: Unless exactly one of them is given.
        :raises rbfly.streams.error.StreamDoesNotExist: When the super
            stream does not exist or has no partitions.
        """
        if (stream is None) == (super_stream is None):
            raise ValueError('give exactly one of stream and super_stream, got {}'.format(
                'both' if stream is not None else 'neither'))
        if stream is not None:
            check_name('stream', stream)
            return [stream]
        assert super_stream is not None
        partitions = await self._super_streams.partitions(super_stream)
        if not partitions:
            raise StreamDoesNotExist('super stream {!r} has no partitions'.format(super_stream))
        return partitions

    async def _stored(self, stream: str, name: str) -> int | None:
        """The offset stored under a name (``None``: nothing)."""
        try:
            return await self._offsets.query(stream, name)
        except NoOffset:
            return None

    async def status(
            self, name: str, stream: str | None, super_stream: str | None,
    ) -> list[PartitionStatus]:
        """Where a group stands on a stream, or on each partition of a super stream."""
        check_name('consumer group', name)
        streams = await self.streams(stream, super_stream)
        protocol = await self._connections.get()
        has_stats = protocol.broker_version >= (3, 11)
        result = []
        for s in streams:
            stored = await self._stored(s, name)  # StreamDoesNotExist on any broker
            stats = await self._streams.stats(s) if has_stats else None
            end = await self._messages_end(s) if stats is not None else None
            result.append(partition_status(s, stored, stats, end))
        return result

    async def _messages_end(self, stream: str) -> int | None:
        """
        The offset after a stream's last message (0: none), read from its
        last chunk of messages; ``None`` when the broker said the stream
        has chunks and sent none in time (RabbitMQ 3.11-4.2, a stream of
        stored offsets only: the lag counts offsets then).
        """
        try:
            last = await self._ends.last_chunk(stream)
        except StreamEndUnknown as ex:
            logger.warning('consumer group lag of %r counts offsets: %s', stream, ex)
            return None
        return 0 if last is None else last[1]

    async def reset(
            self, name: str, to: Offset, stream: str | None, super_stream: str | None,
            force: bool, dry_run: bool, watch: float, timeout: float = COMMIT_TIMEOUT,
    ) -> list[PartitionReset]:
        """
        Store, under a group's name, the offset before the one it is to
        resume at, on a stream or each partition of a super stream.

        :raises GroupActive: Without ``force``, when an offset stored
            under the name changed within ``watch`` seconds.
        """
        check_name('consumer group', name)
        if not isinstance(to, Offset):
            raise TypeError('to must be an Offset, got {!r}'.format(type(to).__name__))
        if isinstance(watch, bool) or not isinstance(watch, int | float) or not watch >= 0:
            raise ValueError('watch must be seconds, at least 0, got {!r}'.format(watch))
        streams = await self.streams(stream, super_stream)
        before = [await self._stored(s, name) for s in streams]
        if not force:
            await asyncio.sleep(watch)
            after = [await self._stored(s, name) for s in streams]
            moved = [s for s, b, a in zip(streams, before, after, strict=True) if a != b]
            if moved:
                raise GroupActive(name, moved)
        plan = []
        for s, stored in zip(streams, before, strict=True):
            start = await self._start(s, to)
            plan.append(PartitionReset(s, stored, stored_before(start), start))
        if not dry_run:
            for r in plan:
                await self._offsets.commit(r.stream, name, r.stored, timeout)
                logger.info('consumer group %r of stream %r reset to offset %d (was %s)',
                            name, r.stream, r.resume, r.before)
        return plan

    async def _start(self, stream: str, to: Offset) -> int:
        """
        The offset a group reset to ``to`` resumes at on a stream.

        - first: the stream's first offset (RabbitMQ 3.11+: statistics;
          before, 0, where the broker starts at the first it has);
        - last, next: the end, the offset after the last (4.3+, resolved
          as ``next``; 3.11-4.2: the first offset of the last committed
          chunk, whose messages come again);
        - an offset: it;
        - a time: the first chunk stored at or after it (4.3+, resolved);
        - a reference: where the group of that name resumes;
        - ``Offset.from_end(n)``: ``n`` messages before the end now (read
          from the stream's last chunk, as a subscription resolves it).
        """
        protocol = await self._connections.get()
        version = protocol.broker_version
        match to.type:
            case OffsetType.FIRST:
                if version < (3, 11):
                    return 0
                first, _, _ = stream_end(await self._streams.stats(stream))
                return first or 0
            case OffsetType.LAST | OffsetType.NEXT:
                if version >= (4, 3):
                    return await self._streams.resolve(stream, Offset.NEXT, None)
                protocol.require((3, 11), 'resetting a consumer group to the end')
                _, end, _ = stream_end(await self._streams.stats(stream))
                return end or 0
            case OffsetType.OFFSET:
                return tp.cast(int, to.value)
            case OffsetType.TIMESTAMP:
                protocol.require((4, 3), 'resetting a consumer group to a time')
                return await self._streams.resolve(stream, to, None)
            case OffsetType.REFERENCE:
                stored = await self._stored(stream, tp.cast(str, to.value))
                if stored is None:  # as Offset.reference: its default, or the first message
                    return await self._start(stream, to.default or Offset.FIRST)
                return resume_after(stored)
            case OffsetType.FROM_END:
                return await self._start(stream, await self._offsets.resolve(stream, to))
        raise ValueError('not a valid offset: {!r}'.format(to))

__all__ = [
    'ACTIVITY_WATCH', 'BEFORE_FIRST', 'Groups', 'partition_status', 'resume_after',
    'stored_before', 'stream_end',
]
