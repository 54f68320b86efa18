"""
Subscriptions: receive the messages of a stream.

Flow control: the broker sends a chunk only against a credit. A
subscription's credit policy (:py:mod:`rbfly.streams.subscriptions.credit`) says when
to grant more: by default it bounds the bytes the subscription holds
(chunks buffered plus chunks the broker may still send) to about
``buffer_bytes``; with a flow strategy (:py:mod:`rbfly.streams.subscriptions.flow`) it
counts chunks. The subscription reports its events to the policy and
sends the Credit commands it asks for.

Chunks are decoded when the application takes them, in the application's
task, not in the connection's callback.

Waiting: a task with nothing to take waits without taking a chunk,
polling the connection first while chunks come in quick succession
(:py:mod:`rbfly.streams.subscriptions.waiting`, where the choice is
measured).

A single active consumer's answers to the broker's consumer updates are
a part of its own, ``ConsumerUpdates`` (``subscriptions/single_active.py``).

Recovery: a subscription outlives its connection. When the connection is
lost, chunks already received can still be read; the client subscribes
again on the new connection from the offset after the last chunk received,
and records before the application's next offset are dropped, so nothing
is lost or repeated.

Retention: the offsets between the chunks taken are watched for those
retention removed before the subscription read them
(:py:mod:`rbfly.streams.subscriptions.gaps`), as the chunks are taken,
in the application's task; the check runs in a task of its own.
"""

from __future__ import annotations

import asyncio
import math
import typing as tp
from collections import deque
from collections.abc import Awaitable, Callable
from time import monotonic

from ...error import AMQPDecodeError, ChunkCrcError, ChunkError
from ..aio.records import detach
from ..lifecycle import Lifecycle, ResourceState
from ..metrics import Counters
from ..offset import Offset
from ..protocol._chunk import ChunkInfo, decode_chunk, read_header
from ..protocol.commands import Credit, OffsetSpec
from ..protocol.constants import OffsetSpecType
from .chunk import Chunk
from .credit import CreditPolicy, credit_policy
from .flow import ManualCredit
from .gaps import GapWatch
from .options import DEFAULT_READ, ReadOptions
from .single_active import Activation, ConsumerUpdates
from .state import SubscriptionState
from .undecodable import decode_each, skipped
from .waiting import spin_wait, wait_any

if tp.TYPE_CHECKING:
    from ..aio.connection import StreamsProtocol
    from ..aio.records import Owner
    from .handoff import HandOff

QUIET = 1.0
"""
Seconds without a chunk, with credit at the broker, after which what a
stream committed past the chunks a subscription received is taken for
records without messages (see :py:attr:`Subscription.lag`).
"""

Resume: tp.TypeAlias = Callable[[str, Offset], 'Offset | Awaitable[Offset | None] | None']
"""The application's callback choosing where a subscription resumes."""

