"""
Subscriptions: checking a subscription's options against the broker,
single active consumers, reading one or several streams' chunks in turn,
automatic offset tracking, and ending subscriptions.
"""

from __future__ import annotations

import dataclasses as dtc
import functools
import inspect
import logging
import typing as tp
from collections.abc import AsyncGenerator, Awaitable, Callable

from ...amqp import MessageCtx
from ..aio.records import detach
from ..error import ConnectionLost, NoOffset, StreamEndUnknown, StreamsError
from ..lifecycle import ResourceState, StateListener
from ..metrics import Counters
from ..names import check_name
from ..offset import Offset, OffsetType
from ..protocol._chunk import ON_DECODE_ERROR
from ..protocol.commands import OffsetSpec, ResolveOffsetSpec, StreamStats
from ..protocol.constants import OffsetSpecType
from ..subscriptions.flow import FlowStrategy, check_flow
from ..subscriptions.handoff import ConsumerUpdateContext, HandOff, Holding
from ..subscriptions.subscription import Chunk, Subscription, wait_any
from ..subscriptions.tracking import OffsetTracker
from ..subscriptions.windows import Pace
from ..types import MessageFilter
from .connections import Connections
from .declare import Declarer
from .offsets import BEFORE_FIRST, Offsets
from .options import ClientOptions
from .placer import Placer

logger = logging.getLogger('rbfly.streams.client')

ConsumerUpdateCallback = tp.Callable[
    [ConsumerUpdateContext], 'Offset | tp.Awaitable[Offset | None] | None',
]
"""
Called when the broker makes a single active consumer active or inactive
on a stream, with a
:py:class:`~rbfly.streams.subscriptions.handoff.ConsumerUpdateContext` (true
when active: a callback of a bare ``active`` flag keeps working); returns
the offset to start at when active, or ``None`` for the context's
``offset`` (after the stored offset of the consumer's name, or the
subscription's ``offset`` when nothing is stored).
"""

ResumeCallback = tp.Callable[[str, Offset], 'Offset | tp.Awaitable[Offset | None] | None']
"""
Called before a subscription subscribes again (after a lost connection, or
when its stream's member moved) with the stream and the offset it would
resume from: right after the last chunk received, or its starting offset
when none was received. Returns the offset to resume from instead (e.g.
one kept by the application), or ``None`` to keep it.
"""

DecodeErrorAction: tp.TypeAlias = tp.Literal['raise', 'skip', 'raw']
"""
What a subscription decoding AMQP does with a message that is not AMQP
1.0: raise :py:class:`rbfly.error.MessageDecodeError`, skip it, or hand
out its bytes as the body.
"""

Flow: tp.TypeAlias = tuple[int, int, FlowStrategy | None]
"""A subscription's credit, buffer size and flow strategy."""

@dtc.dataclass(frozen=True, slots=True)
class SubscribeOptions:
    """
    The options of a subscription, as given to the facade's subscribe
    methods (see :py:meth:`rbfly.streams.StreamsClient.subscribe_chunks`
    for each); one record the facade builds once and hands on, checked
    when the subscription starts (on its first iteration, as before).
    """
    offset: Offset = Offset.NEXT
    filter: MessageFilter | None = None
    timeout: float = 0
    amqp: bool = True
    name: str | None = None
    single_active: bool = False
    consumer_update: ConsumerUpdateCallback | None = None
    store_every: int = 0
    store_interval: float = 5
    credit: int | None = None
    buffer_bytes: int | None = None
    resume: ResumeCallback | None = None
    on_state: StateListener | None = None
    flow: FlowStrategy | None = None
    stop_at_end: bool = False
    on_decode_error: DecodeErrorAction = 'raise'

Make: tp.TypeAlias = Callable[[], Awaitable[list[Subscription]]]
"""Builds the subscriptions of a read (one, or a super stream's partitions)."""

def check_decode_error(action: str) -> None:
    """A subscription's ``on_decode_error``."""
    if action not in ON_DECODE_ERROR:
        raise ValueError('on_decode_error must be one of {}, got {!r}'.format(
            ', '.join(repr(a) for a in ON_DECODE_ERROR), action))

def check_timeout(timeout: float) -> None:
    """A subscription's idle timeout: seconds, 0 for none."""
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) \
            or not 0 <= timeout < float('inf'):
        raise ValueError('timeout must be 0 (none) or a number of seconds, got {!r}'.format(
            timeout))

def filter_properties(filter: MessageFilter) -> dict[str, str]:
    """
    Subscription properties of a filter: its values, and whether messages
    without a filter value match.
    """
    properties = {'filter.{}'.format(i): v for i, v in enumerate(sorted(filter.values))}
    properties['match-unfiltered'] = 'true' if filter.match_unfiltered else 'false'
    return properties

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

