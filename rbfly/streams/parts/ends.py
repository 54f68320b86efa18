"""
Where a stream ends, answered in one place for every broker: its last
chunk of messages, the offset ``Offset.from_end(n)`` stands for, where a
subscription that stops at the end (``stop_at_end``) stops, and a stream's
first and last offsets from its statistics (a consumer group's lag).

Each broker answers differently: RabbitMQ 4.3+ resolves offset
specifications (``ResolveOffsetSpec``); 3.11+ has a stream's statistics
(``StreamStats``); 3.10 has neither, and the last chunk is read by a
subscription at ``last``, with a bounded wait (:py:data:`PROBE_TIMEOUT`).
"""

from __future__ import annotations

import asyncio
import logging
import typing as tp

from ..error import StreamEndUnknown
from ..metrics import Counters
from ..names import check_name
from ..offset import Offset, OffsetType
from ..protocol.commands import OffsetSpec, ResolveOffsetSpec, StreamStats
from ..protocol.constants import OffsetSpecType
from ..subscriptions.options import ReadOptions
from ..subscriptions.subscription import Chunk, Subscription
from .asking import Asking
from .connections import Connections
from .options import ClientOptions
from .placer import Placer

logger = logging.getLogger('rbfly.streams.client')

PROBE_TIMEOUT = 2.0
"""
Seconds RabbitMQ 3.10 is given to send a stream's last chunk to a
subscription at ``last`` (:py:meth:`Subscribing.last_chunk`) before the
stream is taken for one without messages: 3.10 says nothing of an empty
stream (it sends its last chunk at once, in milliseconds, when it has one).
"""

PROBE_TIMEOUT_KNOWN = 10.0
"""
Seconds a broker that said the stream has chunks (3.11+) is given to send
the last one (of messages: a stream of stored offsets only sends none).
"""

def probe_timed_out(stream: str, known: bool, wait: float) -> None:
    """
    A probe for a stream's last chunk got none within ``wait`` seconds.
    ``known``: the broker said the stream has chunks (RabbitMQ 3.11+), so
    the end is not known, and :py:class:`~rbfly.streams.error.StreamEndUnknown`
    is raised (a slow broker taken for an empty stream made
    ``Offset.from_end(n)`` start at the end, and ``rbfly tail`` print
    nothing and succeed). Else (3.10, which says nothing) the stream is
    taken for one without messages, as it most likely is, with a warning
    naming the assumption.
    """
    if known:
        raise StreamEndUnknown(stream, wait)
    logger.warning(
        'stream %r sent no chunk within %ss: taken for a stream without messages (RabbitMQ'
        ' 3.10 does not say whether it has any); if it has, the broker was slow:'
        ' Offset.from_end starts at the end, and stop_at_end reads nothing', stream, wait)

def stream_end(stats: tp.Mapping[str, int]) -> tuple[int | None, int | None, bool]:
    """
    A stream's first offset, its last committed offset, and whether that
    is exact, from its statistics (``-1``: empty): ``committed_offset``
    of RabbitMQ 4.3, else ``committed_chunk_id``, the first offset of the
    last committed chunk (RabbitMQ 3.11-4.2; a lower bound).
    """
    first = stats.get('first_chunk_id', -1)
    exact = 'committed_offset' in stats
    end = stats['committed_offset'] if exact else stats.get('committed_chunk_id', -1)
    return (first if first >= 0 else None), (end if end >= 0 else None), exact