class Subscription:
    """
    Receiving state of one subscription.

    :param stream: Stream name.
    :param offset_spec: Where the subscription started.
    :param start_offset: Records before this offset are dropped.
    :param properties: Subscription properties (name, filters).
    :param read: How it reads (see :py:class:`~rbfly.streams.subscriptions.options.ReadOptions`).
    :param counters: The client's metrics counters.
    :param activation: A single active consumer's: finds the offset
        specification to answer the broker with when it becomes active (or
        inactive).
    :param resume: The application's callback choosing where to subscribe
        again after a reconnection (see
        :py:meth:`rbfly.streams.StreamsClient.subscribe_chunks`).
    :param resume_offset: The offset the subscription started at, as the
        application gave it (what ``resume`` is told before a chunk came;
        required: ``offset_spec`` alone does not say it, e.g. for
        ``Offset.reference``).
    :param gaps: Watches the gaps between the chunks taken for offsets
        retention removed (RabbitMQ 3.11+; see
        :py:mod:`rbfly.streams.subscriptions.gaps`), if any.
    """
    kind: tp.ClassVar[tp.Literal['subscriptions']] = 'subscriptions'

    def __init__(
            self,
            stream: str,
            offset_spec: OffsetSpec,
            start_offset: int,
            properties: dict[str, str],
            read: ReadOptions = DEFAULT_READ,
            counters: Counters | None = None,
            *,
            activation: Activation | None = None,
            resume: Resume | None = None,
            resume_offset: Offset,
            gaps: GapWatch | None = None,
    ) -> None:
        self.stream = stream
        self.offset_spec = offset_spec
        self.next_offset = start_offset
        self.read = read
        self.amqp = read.amqp
        self.on_decode_error = read.on_decode_error
        self.properties = properties
        # the connection it is subscribed on, its id there, and the
        # connection's owner that subscribes again after a loss (None while
        # none does): written by the client's records
        # (rbfly.streams.aio.records; a lost connection clears protocol)
        self.protocol: StreamsProtocol | None = None
        self.ident = -1
        self.owner: Owner | None = None
        self.lifecycle = Lifecycle('subscription', stream)
        self.closed = False
        self.committed_chunk_id: int | None = None
        # offset after the last user chunk received (None: none yet)
        self.received_offset: int | None = None
        self._chunks: deque[tuple[bytes | bytearray | memoryview, int | None]] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._error: Exception | None = None
        self.buffer_bytes = read.buffer_bytes
        self._buffered = 0  # bytes of chunks in the buffer
        self.spin = read.spin
        self._counters = Counters() if counters is None else counters
        # the counters of the stream's consumer of this name (metrics)
        self.stats = self._counters.consumer(stream, properties.get('name'))
        self.crc_check = read.crc_check
        self.skip_bad_crc = read.skip_bad_crc
        self.max_uncompressed = read.max_uncompressed
        self._arrived = 0.0  # when the last chunk arrived (monotonic clock)
        self._gap = math.inf  # moving average of the time between chunks
        # single active consumer: whether the broker sends to this one
        # (not before the broker activates it), and what finds the offset
        # to resume from when it becomes active
        self.active = activation is None
        self.activation = activation
        # the iteration's part in hand-offs (set by the iteration, before
        # the subscription is placed), and the broker's updates, one at a
        # time
        self.group: HandOff | None = None
        self.updates = ConsumerUpdates(self)
        # the application's say on where to subscribe again, and the offset
        # it started at (or resumes from, once the callback chose one)
        self.resume = resume
        self.resume_offset = resume_offset
        # the gaps between the chunks taken, and the error a report of
        # them ends the read with (raised at the next take)
        self.gaps = gaps
        self._stop: Exception | None = None
        if gaps is not None:
            gaps.stop = self.stop_with
        # called when a chunk arrives or the subscription ends, while a
        # consumer of several subscriptions waits on all of them
        self.notify: Callable[[], None] | None = None
        # stop_at_end: the first offset of the last chunk to read, the
        # offset after the last message to read, and whether that chunk
        # was taken (or there is nothing to read); see
        # Ends.find_end (rbfly.streams.parts.ends)
        self.end_chunk: int | None = None
        self.end_offset = 0
        self.finished = False
        # the application paused the stream: no credit granted; it is
        # being replaced by a subscription elsewhere in its stream (a seek)
        self.paused = False
        self.seeking = False
        # the flow strategy, and the policy that says when to grant
        # credits: the one owner of the credit counts
        flow = self.flow = read.flow
        self._policy: CreditPolicy = credit_policy(flow, read.credit, read.buffer_bytes)
        if isinstance(flow, ManualCredit):
            flow.bind(self)

    @property
    def credit(self) -> int:
        """Credits the Subscribe command grants (the flow strategy's, with one)."""
        return self._policy.credit

    @property
    def inflight(self) -> int:
        """Credits the broker holds: chunks it may send without more."""
        return self._policy.inflight

    @property
    def arrived(self) -> float:
        """When the last chunk arrived (monotonic clock; 0: none yet)."""
        return self._arrived

    def stop_at(self, end_chunk: int | None, end_offset: int, finished: bool) -> None:
        """
        Stop at the end of the stream, as found when the subscription
        started: at the chunk whose first offset is ``end_chunk``, before
        ``end_offset`` (``finished``: nothing to read at all).
        """
        self.end_chunk = end_chunk
        self.end_offset = end_offset
        self.finished = finished

    def close(self) -> None:
        """The application ended the subscription (it is not placed again)."""
        self.closed = True
        if self.gaps is not None:
            self.gaps.close()

    def bound(self, chunk: Chunk) -> None:
        """
        A chunk taken by a subscription that stops at the end: the last
        one to read, or a later one, finishes it; messages at or after the
        end are dropped.
        """
        end_chunk = self.end_chunk
        if end_chunk is None or chunk.first_offset < end_chunk:
            return
        self.finished = True
        end = self.end_offset
        if chunk and chunk[-1].stream_offset >= end:
            chunk[:] = [m for m in chunk if m.stream_offset < end]

    @property
    def buffered_chunks(self) -> int:
        """Chunks received and not taken by the application yet."""
        return len(self._chunks)

    @property
    def buffered_bytes(self) -> int:
        """Bytes of the chunks received and not taken yet."""
        return self._buffered

    @property
    def lag(self) -> int:
        """
        Messages the stream committed and the application has not taken
        yet, at least: from the subscription's next offset to the first of
        the last committed chunk (0 when not known).

        The chunks committed after those received may hold no message
        (stored offsets, a publisher's deduplication record: the broker
        sends subscriptions only chunks of messages), and a consumer that
        processed everything would never read 0 (2 to 12 a partition was
        seen). So: with nothing buffered, credit with the broker and no
        chunk for ``QUIET`` seconds, the broker had nothing more
        to send, and what is past the chunks received does not count.
        """
        committed = self.committed_chunk_id
        if committed is None:
            return 0
        received = self.received_offset
        if received is not None and committed >= received and not self._chunks \
                and self._policy.inflight > 0 and monotonic() - self._arrived >= QUIET:
            return max(0, received - self.next_offset)
        return max(0, committed + 1 - self.next_offset)

    def describe(self) -> SubscriptionState:
        """
        The subscription as it is now (see
        :py:mod:`rbfly.streams.subscriptions.state`): what tells a
        consumer the broker does not activate from one without credit, or
        one at the end of its stream.
        """
        protocol = self.protocol
        return SubscriptionState(
            self.stream, self.properties.get('name'), self.ident, self.lifecycle.state,
            protocol is not None and protocol.is_open, self.activation is not None,
            self.active, self.next_offset, self.received_offset, len(self._chunks),
            self._buffered, self._policy.inflight, self.updates.under_way,
        )

    def resume_spec(self) -> OffsetSpec:
        """
        Offset specification to subscribe with again after a reconnection.
        """
        if self.received_offset is None:
            return self.offset_spec
        return OffsetSpec.offset(max(self.received_offset, self.next_offset))

    def restart(self, spec: OffsetSpec, start: int, offset: Offset) -> None:
        """
        Continue elsewhere in the stream (``offset``, as ``spec`` from
        ``start``), as the application asked when subscribing again: the
        chunks received and not taken yet are dropped.
        """
        self.offset_spec = spec
        self.resume_offset = offset
        self.next_offset = start
        self.received_offset = None
        self._chunks.clear()
        self._buffered = 0
        if self.gaps is not None:
            self.gaps.restart(start if spec.type == OffsetSpecType.OFFSET else -1)

    def attached(self) -> None:
        """
        Subscribed on a connection (see
        :py:func:`rbfly.streams.aio.records.attach`).
        """
        self._policy.attached()  # Subscribe grants the initial credit
        self._wake()

    def declared(self) -> None:
        """
        The broker accepted the subscription (answered its Subscribe): it
        is open (a single active consumer is a member of its group now).
        """
        self.lifecycle.opened()

    def on_chunk(
            self, chunk: bytes | bytearray | memoryview, committed_chunk_id: int | None,
    ) -> None:
        chunks = self._chunks
        if not self.active:  # sent before the broker made us inactive
            if grant := self._policy.dropped(len(chunks)):
                self._grant(grant)
            return
        chunks.append((chunk, committed_chunk_id))
        size = len(chunk)
        self._buffered += size
        now = monotonic()
        if self._arrived:
            gap = now - self._arrived
            self._gap = gap if self._gap == math.inf else self._gap + (gap - self._gap) / 8
        self._arrived = now
        if grant := self._policy.arrived(size, len(chunks)):
            self._grant(grant)
        if committed_chunk_id is not None:
            self.committed_chunk_id = committed_chunk_id
        try:
            info = read_header(chunk)
        except ChunkError:
            pass  # malformed: taking the chunk raises the error
        else:
            if info.chunk_type == 0:  # user data, as poll moves next_offset
                self.received_offset = info.next_offset
        self._wake()

    def on_connection_lost(self, error: Exception) -> None:
        self.protocol = None
        self.moved(error)

    def moved(self, error: Exception) -> None:
        """
        The subscription is to be declared again: its connection was lost,
        or its stream moved (the broker dropped it).

        A single active consumer hands out nothing more until the broker
        activates it again: another member of its group may be active by
        the time it is subscribed again (and one that thought itself
        active, not told otherwise, would wait for chunks that never come).
        """
        if self.activation is not None and self.active:
            self.deactivate()
            if self.group is not None:
                self.group.lost(self.stream)
        self.lifecycle.lost(error)
        self._wake()

    def fail(self, error: Exception) -> None:
        """
        End the subscription with an error (e.g. its stream was deleted).
        """
        self._error = error
        detach(self)
        self.lifecycle.move(ResourceState.CLOSED, str(error) or type(error).__name__, error)
        self._wake()
        if self.gaps is not None:
            self.gaps.close()

    def stop_with(self, error: Exception) -> None:
        """
        End the read with an error at its next take, before the chunks
        buffered (a report of its gaps raised it: ``on_gap='raise'``, or
        its function raised). Read from no more: the read ends, and
        unsubscribes it.
        """
        self._stop = error
        self._wake()

    async def settle(self) -> None:
        """
        The read leaves this subscription (its last chunk taken, or a
        seek replaces it): the gap check it owes, if any, answers first
        (see :py:meth:`GapWatch.settle
        <rbfly.streams.subscriptions.gaps.GapWatch.settle>`).

        :raises rbfly.streams.error.OffsetOutOfRange: When a report of
            its gaps said so (as :py:meth:`poll`).
        """
        if self.gaps is not None:
            await self.gaps.settle()
        if self._stop is not None:
            raise self._stop

    def interrupt(self) -> None:
        """Wake a task waiting for a chunk (the reading ended): it looks again."""
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        if self.notify is not None:
            self.notify()

    def poll(self) -> Chunk | None:
        """
        Take the next buffered chunk, if any, and return its messages
        (those at or after the subscription's next offset; possibly none).

        :raises Exception: The error that ended the subscription, once its
            buffered chunks are taken.
        :raises rbfly.streams.error.OffsetOutOfRange: At once, when a
            report of its gaps said so (``on_gap='raise'``; or what its
            function raised).
        """
        if self._stop is not None:
            raise self._stop
        chunks = self._chunks
        policy = self._policy
        if not chunks:
            grant = policy.idle(0)
            if self._error is not None:
                raise self._error
            if grant:
                self._grant(grant)
            return None
        data, committed = chunks.popleft()
        self._buffered -= len(data)
        if grant := policy.taken(len(chunks)):
            self._grant(grant)
        try:
            info, messages = decode_chunk(
                data, self.next_offset, self.amqp, self.crc_check, self.stream,
                self.max_uncompressed,
            )
        except ChunkCrcError as ex:
            if not self.skip_bad_crc:
                raise
            # none of its messages; the subscription goes on after it
            info = skipped(data, ex, self.stream, self._counters)
            self._advance(info)
            return Chunk((), self.stream, info.first_offset)
        except AMQPDecodeError:
            # a message that is not AMQP (the fast path has no try per message)
            info, messages = decode_each(
                data, self.next_offset, self.amqp, self.crc_check, self.stream,
                self.max_uncompressed, self.on_decode_error, self._counters,
            )
        counters = self._counters
        counters.chunks += 1
        counters.chunk_bytes += len(data)
        counters.consumed += len(messages)
        stats = self.stats
        stats.consumed += len(messages)
        if self._arrived >= stats.sample_at:  # an end-to-end latency sample is due
            stats.sample(info.timestamp, self._arrived)
        self._advance(info)
        chunk = Chunk(messages, self.stream, info.first_offset, info.timestamp, committed)
        if (failures := info.failures) is not None:
            counters.undecodable += len(failures)
            if self.on_decode_error == 'policy':  # (concurrent handlers: the error policy's)
                chunk.undecodable = failures
        release_at = policy.hold(len(messages))
        if release_at is not None:  # the chunk holds its credit until processed
            chunk.release = self.release
            chunk.release_at = release_at
        if grant := policy.handed(len(chunks)):
            self._grant(grant)
        return chunk

    def _advance(self, info: ChunkInfo) -> None:
        """
        A chunk was taken: the next offset moves past it (a chunk of
        messages), and its gap after the chunk before, if any, is noted.
        """
        if info.chunk_type == 0 and info.next_offset > self.next_offset:
            self.next_offset = info.next_offset
        if (gaps := self.gaps) is not None:
            gaps.taken(info.first_offset, info.next_offset)

    def release(self) -> None:
        """A chunk taken under a flow strategy is processed: grant its credit."""
        if grant := self._policy.released(len(self._chunks)):
            self._grant(grant)

    def _grant(self, grant: int) -> None:
        """
        Send the credits the policy asks for, when subscribed on an open
        connection (else the policy asks again at a later event).
        """
        protocol = self.protocol
        # (also an inactive single active consumer's: the broker answers
        # "precondition failed", and keeps the credit for its activation;
        # a paused one's policy asks again when it is taken from)
        if protocol is not None and protocol.is_open and not self.paused:
            protocol.send(Credit(self.ident, grant))
            self._policy.granted(grant)

    async def next_chunk(self, timeout: float | None = None) -> Chunk:
        """
        Wait for the next chunk and return its messages (see :py:meth:`poll`).

        :param timeout: Seconds to wait for a chunk (``None``: forever).
        :raises TimeoutError: When no chunk arrives in time.
        """
        while (chunk := self.poll()) is None:
            await self.wait(timeout)
        return chunk

    async def wait(self, timeout: float | None = None) -> None:
        """
        Wait until a chunk may be there to take (or the subscription
        changed: attached, moved, ended); polling first when chunks come
        in quick succession. Nothing is taken: a wait cancelled loses
        nothing.

        :raises TimeoutError: After ``timeout`` seconds (``None``: never).
        """
        if self._chunks or self._error is not None or self._stop is not None:
            return
        if self._gap < self.spin and await spin_wait((self,)):
            return
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            if timeout is None:
                await self._waiter
            else:
                async with asyncio.timeout(timeout):
                    await self._waiter
        finally:
            self._waiter = None

    @property
    def error(self) -> Exception | None:
        """The error that ended the subscription, if any (raised once its chunks are taken)."""
        return self._error

    #
    # single active consumer
    #

    def on_consumer_update(
            self, protocol: StreamsProtocol, correlation_id: int, active: bool,
    ) -> None:
        """
        The broker made this single active consumer active or inactive;
        its consumer updates find the offset to resume from and answer.
        """
        self.updates.on_update(protocol, correlation_id, active)

    def activated(self, start: int, at_offset: bool) -> None:
        """
        The broker made this single active consumer active: it reads from
        ``start``. Made active at an offset (``at_offset``: after the
        one stored, or the one its ``consumer_update`` chose), its first
        chunk is watched for a gap after it, as after a resume: retention
        may have removed offsets past the one stored (see
        :py:mod:`rbfly.streams.subscriptions.gaps`); else its start is
        the broker's, and no gap is before its first chunk.
        """
        self.active = True
        self.next_offset = start
        self.received_offset = None
        if self.gaps is not None:
            self.gaps.restart(start if at_offset else -1)
            self.gaps.active_before = True  # (its next activation checked from its read)

    def update_failed(self, error: Exception) -> None:
        """
        A consumer update failed: the iteration raises the error and ends
        the subscription, unsubscribing it (the broker would keep it in
        its group, holding the group's stream).
        """
        self._error = error
        self._wake()

    def deactivate(self) -> None:
        """Hand out no more chunks: those buffered are another consumer's."""
        self.active = False
        self._chunks.clear()
        self._buffered = 0

__all__ = [
    'Activation', 'Chunk', 'Resume', 'Subscription', 'spin_wait', 'wait_any',
]