def _filter(flt: MessageFilter, chunk: Chunk) -> None:
    """
    Keep the messages of a chunk a filter matches; a chunk left empty is
    not handed out, so the credit a flow strategy holds for it goes back.
    """
    chunk[:] = post_filter(flt, chunk)
    if not chunk:
        release = getattr(chunk, 'release', None)
        if release is not None:
            release()

def _join(
        subs: list[Subscription], options: SubscribeOptions, holding: Holding,
        tracker: OffsetTracker | None,
) -> None:
    """Single active consumers: the subscriptions' part in hand-offs."""
    if options.single_active and options.name is not None:
        group = HandOff(options.name, holding, tracker)
        for sub in subs:
            sub.group = group

async def _paced(
        single: Subscription | None, active: list[Subscription], turn: int, pace: Pace,
) -> tuple[Subscription, Chunk, int] | None:
    """
    The next chunk (see :py:func:`_take`) for a window iterator: ``None``
    when the window's deadline passes first; the subscription's idle
    timeout raises ``TimeoutError`` as before.
    """
    wait = pace.wait()
    try:
        if single is not None:
            taken = single, await single.next_chunk(wait), turn
        else:
            taken = await _take(active, turn, wait)
    except TimeoutError:
        if pace.idle():
            raise
        return None
    pace.arrived()
    return taken

async def _take(
        active: list[Subscription], turn: int, wait: float | None,
) -> tuple[Subscription, Chunk, int]:
    """
    The next chunk of several subscriptions, taken in turn from ``turn``
    on, when they have chunks (waiting for one otherwise); return it, its
    subscription, and whose turn is next.
    """
    while True:
        n = len(active)
        for i in range(n):
            sub = active[(turn + i) % n]
            taken = sub.poll()
            if taken is not None:
                return sub, taken, (turn + i + 1) % n
        await wait_any(active, wait)

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

_TICK = Chunk()
"""What a window iterator's chunk generator yields when the window's deadline passes."""

