"""
Subscriptions: checking a subscription's options against the broker,
single active consumers, reading one or several streams' chunks in turn,
automatic offset tracking, and ending subscriptions.
"""

from __future__ import annotations

import asyncio
import dataclasses as dtc
import functools
import inspect
import logging
import typing as tp
from collections.abc import Awaitable, Callable

from ..error import ConnectionLost, NoOffset, OffsetOutOfRange, StreamsError
from ..lifecycle import StateListener
from ..metrics import Counters
from ..names import check_name
from ..offset import Offset
from ..protocol._chunk import ON_DECODE_ERROR
from ..protocol.commands import OffsetSpec
from ..protocol.constants import OffsetSpecType
from ..subscriptions.chunks import Chunks
from ..subscriptions.flow import FlowStrategy, check_flow
from ..subscriptions.gaps import GapWatch
from ..subscriptions.handoff import ConsumerUpdateContext
from ..subscriptions.options import ReadOptions
from ..subscriptions.progress import Progress
from ..subscriptions.source import Subscriptions
from ..subscriptions.stalled import Resubscribe, StallCheck
from ..subscriptions.subscription import Subscription
from ..subscriptions.tracking import OffsetTracker
from ..types import MessageFilter
from .connections import Connections
from .ends import Ends
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

GapAction: tp.TypeAlias = tp.Literal['warn', 'raise'] | tp.Callable[[OffsetOutOfRange], object]
"""
What a subscription does when retention removed offsets it was to read:
it was to start (or resume after a lost connection) at an offset older
than its stream's first, or retention overtook it while it read (see
:py:mod:`rbfly.streams.subscriptions.gaps`): ``'warn'`` and go on (the
default; counted in the ``messages_lost`` metric), ``'raise'``
:py:class:`~rbfly.streams.error.OffsetOutOfRange`, or call a function with
that error (which goes on unless the function raises). A read that stops
at the end, and a seek, wait for the gap check they owe: a loss is told
before the read ends or leaves its place. A single active consumer is
checked as it is made active at an offset, as a resume.
"""

