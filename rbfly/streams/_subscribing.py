"""
Subscriptions of :py:class:`~rbfly.streams.StreamsClient`: offsets to
start at, single active consumers, consuming one or several streams,
subscribing again on a new connection, and stored offsets.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import typing as tp
from collections.abc import AsyncGenerator

from ..amqp import get_message_ctx
from ..types import AMQPBody
from ._bodies import Bodies
from ._placement import PlacementMixin
from .aio.protocol import StreamsProtocol
from .error import (
    NoOffset,
    RequestTimeout,
    StreamsError,
)
from .offset import Offset, OffsetType
from .protocol.commands import (
    OffsetSpec,
    QueryOffset,
    StoreOffset,
    Subscribe,
    Unsubscribe,
)
from .subscriber import Chunk, Subscription, wait_any
from .tracking import OffsetTracker
from .types import MessageFilter
from .util import check_name, post_filter

logger = logging.getLogger('rbfly.streams.client')

ConsumerUpdateCallback = tp.Callable[[bool], 'Offset | tp.Awaitable[Offset | None] | None']
"""
Called when the broker makes a single active consumer active (``True``) or
inactive (``False``); returns the offset to start at when active, or
``None`` for the subscription's offset.
"""

ResumeCallback = tp.Callable[[str, Offset], 'Offset | tp.Awaitable[Offset | None] | None']
"""
Called before a subscription subscribes again (after a lost connection, or
when its stream's member moved) with the stream and the offset it would
resume from: right after the last chunk received, or its starting offset
when none was received. Returns the offset to resume from instead (e.g.
one kept by the application), or ``None`` to keep it.
"""


def filter_properties(filter: MessageFilter) -> dict[str, str]:
    """
    Subscription properties of a filter: its values, and whether messages
    without a filter value match.
    """
    properties = {'filter.{}'.format(i): v for i, v in enumerate(sorted(filter.values))}
    properties['match-unfiltered'] = 'true' if filter.match_unfiltered else 'false'
    return properties

class SubscriptionsMixin(PlacementMixin):
    """Subscribing to streams, and offsets."""

    def subscribe(
            self,
            stream: str,
            *,
            offset: Offset = Offset.NEXT,
            filter: MessageFilter | None = None,
            timeout: float = 0,
            amqp: bool = True,
            name: str | None = None,
            single_active: bool = False,
            consumer_update: ConsumerUpdateCallback | None = None,
            store_every: int = 0,
            store_interval: float = 5,
            credit: int | None = None,
            buffer_bytes: int | None = None,
            resume: ResumeCallback | None = None,
    ) -> AsyncGenerator[AMQPBody, None]:
        """
        Subscribe to a stream and iterate over its messages' bodies.

        Call :py:func:`rbfly.streams.get_message_ctx` inside the loop for
        the current message's offset, timestamp and AMQP sections.

        :param offset: Where to start reading (default: new messages only).
        :param filter: Filter values (RabbitMQ 3.13+).
        :param timeout: Raise ``TimeoutError`` when no message arrives for
            this many seconds (0: wait forever).
        :param amqp: Decode AMQP 1.0 messages; otherwise bodies are bytes.
        :param name: Consumer name (see :py:meth:`subscribe_chunks`).
        :param single_active: Single active consumer (RabbitMQ 3.11+; see
            :py:meth:`subscribe_chunks`).
        :param consumer_update: Called when the broker makes this single
            active consumer active or inactive (see
            :py:meth:`subscribe_chunks`).
        :param store_every: Automatic offset tracking: store the offset of
            the last processed message under ``name`` every this many
            messages (0: off), ``store_interval`` seconds after the last
            one, and at the end (see :py:mod:`rbfly.streams.tracking`).
        :param store_interval: Seconds after which a processed message's
            offset is stored anyway.
        :param credit: See :py:meth:`subscribe_chunks`.
        :param buffer_bytes: See :py:meth:`subscribe_chunks`.
        :param resume: See :py:meth:`subscribe_chunks`.
        """
        tracker = self._tracker(name, store_every, store_interval)
        chunks = self.subscribe_chunks(
            stream, offset=offset, filter=filter, amqp=amqp, timeout=timeout,
            name=name, single_active=single_active, consumer_update=consumer_update,
            credit=credit, buffer_bytes=buffer_bytes, resume=resume,
        )
        return self._bodies(chunks, tracker)

    def _bodies(
            self, chunks: AsyncGenerator[Chunk, None], tracker: OffsetTracker | None,
    ) -> AsyncGenerator[AMQPBody, None]:
        """
        The bodies of the messages of chunks, each message set as the
        current message context (:py:class:`Bodies`, compiled); with a
        tracker, a message counts as processed when the next one is asked
        for, and the last one handed out when the iteration ends.
        """
        return Bodies(chunks, tracker)

    def _tracker(self, name: str | None, every: int, interval: float) -> OffsetTracker | None:
        if not every:
            return None
        if name is None:
            raise ValueError('automatic offset tracking (store_every) needs a name')
        check_name('consumer', name)
        return OffsetTracker(lambda: self._protocol, name, every, interval)

    async def subscribe_chunks(
            self,
            stream: str,
            *,
            offset: Offset = Offset.NEXT,
            filter: MessageFilter | None = None,
            amqp: bool = True,
            timeout: float = 0,
            name: str | None = None,
            single_active: bool = False,
            consumer_update: ConsumerUpdateCallback | None = None,
            store_every: int = 0,
            store_interval: float = 5,
            credit: int | None = None,
            buffer_bytes: int | None = None,
            resume: ResumeCallback | None = None,
    ) -> AsyncGenerator[Chunk, None]:
        """
        Subscribe to a stream and receive its messages a chunk at a time.

        Each item is a :py:class:`~rbfly.streams.subscriber.Chunk`: a list
        of messages with their stream offset and timestamp set, plus the
        chunk's first offset and the stream's committed chunk id. The
        cheapest way to consume a stream.

        :param offset: Where to start reading.
        :param filter: Filter values (RabbitMQ 3.13+); only messages with
            these values are returned.
        :param amqp: Decode AMQP 1.0 messages; otherwise bodies are the raw
            bytes.
        :param timeout: Raise ``TimeoutError`` when no chunk arrives for
            this many seconds (0: wait forever).
        :param name: Consumer name, the group of a single active consumer.
        :param single_active: Single active consumer (RabbitMQ 3.11+): of
            the subscriptions with this ``name``, the broker sends messages
            to one at a time; when it ends, the next one becomes active and
            starts at ``offset`` (use ``Offset.reference(name)`` with
            :py:meth:`write_offset` to continue where the previous one
            stopped).
        :param consumer_update: Called with ``True`` when the broker makes
            this single active consumer active and with ``False`` when it
            makes it inactive; may return (or be a coroutine returning) the
            :py:class:`Offset` to start at instead of ``offset``.
        :param store_every: Automatic offset tracking: store the offset of
            the last processed chunk under ``name`` once this many messages
            are processed (0: off), ``store_interval`` seconds after the
            last chunk, and at the end (see :py:mod:`rbfly.streams.tracking`).
        :param store_interval: Seconds after which a processed chunk's
            offset is stored anyway.
        :param credit: Chunks the broker may send ahead at the start, and at
            least (default: the client's ``credit``).
        :param buffer_bytes: Bytes of chunks the subscription may hold
            (default: the client's ``buffer_bytes``).
        :param resume: Called with the stream and an :py:class:`Offset`
            before the subscription subscribes again, after a lost
            connection or a moved stream member; the offset is where it
            would resume, right after the last chunk received (no message
            lost or repeated). May return (or be a coroutine returning) the
            :py:class:`Offset` to resume from instead, e.g. one stored by
            the application with the messages it processed; chunks received
            and not handed out yet are then dropped. An exception it raises
            ends the subscription with that exception.
        """
        check_name('stream', stream)
        protocol = await self._get_protocol()
        flow = self._flow(credit, buffer_bytes)
        sub = await self._new_subscription(
            protocol, stream, offset, filter, amqp, name, single_active, consumer_update, None,
            flow, resume,
        )
        # closed with this generator, not when garbage collected: the
        # subscription ends (and its node connection closes) at once
        async with contextlib.aclosing(self._track(
                self._consume([sub], filter, timeout),
                self._tracker(name, store_every, store_interval))) as chunks:
            async for chunk in chunks:
                yield chunk

    async def _track(
            self, chunks: AsyncGenerator[Chunk, None], tracker: OffsetTracker | None,
    ) -> AsyncGenerator[Chunk, None]:
        """
        Chunks, with the offset of each stored once the application asks
        for the next (automatic offset tracking).
        """
        last: Chunk | None = None
        try:
            if tracker is None:
                async for chunk in chunks:
                    yield chunk
            else:
                async for chunk in chunks:
                    last = chunk
                    yield chunk
                    if chunk:
                        tracker.processed(chunk.stream, chunk[-1].stream_offset, len(chunk))
        finally:
            if tracker is not None:
                if last:  # handed out last: processed too
                    tracker.processed(last.stream, last[-1].stream_offset)
                tracker.close()
            await chunks.aclose()

    async def _offset_spec(
            self, protocol: StreamsProtocol, stream: str, offset: Offset,
    ) -> tuple[OffsetSpec, int]:
        t = offset.type
        if t == OffsetType.FIRST:
            return OffsetSpec.first(), 0
        if t == OffsetType.LAST:
            return OffsetSpec.last(), 0
        if t == OffsetType.NEXT:
            return OffsetSpec.next(), 0
        if t == OffsetType.OFFSET:
            value = tp.cast(int, offset.value)
            return OffsetSpec.offset(value), value
        if t == OffsetType.TIMESTAMP:
            return OffsetSpec.timestamp(int(tp.cast(float, offset.value) * 1000)), 0
        reference = tp.cast(str, offset.value)
        try:
            stored = await self._query_offset(stream, reference)
        except NoOffset:
            return OffsetSpec.first(), 0
        return OffsetSpec.offset(stored + 1), stored + 1

    def _flow(self, credit: int | None, buffer_bytes: int | None) -> tuple[int, int]:
        """
        Credit and buffer size of a subscription: given, or the client's.
        """
        if credit is None:
            credit = self._credit
        elif isinstance(credit, bool) or not isinstance(credit, int) or not 1 <= credit <= 0xffff:
            raise ValueError('credit must be 1..65535, got {!r}'.format(credit))
        if buffer_bytes is None:
            buffer_bytes = self._buffer_bytes
        elif isinstance(buffer_bytes, bool) or not isinstance(buffer_bytes, int) \
                or buffer_bytes < 1:
            raise ValueError('buffer_bytes must be positive, got {!r}'.format(buffer_bytes))
        return credit, buffer_bytes

    async def _new_subscription(
            self,
            protocol: StreamsProtocol,
            stream: str,
            offset: Offset,
            filter: MessageFilter | None,
            amqp: bool,
            name: str | None,
            single_active: bool,
            consumer_update: ConsumerUpdateCallback | None,
            super_stream: str | None,
            flow: tuple[int, int],
            resume: ResumeCallback | None = None,
    ) -> Subscription:
        """
        Check the options of a subscription against the broker and build it.
        """
        properties: dict[str, str] = {}
        if filter is not None:
            self._require(protocol, (3, 13), 'stream filtering')
            properties.update(filter_properties(filter))
        if name is not None:
            check_name('consumer', name)
            properties['name'] = name
        if single_active:
            if name is None:
                raise ValueError('a single active consumer needs a name')
            self._require(protocol, (3, 11), 'single active consumer')
            properties['single-active-consumer'] = 'true'
            if super_stream is not None:
                properties['super-stream'] = super_stream
        elif consumer_update is not None:
            raise ValueError('consumer_update is an option of a single active consumer')
        spec, start = await self._offset_spec(protocol, stream, offset)
        sub = Subscription(
            stream, spec, start, amqp, flow[0], properties, flow[1], self._spin, self._counters,
            self._crc_check,
        )
        if single_active:
            sub.activation = functools.partial(
                self._activation, stream, offset, consumer_update,
            )
        sub.resume = resume
        sub.resume_offset = offset
        return sub

    async def _resume_spec(self, sub: Subscription) -> OffsetSpec | None:
        """
        Offset specification a subscription subscribes with again: after
        the last chunk received, or what its ``resume`` callback returns
        instead. ``None`` when the callback failed (the subscription ends
        with its error).
        """
        spec = sub.resume_spec()
        if sub.resume is None:
            return spec
        current = tp.cast(Offset, sub.resume_offset) if sub.received_offset is None \
            else Offset.offset(tp.cast(int, spec.value))
        try:
            result = sub.resume(sub.stream, current)
            if inspect.isawaitable(result):
                result = await result
            if result is None or result == current:
                return spec
            if not isinstance(result, Offset):
                raise TypeError('resume must return an Offset or None, got {!r}'.format(result))
            protocol = await self._get_protocol()
            spec, start = await self._offset_spec(protocol, sub.stream, result)
        except StreamsError:
            raise  # a lost connection, a deleted stream: the recovery's to handle
        except Exception as ex:  # noqa: BLE001 - the application's callback; the iterator raises it
            logger.error('resume callback of the subscription to stream %r failed: %s',
                         sub.stream, ex)
            sub.fail(ex)
            return None
        logger.info('subscription to stream %r resumes at %s instead of %s',
                    sub.stream, result, current)
        sub.restart(spec, start, result)
        return spec

    async def _activation(
            self, stream: str, offset: Offset,
            consumer_update: ConsumerUpdateCallback | None, active: bool,
    ) -> OffsetSpec:
        """
        Offset a single active consumer starts at when it becomes active.
        """
        if consumer_update is not None:
            result = consumer_update(active)
            if inspect.isawaitable(result):
                result = await result
            if active and result is not None:
                if not isinstance(result, Offset):
                    raise TypeError('consumer_update must return an Offset or None,'
                                    ' got {!r}'.format(result))
                offset = result
        if not active:
            return OffsetSpec.none()
        protocol = await self._get_protocol()
        spec, _ = await self._offset_spec(protocol, stream, offset)
        return spec

    async def _consume(
            self,
            subs: list[Subscription],
            filter: MessageFilter | None,
            timeout: float,
    ) -> AsyncGenerator[Chunk, None]:
        """
        Subscribe, and yield the chunks of the subscriptions as they come
        (taking them in turn when several have chunks); unsubscribe at the
        end.
        """
        wait = timeout if timeout > 0 else None
        try:
            for sub in subs:
                await self._place_new(sub)
            if len(subs) == 1:  # the common case, without the round robin
                sub = subs[0]
                while True:
                    chunk = await sub.next_chunk(wait)
                    if filter is not None:
                        chunk[:] = post_filter(filter, chunk)
                    if chunk:
                        yield chunk
            turn = 0
            while True:
                for i in range(len(subs)):
                    taken = subs[(turn + i) % len(subs)].poll()
                    if taken is not None:
                        turn = (turn + i + 1) % len(subs)
                        chunk = taken
                        break
                else:
                    await wait_any(subs, wait)
                    continue
                if filter is not None:
                    chunk[:] = post_filter(filter, chunk)
                if chunk:
                    yield chunk
        finally:
            for sub in subs:
                protocol = sub.protocol
                closed = self._release(sub)
                if protocol is not None and protocol.is_open and not closed:
                    self._unsubscribe(
                        protocol, sub, 'subscription to stream {!r}'.format(sub.stream),
                    )
                else:
                    sub.detach()

    async def _subscribe(
            self, protocol: StreamsProtocol, sub: Subscription, spec: OffsetSpec,
    ) -> None:
        sid = self._free_id(protocol.subscriptions, 'subscriptions')
        sub.attach(protocol, sid)
        ctx = 'subscription to stream {!r}'.format(sub.stream)
        try:
            await protocol.request(
                Subscribe(sid, sub.stream, spec, sub.credit, sub.properties), ctx,
            )
        except (asyncio.CancelledError, RequestTimeout):
            sub.detach()
            self._abandon(protocol, protocol.subscriptions, sid, Unsubscribe(sid), ctx)
            raise
        except Exception:
            sub.detach()
            raise

    async def _restore_subscription(self, protocol: StreamsProtocol, sub: tp.Any) -> None:
        """
        Subscribe again on the client's connection (after a lost connection,
        maybe to another node), or, when the stream has no member on its
        node now, place the subscription on a member's node.
        """
        if (await self._placements(protocol, sub.stream))[0] is None:
            spec = await self._resume_spec(sub)
            if spec is not None:
                await self._declare_again(
                    protocol, sub.stream, lambda: self._subscribe(protocol, sub, spec),
                )
            return
        self._manager.subscriptions.discard(sub)
        sub.manager = None
        sub.detach()
        self._relocate_later(sub)

    def _unsubscribe(self, protocol: StreamsProtocol, sub: Subscription, ctx: str) -> None:
        """
        End a subscription on its connection. Its id stays taken (what
        comes for it is dropped) until the broker answered the Unsubscribe:
        a subscription declared meanwhile on the connection must not get
        the id the broker still holds (it answered "subscription id already
        exists" in CI when the id was freed before the Unsubscribe went).
        """
        sid = sub.subscription_id
        sub.detach()
        self._abandon(protocol, protocol.subscriptions, sid, Unsubscribe(sid), ctx)

    #
    # offsets
    #

    async def _query_offset(self, stream: str, reference: str) -> int:
        response = await self._call(
            QueryOffset(reference, stream),
            'offset reference {!r} of stream {!r}'.format(reference, stream),
        )
        return tp.cast(int, response.offset)

    async def query_offset(self, stream: str, reference: str) -> int:
        """
        Read the offset stored under a reference name.

        :raises rbfly.streams.error.NoOffset: When nothing is stored.
        """
        check_name('stream', stream)
        check_name('offset reference', reference)
        return await self._query_offset(stream, reference)

    async def write_offset(self, stream: str, reference: str, value: int | None = None) -> None:
        """
        Store an offset under a reference name, to resume from it later
        with ``Offset.reference(reference)``.

        :param value: Offset to store; by default the offset of the message
            being processed (:py:func:`get_message_ctx`; nothing is stored
            when no message was processed in the task yet).
        """
        check_name('stream', stream)
        check_name('offset reference', reference)
        if value is None:
            try:
                value = get_message_ctx().stream_offset
            except LookupError:  # no message yet: nothing to store (as RbFly 0.10)
                logger.debug('no message processed; offset of %r not stored', reference)
                return
        if not 0 <= value < 2 ** 64:
            raise ValueError('offset must be 0..2**64-1, got {}'.format(value))
        protocol = await self._get_protocol()
        protocol.send(StoreOffset(reference, stream, value))

__all__ = ['ConsumerUpdateCallback', 'SubscriptionsMixin', 'filter_properties']