class Subscribing:
    """
    Creates subscriptions and reads them.

    :param options: The client's options (credit, buffer, spin, CRC).
    :param connections: The client's connections.
    :param placer: Places subscriptions on them.
    :param declarer: Ends subscriptions on their connection.
    :param offsets: Where subscriptions start.
    :param counters: The client's metrics, counted by its subscriptions.
    """
    def __init__(
            self,
            options: ClientOptions,
            connections: Connections,
            placer: Placer,
            declarer: Declarer,
            offsets: Offsets,
            counters: Counters,
    ) -> None:
        self._options = options
        self._connections = connections
        self._placer = placer
        self._declarer = declarer
        self._offsets = offsets
        self._counters = counters

    def flow(
            self, credit: int | None, buffer_bytes: int | None,
            strategy: FlowStrategy | None = None,
    ) -> Flow:
        """
        Credit and buffer size of a subscription (given, or the client's),
        and its flow strategy.
        """
        check_flow(strategy)
        if strategy is not None and (credit is not None or buffer_bytes is not None):
            raise ValueError('a flow strategy sets the credit; credit and buffer_bytes'
                             ' do not apply')
        if credit is None:
            credit = self._options.credit
        elif isinstance(credit, bool) or not isinstance(credit, int) or not 1 <= credit <= 0xffff:
            raise ValueError('credit must be 1..65535, got {!r}'.format(credit))
        if buffer_bytes is None:
            buffer_bytes = self._options.buffer_bytes
        elif isinstance(buffer_bytes, bool) or not isinstance(buffer_bytes, int) \
                or buffer_bytes < 1:
            raise ValueError('buffer_bytes must be positive, got {!r}'.format(buffer_bytes))
        return credit, buffer_bytes, strategy

    def subscribe(
            self, stream: str, options: SubscribeOptions, messages: OffsetTracker | None = None,
            holding: Holding | None = None, pace: Pace | None = None,
    ) -> AsyncGenerator[Chunk, None]:
        """
        The chunks of a stream (see
        :py:meth:`rbfly.streams.StreamsClient.subscribe_chunks`): nothing is
        checked or subscribed before the first iteration; the offsets of
        the chunks are stored as ``options`` say, unless the message
        iterator tracks single messages itself, with the tracker given as
        ``messages`` (see :py:meth:`chunks`).
        """
        return self.chunks(
            functools.partial(self._one, stream, options), options, messages, holding, pace,
        )

    async def _one(self, stream: str, options: SubscribeOptions) -> list[Subscription]:
        check_name('stream', stream)
        return [await self.new(stream, options)]

    async def new(
            self, stream: str, options: SubscribeOptions, super_stream: str | None = None,
    ) -> Subscription:
        """
        Check the options of a subscription (of a partition of
        ``super_stream``, if given) against the broker and build it.
        """
        flow = self.flow(options.credit, options.buffer_bytes, options.flow)
        offset = options.offset
        filter = options.filter
        name = options.name
        single_active = options.single_active
        consumer_update = options.consumer_update
        stop_at_end = options.stop_at_end
        if not isinstance(offset, Offset):
            raise TypeError('offset must be an Offset, got {!r}'.format(type(offset).__name__))
        if filter is not None and not isinstance(filter, MessageFilter):
            raise TypeError('filter must be a MessageFilter, got {!r}'.format(
                type(filter).__name__))
        protocol = await self._connections.get()
        properties: dict[str, str] = {}
        if filter is not None:
            protocol.require((3, 13), 'stream filtering')
            properties.update(filter_properties(filter))
        if name is not None:
            check_name('consumer', name)
            properties['name'] = name
        if single_active:
            if name is None:
                raise ValueError('a single active consumer needs a name')
            protocol.require((3, 11), 'single active consumer')
            properties['single-active-consumer'] = 'true'
            if super_stream is not None:
                properties['super-stream'] = super_stream
        elif consumer_update is not None:
            raise ValueError('consumer_update is an option of a single active consumer')
        if stop_at_end and filter is not None:
            raise ValueError('stop_at_end cannot be combined with a filter: the broker may'
                             ' skip the last chunk, and the subscription would wait')
        offset = await self.resolve_start(stream, offset)
        spec, start = await self._offsets.spec(stream, offset)
        client = self._options
        activation = functools.partial(
            self.activate, stream, name, offset, consumer_update,
        ) if single_active and name is not None else None
        sub = Subscription(
            stream, spec, start, options.amqp, flow[0], properties, flow[1], client.spin,
            self._counters, client.crc_check, flow[2],
            client.crc_failure == 'skip', client.max_chunk_uncompressed,
            activation=activation, resume=options.resume, resume_offset=offset,
            on_decode_error=options.on_decode_error,
        )
        if options.on_state is not None:
            sub.lifecycle.listen(options.on_state)
        if stop_at_end:
            await self._find_end(sub, spec)
        return sub

    async def resolve_start(self, stream: str, offset: Offset) -> Offset:
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
        options = SubscribeOptions(offset=Offset.LAST, timeout=wait, credit=1)
        chunks = self.subscribe(stream, options)
        try:
            chunk = await anext(chunks)
        except TimeoutError:
            probe_timed_out(stream, known, wait)
            return None
        except StopAsyncIteration:  # (a chunk generator ends only when told)
            return None
        finally:
            await chunks.aclose()
        return chunk.first_offset, chunk[-1].stream_offset + 1, chunk.timestamp

    async def _find_end(self, sub: Subscription, spec: OffsetSpec) -> None:
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
        last = await self.last_chunk(sub.stream)
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

    async def activate(
            self, stream: str, name: str, offset: Offset,
            consumer_update: ConsumerUpdateCallback | None, active: bool,
            current: Callable[[], bool],
    ) -> OffsetSpec:
        """
        Offset a single active consumer starts at when it becomes active:
        after the offset stored under its name, else ``offset``, unless
        its ``consumer_update`` callback chooses another.

        An activation whose subscription left its connection (``current``
        false) while the stored offset was looked up is void: the broker
        gets no answer there, and the application is not told it is active
        (it was told of the loss already, and the subscription made again
        may be an inactive member). Told so, a member of a group on
        RabbitMQ 4.0.5 believed itself active on a partition whose active
        member was another, for good (1 of 50 runs of the cluster test).

        :raises ConnectionLost: When the activation is void.
        """
        stored: int | None
        try:
            stored = await self._offsets.query(stream, name)
        except NoOffset:
            stored = None
        except StreamsError:
            if active:
                raise
            stored = None  # stepping down: for the callback only
        if active and not current():
            raise ConnectionLost('connection lost while activating on stream {!r}'.format(stream))
        if stored is None:
            start = offset
        elif stored == BEFORE_FIRST:  # reset to the first offset (rbfly.streams.parts.groups)
            stored, start = None, Offset.offset(0)
        else:
            start = Offset.offset(stored + 1)
        if consumer_update is not None:
            result = consumer_update(ConsumerUpdateContext(stream, name, active, stored, start))
            if inspect.isawaitable(result):
                result = await result
            if active and result is not None:
                if not isinstance(result, Offset):
                    raise TypeError('consumer_update must return an Offset or None,'
                                    ' got {!r}'.format(result))
                start = result
        if not active:
            return OffsetSpec.none()
        await self._connections.get()
        start = await self.resolve_start(stream, start)
        spec, _ = await self._offsets.spec(stream, start)
        return spec

    def chunks(
            self, make: Make, options: SubscribeOptions, messages: OffsetTracker | None = None,
            holding: Holding | None = None, pace: Pace | None = None,
    ) -> AsyncGenerator[Chunk, None]:
        """
        The chunks of the subscriptions ``make`` builds (on the first
        iteration, as everything here), placed, then ended with the
        generator. Their offsets are stored as ``options`` say (automatic
        tracking), by chunk; or by message, with the tracker of a message
        iterator given as ``messages`` (it reports what is processed; the
        generator commits at the end and on hand-offs); ``holding``, a
        message iterator's, knows how to cut its chunk at a hand-off.

        One generator, the one the application iterates: the facade
        returns it as it is, rather than yielding each chunk again.

        A window iterator's (:py:mod:`rbfly.streams.subscriptions.windows`)
        gives ``pace``: the generator yields an empty chunk when its
        deadline passes with no chunk to take, and leaves the commit at the
        end to the window iterator (which knows the last window processed).
        """
        if holding is None:
            holding = Holding()
        if pace is not None:
            pace.start(options.timeout or None)
        return self._consume(make, options, messages, messages is None, holding, pace)

    async def _consume(
            self, make: Make, options: SubscribeOptions, tracker: OffsetTracker | None,
            by_chunk: bool, holding: Holding, pace: Pace | None = None,
    ) -> AsyncGenerator[Chunk, None]:
        """
        Subscribe, and yield the chunks of the subscriptions as they come
        (taking them in turn when several have chunks); with a tracker
        (``by_chunk``), the offset of each chunk is stored once the
        application asks for the next (automatic offset tracking); at the
        end, the offsets are committed, and the subscriptions ended.

        What the application holds is reported to the single active
        consumers' hand-offs (:py:mod:`rbfly.streams.subscriptions.handoff`).
        """
        check_timeout(options.timeout)
        check_decode_error(options.on_decode_error)
        # the options' values are checked before asking the broker anything
        # (new() applies them to each subscription)
        self.flow(options.credit, options.buffer_bytes, options.flow)
        if by_chunk:
            tracker = self._offsets.tracker(
                options.name, options.store_every, options.store_interval,
            )
        subs = await make()
        _join(subs, options, holding, tracker)
        filter = options.filter
        wait = options.timeout if options.timeout > 0 else None
        last: Chunk | None = None
        try:
            for sub in subs:
                await self._placer.place_new(sub)
            single = subs[0] if len(subs) == 1 else None  # the common case: no round robin
            active = [s for s in subs if not s.finished]
            turn = 0
            while active:
                if pace is not None:
                    taken = await _paced(single, active, turn, pace)
                    if taken is None:  # the window's deadline passed
                        yield _TICK
                        continue
                    sub, chunk, turn = taken
                elif single is not None:
                    sub = single
                    chunk = await sub.next_chunk(wait)
                else:
                    sub, chunk, turn = await _take(active, turn, wait)
                sub.bound(chunk)
                if sub.finished:
                    active.remove(sub)
                if filter is not None:
                    _filter(filter, chunk)
                if chunk:
                    last = chunk
                    holding.handed(chunk.stream)
                    yield chunk
                    # (the application may have emptied the chunk it was handed)
                    if by_chunk and tracker is not None and chunk:
                        tracker.processed(chunk.stream, chunk[-1].stream_offset, len(chunk))
                    last = None
                    holding.moved()
        finally:
            try:
                # (a window iterator commits itself: it knows the last
                # window processed)
                if tracker is not None and pace is None:
                    await self._commit(tracker, last if by_chunk else None)
            finally:
                holding.moved()
                for sub in subs:
                    self._end(sub)

    async def _commit(self, tracker: OffsetTracker, last: Chunk | None) -> None:
        """
        Commit the offsets of the last messages processed as the
        iteration ends (``last``: the chunk handed out last, processed
        too): the next consumer of the name starts after them.
        A failure is logged: the messages since the offset stored before
        are read again (at-least-once), and an error here would hide the
        one that ended the iteration.
        """
        if last:
            tracker.processed(last.stream, last[-1].stream_offset)
        tracker.close()
        try:
            await tracker.commit()
        except StreamsError as ex:
            logger.warning('offsets under %r not committed at the end of the subscription: %s',
                           tracker.reference, ex)

    def _end(self, sub: Subscription) -> None:
        """A subscription ends: unsubscribe, unless its connection is closing."""
        sub.lifecycle.move(ResourceState.CLOSED, 'ended by the application')
        protocol = sub.protocol
        closing = self._placer.release_subscription(sub)
        if protocol is not None and protocol.is_open and not closing:
            self._declarer.unsubscribe(protocol, sub)
        else:
            detach(sub)

__all__ = [
    'ConsumerUpdateCallback', 'DecodeErrorAction', 'ResumeCallback', 'SubscribeOptions',
    'Subscribing',
    'filter_properties', 'probe_timed_out',
]