ACTIVATION_CHECK_TIMEOUT = 5.0
"""
Most seconds a single active consumer's activation waits for its gap
check (the stream's statistics): the broker waits for the answer to its
consumer update meanwhile. Past it, the consumer is activated unchecked.
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
    # (internal: 'policy', concurrent handlers' error policy's)
    on_decode_error: DecodeErrorAction | tp.Literal['policy'] = 'raise'
    on_gap: GapAction = 'warn'
    processing_timeout: float | None = None

Make: tp.TypeAlias = Callable[[SubscribeOptions], Awaitable[list[Subscription]]]
"""Builds the subscriptions of a read (one, or a super stream's partitions) of its options."""

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

class Subscribing:
    """
    Creates subscriptions and reads them.

    :param options: The client's options (credit, buffer, spin, CRC).
    :param connections: The client's connections.
    :param placer: Places subscriptions on them.
    :param declarer: Ends subscriptions on their connection.
    :param offsets: Where subscriptions start.
    :param ends: Where streams end (``Offset.from_end``, ``stop_at_end``).
    :param counters: The client's metrics, counted by its subscriptions.
    :param resubscribe: Subscribes a subscription again (the recovery's):
        one whose broker reader stalled (see
        :py:mod:`rbfly.streams.subscriptions.stalled`); ``None``: none is.
    """
    def __init__(
            self,
            options: ClientOptions,
            connections: Connections,
            placer: Placer,
            offsets: Offsets,
            ends: Ends,
            counters: Counters,
            resubscribe: Resubscribe | None = None,
    ) -> None:
        self._options = options
        self._resubscribe = resubscribe
        self._connections = connections
        self._placer = placer
        self._offsets = offsets
        self._ends = ends
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

    def subscribe(self, stream: str, options: SubscribeOptions) -> Chunks:
        """
        The chunks of a stream (see
        :py:meth:`rbfly.streams.StreamsClient.subscribe_chunks`): nothing is
        checked or subscribed before the first iteration; their offsets
        are stored as ``options`` say (automatic tracking, by chunk).
        """
        self.check(options)
        tracker = self._offsets.tracker(options.name, options.store_every, options.store_interval)
        return Chunks(self.progress(self.make(stream), options, tracker))

    def make(self, stream: str) -> Make:
        """What makes the subscription of a stream (on the first iteration)."""
        return functools.partial(self._one, stream)

    async def _one(self, stream: str, options: SubscribeOptions) -> list[Subscription]:
        check_name('stream', stream)
        return [await self.new(stream, options)]

    def check(self, options: SubscribeOptions) -> None:
        """
        The options of a read whose values need no broker, checked as the
        read is asked for (the rest as it starts: :py:meth:`new`).
        """
        check_timeout(options.timeout)
        if options.on_decode_error != 'policy':
            check_decode_error(options.on_decode_error)
        stuck = options.processing_timeout
        if stuck is not None and (isinstance(stuck, bool) or not isinstance(stuck, int | float)
                                  or not 0 < stuck < float('inf')):
            raise ValueError('processing_timeout must be positive seconds or None, got {!r}'
                             .format(stuck))
        if options.on_gap not in ('warn', 'raise') and not callable(options.on_gap):
            raise ValueError("on_gap must be 'warn', 'raise' or a function, got {!r}".format(
                options.on_gap))
        self.flow(options.credit, options.buffer_bytes, options.flow)

    def progress(
            self, make: Make, options: SubscribeOptions, tracker: OffsetTracker | None,
    ) -> Progress:
        """
        The progress of a read of the subscriptions ``make`` builds from
        ``options`` (on the first iteration), placed on connections, and
        ended with it; ``tracker``: automatic offset tracking, if on (a
        view's: it reports by message, window or chunk).
        """
        # (a single active consumer cannot seek: subscribing again leaves its group)
        remake = None if options.single_active else functools.partial(self._again, options)
        # (neither a single active consumer nor a read with a filter is
        # subscribed again: see the module stalled)
        resubscribe = self._resubscribe
        stalls = None if resubscribe is None or options.single_active \
            or options.filter is not None else StallCheck(self._ends.first, resubscribe)
        source = Subscriptions(
            functools.partial(make, options), self._placer.place_new,
            self._placer.end_subscription, options.filter, remake, stalls,
        )
        group = options.name if options.single_active else None
        return Progress(
            source, tracker, timeout=options.timeout or None, group=group,
            processing_timeout=options.processing_timeout,
        )

    async def _again(self, options: SubscribeOptions, stream: str, offset: Offset) -> Subscription:
        """A subscription of a stream read already, made again at ``offset`` (a seek)."""
        return await self.new(stream, dtc.replace(options, offset=offset))

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
        offset = await self._ends.resolve(stream, offset)
        spec, start = await self._offsets.spec(stream, offset)
        gaps = self._watch(protocol.broker_version, stream, spec, start, options.on_gap)
        if gaps is not None and spec.type == OffsetSpecType.OFFSET \
                and (error := await gaps.check_start(start)) is not None:
            raise error
        client = self._options
        activation = functools.partial(
            self.activate, stream, name, offset, consumer_update, gaps=gaps,
            on_gap=options.on_gap,
        ) if single_active and name is not None else None
        read = ReadOptions(
            amqp=options.amqp, credit=flow[0], buffer_bytes=flow[1], spin=client.spin,
            crc_check=client.crc_check, skip_bad_crc=client.crc_failure == 'skip',
            max_uncompressed=client.max_chunk_uncompressed, flow=flow[2],
            on_decode_error=options.on_decode_error,
        )
        sub = Subscription(
            stream, spec, start, properties, read, self._counters,
            activation=activation, resume=options.resume, resume_offset=offset,
            gaps=gaps,
        )
        if options.on_state is not None:
            sub.lifecycle.listen(options.on_state)
        if stop_at_end:
            await self._ends.find_end(sub, spec)
        return sub

    def _watch(
            self, version: tuple[int, ...], stream: str, spec: OffsetSpec, start: int,
            on_gap: GapAction,
    ) -> GapWatch | None:
        """
        What watches a subscription for offsets retention removed before it
        read them (see :py:mod:`rbfly.streams.subscriptions.gaps`): its
        start, its start again after a lost connection, the gaps between
        its chunks. ``None`` on RabbitMQ 3.10, which does not say a
        stream's first offset: nothing is checked there, and nothing asked.
        """
        if version < (3, 11):
            return None
        return GapWatch(
            stream, self._ends.first, functools.partial(self._report_gap, on_gap),
            start if spec.type == OffsetSpecType.OFFSET else -1,
            settle_timeout=self._options.request_deadline,
        )

    async def _report_gap(self, on_gap: GapAction, gap: OffsetOutOfRange) -> None:
        """
        Offsets retention removed before a subscription read them (see
        :py:class:`~rbfly.streams.error.OffsetOutOfRange`): counted, and
        warned of, raised or told as ``on_gap`` says.
        """
        self._counters.messages_lost += gap.lost
        if on_gap == 'raise':
            raise gap
        if on_gap == 'warn':
            logger.warning('%s', gap)
            return
        await _call_on_gap(on_gap, gap)

    async def activate(
            self, stream: str, name: str, offset: Offset,
            consumer_update: ConsumerUpdateCallback | None, active: bool,
            current: Callable[[], bool], *, gaps: GapWatch | None = None,
            on_gap: GapAction = 'warn',
    ) -> OffsetSpec:
        """
        Offset a single active consumer starts at when it becomes active:
        after the offset stored under its name, else ``offset``, unless
        its ``consumer_update`` callback chooses another.

        An offset retention removed since (``gaps``: the subscription's
        watch, RabbitMQ 3.11+) is told as its ``on_gap`` says, as a
        resume's (see :py:meth:`_check_activation`).

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
        start = await self._ends.resolve(stream, start)
        spec, _ = await self._offsets.spec(stream, start)
        if gaps is not None and spec.type == OffsetSpecType.OFFSET:
            spec = await self._check_activation(stream, spec, gaps, on_gap)
        return spec

    async def _check_activation(
            self, stream: str, spec: OffsetSpec, gaps: GapWatch, on_gap: GapAction,
    ) -> OffsetSpec:
        """
        A single active consumer made active at an offset (``spec``):
        offsets from there to the stream's first, removed by retention
        since (the offset stored, then retention past it), are told as
        its ``on_gap`` says, with ``when='resume'``; with ``'raise'``
        the activation fails with that error, which the read raises. Else
        it starts at the first offset (the offsets told are not counted
        again by the gap to its first chunk): counted, and warned of with
        ``'warn'``, at once; a function is called once the broker is
        answered, in a task of its own (raising, it ends the read).

        Made active before (``gaps.active_before``), its check starts at
        its read position at the earliest: the offsets it read, and those
        told lost while it read, are not told (nor counted) again, neither
        here nor by the gaps of chunks read again.

        The stream's first offset not known (its statistics failed, or took
        more than :py:data:`ACTIVATION_CHECK_TIMEOUT` seconds): it starts at
        ``spec`` unchecked.

        :raises ConnectionLost: As the activation's other questions.
        """
        start = tp.cast(int, spec.value)
        watched = gaps.gaps
        read = watched.expected if gaps.active_before else -1
        # (read already: a gap of chunks read again is no loss, whether
        # the check below answers or not)
        watched.reported = max(watched.reported, read)
        try:
            # (not asyncio.wait_for: on Python 3.11 it can swallow the
            # activation's cancellation, python/cpython#86296)
            async with asyncio.timeout(ACTIVATION_CHECK_TIMEOUT):
                gap = await gaps.start_gap(max(start, read), 'resume')
        except ConnectionLost:
            raise
        except (TimeoutError, StreamsError) as ex:
            logger.info('stream %r: activated at offset %d unchecked, its first offset not'
                        ' known: %r', stream, start, ex)
            return spec
        if gap is None:
            return spec
        if isinstance(on_gap, str):  # (counted, and warned of or raised, now)
            if (error := await gaps.report(gap)) is not None:
                raise error
        else:
            # counted now (a later task cancelled before it starts would
            # not); the function called after the broker's answer
            self._counters.messages_lost += gap.lost
            gaps.later(gap, functools.partial(_call_on_gap, on_gap))
        # (told up to the first offset: the watch expects the first chunk
        # there, and a gap after it, retention meanwhile, is the read's)
        return OffsetSpec.offset(gap.first)

async def _call_on_gap(on_gap: Callable[[OffsetOutOfRange], object], gap: OffsetOutOfRange) -> None:
    """Call the application's ``on_gap`` function (awaited when it returns an awaitable)."""
    result = on_gap(gap)
    if inspect.isawaitable(result):
        await result

__all__ = [
    'ConsumerUpdateCallback', 'DecodeErrorAction', 'GapAction', 'ResumeCallback',
    'SubscribeOptions',
    'Subscribing', 'filter_properties',
]