class Ends:
    """
    Where streams end.

    :param options: The client's options (a probe subscription's buffer
        and CRC check).
    :param connections: The client's connections (the broker's version,
        its answers).
    :param placer: Places a probe subscription, and ends it.
    :param counters: The client's metrics, counted by a probe.
    """
    def __init__(
            self, options: ClientOptions, connections: Connections, placer: Placer,
            counters: Counters,
    ) -> None:
        self._options = options
        self._connections = connections
        self._placer = placer
        self._counters = counters
        # the last chunks being found, by stream (asked once by the
        # subscriptions starting at once)
        self._last: Asking[tuple[int, int, float] | None] = Asking()

    async def first(self, stream: str) -> int | None:
        """
        The stream's first offset (retention moves it), from its
        statistics; ``None`` when empty, or on RabbitMQ 3.10 (none).
        """
        protocol = await self._connections.get()
        if protocol.broker_version < (3, 11):
            return None
        context = 'stream {!r}'.format(stream)
        stats = (await self._connections.call(StreamStats(stream), context)).stats
        first, _, _ = stream_end(dict(stats))
        return first

    async def resolve(self, stream: str, offset: Offset) -> Offset:
        """
        An offset the client resolves before subscribing
        (:py:meth:`Offset.from_end <rbfly.streams.Offset.from_end>`) as the
        offset it stands for now; other offsets as they are.
        """
        if offset.type != OffsetType.FROM_END:
            return offset
        last = await self.last_chunk(stream)
        if last is None:  # no messages: from the end on
            return Offset.NEXT
        return Offset.offset(max(0, last[1] - tp.cast(int, offset.value)))

    async def last_chunk(self, stream: str) -> tuple[int, int, float] | None:
        """
        The stream's last chunk of messages: its first offset, the offset
        after its last message (the end of the messages), and its
        timestamp (seconds); ``None``: the stream has no messages.

        Read from the chunk itself, by a subscription at ``last`` taking
        one chunk (a credit of 1), on every broker. Whether there is one to
        wait for: RabbitMQ 4.3+ resolves ``last`` to ``next`` without
        messages; 3.11+ has no chunk at all in an empty stream's statistics;
        3.10 says nothing, and the subscription waits
        :py:data:`PROBE_TIMEOUT` seconds for a chunk (see
        :py:func:`probe_timed_out`).

        :raises rbfly.streams.error.StreamEndUnknown: When the broker said
            the stream has chunks and none came within
            :py:data:`PROBE_TIMEOUT_KNOWN` seconds (on 3.11-4.2 also a
            stream of stored offsets only).
        """
        check_name('stream', stream)
        protocol = await self._connections.get()
        version = protocol.broker_version
        context = 'stream {!r}'.format(stream)
        call = self._connections.call
        wait = PROBE_TIMEOUT
        known = False  # whether the broker said the stream has chunks
        if version >= (4, 3):
            last = (await call(ResolveOffsetSpec(stream, OffsetSpec.last(), {}), context)).offset
            end = (await call(ResolveOffsetSpec(stream, OffsetSpec.next(), {}), context)).offset
            if last >= end:
                return None
            wait = PROBE_TIMEOUT_KNOWN
            known = True
        elif version >= (3, 11):
            stats = (await call(StreamStats(stream), context)).stats
            if dict(stats).get('committed_chunk_id', -1) < 0:
                return None
            wait = PROBE_TIMEOUT_KNOWN
            known = True
        try:
            chunk = await self._probe(stream, wait)
        except TimeoutError:
            probe_timed_out(stream, known, wait)
            return None
        return chunk.first_offset, chunk[-1].stream_offset + 1, chunk.timestamp

    async def _probe(self, stream: str, wait: float) -> Chunk:
        """
        The last chunk of messages of a stream, read by a subscription at
        ``last`` with a credit of 1.

        :raises TimeoutError: When none came within ``wait`` seconds.
        """
        options = self._options
        read = ReadOptions(
            credit=1, buffer_bytes=options.buffer_bytes, crc_check=options.crc_check,
            skip_bad_crc=options.crc_failure == 'skip',
            max_uncompressed=options.max_chunk_uncompressed,
        )
        sub = Subscription(
            stream, OffsetSpec.last(), 0, {}, read, self._counters, resume_offset=Offset.LAST,
        )
        try:
            await self._placer.place_new(sub)
            async with asyncio.timeout(wait):
                while not (chunk := await sub.next_chunk()):
                    pass  # (no messages: a chunk skipped)
        finally:
            self._placer.end_subscription(sub)
        return chunk

    async def find_end(self, sub: Subscription, spec: OffsetSpec) -> None:
        """
        Where a subscription that stops at the end stops: the stream's last
        chunk of messages now (before RabbitMQ 4.3, see :py:meth:`_find_last`).

        The end is ``next`` as the broker resolves it: the offset after
        everything. The stream's statistics would not do: its last
        committed chunk may be one of stored offsets, which subscriptions
        never get, and waiting for it would never end (measured: RabbitMQ
        4.0 and 4.3). The broker resolves ``last`` to the first offset of
        the last chunk of messages, a chunk subscriptions get; with no
        messages at all, to ``next`` (and ``first`` to the first chunk, of
        messages or not). So, resolving ``next``, ``last``, ``next``:

        - ``last`` below the end: the chunk to stop at;
        - ``last`` at the end, and the end unchanged: no messages;
        - else something was written meanwhile: ask again; after a few
          times (a stream written all the time), stop at the first chunk
          at or past the end (a chunk of messages was written), without
          its messages.

        Its own start resolved at or past the end: nothing to read.
        """
        protocol = await self._connections.get()
        if protocol.broker_version < (4, 3):
            await self._find_last(sub, spec)
            return
        context = 'stream {!r}'.format(sub.stream)
        call = self._connections.call
        stream = sub.stream

        async def resolve(spec: OffsetSpec) -> int:
            return (await call(ResolveOffsetSpec(stream, spec, {}), context)).offset

        for _ in range(3):
            end = await resolve(OffsetSpec.next())
            last = await resolve(OffsetSpec.last())
            if last < end:
                break
            if last == end == await resolve(OffsetSpec.next()):
                sub.stop_at(None, 0, finished=True)  # no messages
                return
        sub.stop_at(min(last, end), end, finished=await resolve(spec) >= end)

    async def _find_last(self, sub: Subscription, spec: OffsetSpec) -> None:
        """
        Where a subscription that stops at the end stops, before RabbitMQ
        4.3: at the stream's last chunk of messages (see
        :py:meth:`last_chunk`). Its start at or past the end (an offset,
        ``next``, a time after the last chunk's) reads nothing.
        """
        if spec.type == OffsetSpecType.NEXT:  # nothing to read, whatever the end
            sub.stop_at(None, 0, finished=True)
            return
        stream = sub.stream
        last = await self._last.ask(stream, lambda: self.last_chunk(stream))
        if last is None:
            sub.stop_at(None, 0, finished=True)  # no messages
            return
        first, end, timestamp = last
        value = spec.value
        match spec.type:
            case OffsetSpecType.OFFSET:
                finished = isinstance(value, int) and value >= end
            case OffsetSpecType.TIMESTAMP:
                finished = isinstance(value, int) and value / 1000 > timestamp
            case _:
                finished = False
        sub.stop_at(first, end, finished=finished)

__all__ = [
    'PROBE_TIMEOUT', 'PROBE_TIMEOUT_KNOWN', 'Ends', 'probe_timed_out', 'stream_end',
]
