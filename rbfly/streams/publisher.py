"""
Publishers: send messages to a stream and get the broker's confirmation.

- :py:class:`Publisher`: ``await send(msg)`` returns when the broker
  confirmed the message.
- :py:class:`PublisherBatchFast`: ``batch(msg)`` collects messages,
  ``await flush()`` sends them and waits for all confirmations.
- :py:class:`PublisherBatchLimit`: like the fast batch publisher, but
  ``await batch(msg, max_len=n)`` flushes by itself when ``n`` messages
  are waiting.
- :py:class:`PublisherPipelined`: ``await send(msg)`` returns at once with
  the message's publishing id; at most ``window`` messages wait for
  confirmation (``send`` waits when the window is full); confirmations are
  awaitable (:py:meth:`PublisherPipelined.confirmed`,
  :py:meth:`PublisherPipelined.flush`) or delivered to listeners.
- :py:class:`PublisherBin` and :py:class:`PublisherBinBatch`: raw binary
  messages (no AMQP encoding).

Each message gets a publishing id one higher than the previous one. A
publisher keeps every message until the broker confirms it. When the
connection is lost, the client reconnects, declares the publisher again
under the same name, asks the broker for the last publishing id it stored
for the name, and sends again, with their original ids, the messages after
it: the stream holds each message exactly once.
"""

from __future__ import annotations

import asyncio
import logging
import math
import typing as tp
from collections import deque
from time import monotonic

from ..amqp import MessageCtx
from ..error import RbFlyError
from ..types import AMQPAppProperties, AMQPBody
from ._publish import PublishEncoder, SubEntryBatch
from .error import ConfirmTimeout, ConnectionLost, MessageRejected
from .protocol.constants import ResponseCode
from .types import BloomFilterExtract

if tp.TYPE_CHECKING:
    from ._client_base import ClientBase
    from .aio.manager import ConnectionManager
    from .aio.protocol import StreamsProtocol

logger = logging.getLogger(__name__)

PUBLISHER_DOES_NOT_EXIST = ResponseCode.PUBLISHER_DOES_NOT_EXIST

ConfirmListener: tp.TypeAlias = tp.Callable[[tp.Sequence[int]], None]
"""Called with the publishing ids of each group of confirmed messages."""

ErrorListener: tp.TypeAlias = tp.Callable[[int, Exception], None]
"""Called with the publishing id and the error of a rejected message."""

class _Confirmation:
    """
    Confirmation of a group of messages: done when all were confirmed.
    """
    __slots__ = ('future', 'remaining')

    def __init__(self, future: asyncio.Future[None], remaining: int) -> None:
        self.future = future
        self.remaining = remaining

    def confirm(self) -> None:
        self.remaining -= 1
        if self.remaining == 0 and not self.future.done():
            self.future.set_result(None)

    def fail(self, error: Exception) -> None:
        if not self.future.done():
            self.future.set_exception(error)

class PublisherTrait:
    """
    State shared by all publisher classes.

    :ivar stream: Stream the publisher sends to.
    :ivar name: Publisher reference name (used for deduplication).
    :ivar message_id: Publishing id of the last message sent.
    :ivar confirm_timeout: Seconds after which a message handed to the
        publisher and not confirmed yet fails with
        :py:class:`~rbfly.streams.ConfirmTimeout` and is not sent again
        (``None``: it waits, and is sent again after reconnections, until
        confirmed).
    """
    stream: str
    name: str
    message_id: int
    confirm_timeout: float | None = None
    _amqp: tp.ClassVar[bool] = True

    def __init__(
            self,
            client: ClientBase,
            stream: str,
            publisher_id: int,
            name: str,
            message_id: int,
            filter_extract: BloomFilterExtract | None = None,
    ) -> None:
        self._client = client
        self.stream = stream
        self._id = publisher_id
        self.name = name
        self.message_id = message_id
        self._filter_extract = filter_extract
        self._protocol: StreamsProtocol | None = None
        # messages sent and not confirmed yet, kept to send them again
        # after a reconnection (insertion order is publishing id order)
        self._unconfirmed: dict[int, tp.Any] = {}
        self._waiting: dict[int, _Confirmation] = {}
        self._ready = asyncio.Event()
        self._error: Exception | None = None
        self._closed = False
        # the connection's owner that declares it again after a loss (None
        # while it is being placed on a node)
        self._owner: ConnectionManager | None = None
        # with confirm_timeout: when messages handed over fail if not
        # confirmed, in order, and the timer of the first
        self._deadlines: deque[tuple[float, tp.Iterable[int]]] = deque()
        self._timer: asyncio.TimerHandle | None = None
        # when the last awaited confirmation came (see _confirmation)
        self._confirmed_at = -math.inf

    def _next_message_id(self) -> int:
        self.message_id += 1
        return self.message_id

    #
    # connection callbacks (PublisherHandler)
    #

    def on_confirm(self, publishing_ids: tp.Sequence[int]) -> None:
        self._client._counters.confirmed += len(publishing_ids)
        unconfirmed = self._unconfirmed
        waiting = self._waiting
        for pid in publishing_ids:
            unconfirmed.pop(pid, None)
            c = waiting.pop(pid, None)
            if c is not None:
                c.confirm()
        if self._deadlines:
            self._prune()

    def on_error(self, errors: tp.Sequence[tuple[int, int]]) -> None:
        lost = False
        for pid, code in errors:
            if code == PUBLISHER_DOES_NOT_EXIST and pid in self._unconfirmed:
                # sent while the broker had dropped the publisher (its
                # stream's leader moved): not stored; kept, and sent again
                # in order once the publisher is declared again
                lost = True
                continue
            self._reject(pid, MessageRejected(pid, code, self.stream))
        if lost:
            logger.info('publisher %r of stream %r is unknown to the broker; declaring it again',
                        self.name, self.stream)
            self._client._publisher_unknown(self)

    def _reject(self, publishing_id: int, error: Exception) -> None:
        """A message failed for good: not kept, its waiters get the error."""
        self._unconfirmed.pop(publishing_id, None)
        self._client._counters.errored += 1
        c = self._waiting.pop(publishing_id, None)
        if c is not None:
            c.fail(error)
        self._rejected(publishing_id, error)

    def _rejected(self, publishing_id: int, error: Exception) -> None:
        pass

    #
    # confirmation timeout
    #

    def _deadline(self, ids: tp.Iterable[int]) -> None:
        """
        Messages (their ids) were handed to the publisher just now: with a
        ``confirm_timeout``, they fail when not confirmed by then.
        """
        timeout = self.confirm_timeout
        if timeout is None:
            return
        loop = asyncio.get_running_loop()
        self._deadlines.append((loop.time() + timeout, ids))
        if self._timer is None:
            self._timer = loop.call_at(self._deadlines[0][0], self._expire)

    def _expire(self) -> None:
        """Fail the messages whose confirmation is overdue."""
        self._timer = None
        deadlines = self._deadlines
        loop = asyncio.get_running_loop()
        now = loop.time()
        timeout = tp.cast(float, self.confirm_timeout)
        while deadlines and deadlines[0][0] <= now:
            _, ids = deadlines.popleft()
            for pid in ids:
                if pid in self._unconfirmed:
                    self._reject(pid, ConfirmTimeout(pid, self.stream, timeout))
        self._prune()
        if deadlines and self._error is None:
            self._timer = loop.call_at(deadlines[0][0], self._expire)

    def _prune(self) -> None:
        """Forget the deadlines of the oldest messages, once all confirmed."""
        deadlines = self._deadlines
        unconfirmed = self._unconfirmed
        while deadlines and not any(pid in unconfirmed for pid in deadlines[0][1]):
            deadlines.popleft()

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._deadlines.clear()

    def on_connection_lost(self, error: Exception) -> None:
        # unconfirmed messages wait for the reconnection; see _restore
        self._protocol = None
        self._ready.clear()

    #
    # recovery (called by the client)
    #

    def _attach(self, protocol: StreamsProtocol, publisher_id: int) -> None:
        self._protocol = protocol
        self._id = publisher_id
        protocol.publishers[publisher_id] = self
        self._ready.set()

    def _restore(self, protocol: StreamsProtocol, publisher_id: int, sequence: int) -> None:
        """
        Continue on a new connection: messages up to ``sequence`` (the last
        publishing id the broker stored for this publisher's name) are
        confirmed; later unconfirmed ones are sent again with their ids.
        """
        stored = [pid for pid in self._unconfirmed if pid <= sequence]
        self.on_confirm(stored)
        self._attach(protocol, publisher_id)
        if self._unconfirmed:
            logger.info('publisher %r of stream %r: sending %d unconfirmed messages again',
                        self.name, self.stream, len(self._unconfirmed))
            self._write_checked(protocol, list(self._unconfirmed.items()))

    def _fail(self, error: Exception) -> None:
        """
        Give up: the publisher cannot continue (e.g. its stream was
        deleted); every waiting caller gets the error.
        """
        self._error = error
        self._unconfirmed.clear()
        self._stop_timer()
        waiting = self._waiting
        self._waiting = {}
        for c in waiting.values():
            c.fail(error)
        self._ready.set()

    #
    # sending
    #

    async def _connection(self) -> StreamsProtocol:
        while True:
            if self._error is not None:
                raise self._error
            if self._closed:
                raise RbFlyError('publisher for stream {!r} is closed'.format(self.stream))
            protocol = self._protocol
            if protocol is not None and protocol.is_open:
                return protocol
            await self._client._wait_recovery(self)

    def _frames(
            self, protocol: StreamsProtocol, messages: list[tp.Any], first: int,
            ids: list[int] | None = None,
    ) -> list[bytes]:
        """
        Encode messages into Publish frames that fit the connection's frame
        size; encoding errors are raised before any state changes.
        """
        encoder: PublishEncoder = protocol.publish_encoder  # type: ignore[attr-defined]
        filter_values = None
        if self._filter_extract is not None:
            extract = self._filter_extract
            filter_values = [
                extract(m if type(m) is MessageCtx else MessageCtx(m)) for m in messages
            ]
        frames = []
        n = len(messages)
        start = 0
        while start < n:
            count, frame = encoder.encode(
                self._id, messages, start, first + start, self._amqp, filter_values, ids,
            )
            frames.append(frame)
            start += count
        return frames

    def _send_frames(self, protocol: StreamsProtocol, frames: list[bytes], count: int) -> None:
        """Send the Publish frames of ``count`` entries."""
        self._client._counters.published += count
        try:
            for frame in frames:
                protocol.send_frame(frame)
        except ConnectionLost:
            pass  # the messages are kept and sent again after reconnection

    def _write_checked(
            self, protocol: StreamsProtocol | None, items: list[tuple[int, tp.Any]],
    ) -> None:
        """
        Keep messages as unconfirmed and send them; a message that cannot
        be encoded is rejected alone (its error goes to the waiters and
        listeners), the others are sent.
        """
        if protocol is not None and protocol.is_open:
            ids = [pid for pid, _ in items]
            messages = [m for _, m in items]
            try:
                frames = self._frames(protocol, messages, ids[0], ids)
            except (RbFlyError, TypeError, ValueError):
                good = []
                for pid, m in items:
                    try:
                        self._frames(protocol, [m], pid)
                    except (RbFlyError, TypeError, ValueError) as ex:
                        self._reject(pid, ex)
                    else:
                        good.append((pid, m))
                if not good:
                    return
                ids = [pid for pid, _ in good]
                messages = [m for _, m in good]
                frames = self._frames(protocol, messages, ids[0], ids)
            for pid, m in zip(ids, messages, strict=True):
                self._unconfirmed[pid] = m
            self._send_frames(protocol, frames, len(messages))
        else:
            for pid, m in items:
                self._unconfirmed[pid] = m

    async def _publish(self, messages: list[tp.Any]) -> None:
        """
        Send messages and wait until the broker confirmed all of them.

        A message that cannot be encoded raises before anything is sent.
        """
        if not messages:
            return
        protocol = await self._connection()
        await protocol.drain()
        protocol = await self._connection()  # the connection may be lost in drain()
        n = len(messages)
        first = self.message_id + 1
        ids = self._explicit_ids(messages, first)
        frames = self._frames(protocol, messages, first, ids)
        future: asyncio.Future[None] = protocol.loop.create_future()
        confirmation = _Confirmation(future, n)
        waiting = self._waiting
        unconfirmed = self._unconfirmed
        if ids is None:
            for i, m in enumerate(messages):
                waiting[first + i] = confirmation
                unconfirmed[first + i] = m
            self.message_id = first + n - 1
        else:
            for pid, m in zip(ids, messages, strict=True):
                waiting[pid] = confirmation
                unconfirmed[pid] = m
            self.message_id = ids[-1]
        self._send_frames(protocol, frames, n)
        self._deadline(range(first, first + n) if ids is None else ids)
        try:
            await self._confirmation(future)
        except asyncio.CancelledError:
            # the messages may still be confirmed; a late confirmation must
            # not touch the cancelled future
            for pid in (range(first, first + n) if ids is None else ids):
                waiting.pop(pid, None)
            raise

    async def _confirmation(self, future: asyncio.Future[None]) -> None:
        """
        Wait for a confirmation, polling the connection for up to the
        client's ``spin`` seconds first when the application sends again
        right after its last confirmation (a publishing loop).

        A task sleeping on an idle CPU is slow to wake, and a loop awaiting
        each send waits for a wake-up on every message. Measured here (2
        vCPUs, RabbitMQ 3.10, 10-byte messages; publishing 1M messages in
        awaited batches of 100): 141k msg/s sleeping, the same as RbFly
        0.10, and 197-203k msg/s polling for up to 0.5-1 ms (p50 latency
        of a batch 695 us -> 470 us); single messages 3.7k -> 6.7k msg/s.
        The price is a busy CPU while the loop waits. A publisher that
        sends now and then never polls.
        """
        spin = self._client._spin
        if spin and monotonic() - self._confirmed_at < spin:
            deadline = monotonic() + spin
            while not future.done() and monotonic() < deadline:  # noqa: ASYNC110 - polling is the point
                await asyncio.sleep(0)
        await future
        self._confirmed_at = monotonic()

    def _explicit_ids(self, messages: list[tp.Any], first: int) -> list[int] | None:
        """
        Publishing ids of messages when some carry their own
        (``MessageCtx.stream_publish_id``, as RbFly 0.10's
        ``stream_message_ctx(publish_id=...)`` sets): those use theirs, the
        others continue from the previous one. ``None`` when all ids are
        consecutive from ``first``.

        :raises ValueError: When an id repeats, or waits for confirmation
            already.
        """
        ids = None
        pid = first - 1
        for i, m in enumerate(messages):
            if type(m) is MessageCtx and m.stream_publish_id:
                if ids is None:
                    ids = list(range(first, first + i))
                pid = m.stream_publish_id
            else:
                pid += 1
            if ids is not None:
                ids.append(pid)
        if ids is None:
            return None
        if len(set(ids)) != len(ids) or any(pid in self._unconfirmed for pid in ids):
            raise ValueError('publishing ids must not repeat or be waiting for confirmation:'
                             ' {}..{}'.format(min(ids), max(ids)))
        return ids

class Publisher(PublisherTrait):
    """
    Publisher sending one AMQP message at a time.
    """
    async def send(self, message: AMQPBody | MessageCtx | SubEntryBatch) -> None:
        """
        Send a message and wait for the broker's confirmation.

        :param message: Message body, or a message with all its sections.
        :raises MessageRejected: When the broker rejected the message.
        """
        await self._publish([message])

class PublisherBatchTrait(PublisherTrait):
    """
    Publisher collecting messages in a batch.
    """
    sub_entry_size: int = 0
    """Messages per sub-entry batch (0: none); see :py:class:`SubEntryBatch`."""
    compression: int | str = 'none'
    """Compression of the sub-entry batches."""

    def __init__(self, *args: tp.Any, **kw: tp.Any) -> None:
        super().__init__(*args, **kw)
        self._data: list[tp.Any] = []

    async def flush(self) -> None:
        """
        Send the collected messages and wait for confirmation of all of
        them. The batch is emptied even when sending fails.

        With ``sub_entry_size``, the messages go as sub-entry batches of
        that many messages (one publishing id each).
        """
        data = self._data
        self._data = []
        size = self.sub_entry_size
        if size > 1 and data:
            compression = self.compression
            data = [
                SubEntryBatch(data[i:i + size], compression) for i in range(0, len(data), size)
            ]
        await self._publish(data)

class PublisherBatchFast(PublisherBatchTrait):
    """
    Batch publisher: :py:meth:`batch` collects, :py:meth:`flush` sends.

    The application decides how many messages to collect; memory grows
    with the batch.
    """
    def batch(self, message: AMQPBody | MessageCtx) -> None:
        """
        Add a message to the batch.
        """
        self._data.append(message)

class PublisherBatchLimit(PublisherBatchTrait):
    """
    Batch publisher with a bounded batch: :py:meth:`batch` flushes when
    ``max_len`` messages are collected.
    """
    async def batch(self, message: AMQPBody | MessageCtx, *, max_len: int) -> None:
        """
        Add a message to the batch; flush first when the batch is full.
        """
        if len(self._data) >= max_len:
            await self.flush()
        self._data.append(message)

class PublisherPipelined(PublisherTrait):
    """
    Publisher that does not wait for confirmations one message at a time.

    :py:meth:`send` returns the message's publishing id at once. Messages
    sent in one iteration of the event loop (up to ``batch_size``) go out
    in one Publish frame; at most ``window`` messages wait for
    confirmation, and :py:meth:`send` waits while the window is full, so
    memory stays bounded however fast the application sends.

    Confirmations: ``await confirmed(pid)`` for one message,
    ``await flush()`` for all messages sent so far, or listeners added with
    :py:meth:`add_listener`. A message rejected by the broker fails its
    :py:meth:`confirmed` waiter, is reported to the error listeners, and
    makes the next :py:meth:`flush` raise :py:class:`MessageRejected`.
    """
    window: int = 10_000
    batch_size: int = 1_000

    def __init__(self, *args: tp.Any, **kw: tp.Any) -> None:
        super().__init__(*args, **kw)
        self._buffer: list[tp.Any] = []
        self._buffer_first = 0
        self._scheduled = False
        self._space: asyncio.Future[None] | None = None
        self._drained: asyncio.Future[None] | None = None
        self._confirm_listeners: list[ConfirmListener] = []
        self._error_listeners: list[ErrorListener] = []
        self._rejections: list[Exception] = []

    def add_listener(
            self,
            on_confirm: ConfirmListener | None = None,
            on_error: ErrorListener | None = None,
    ) -> None:
        """
        Add listeners of confirmations (called with the publishing ids
        confirmed by one broker frame) and of rejections.
        """
        if on_confirm is not None:
            self._confirm_listeners.append(on_confirm)
        if on_error is not None:
            self._error_listeners.append(on_error)

    async def send(self, message: AMQPBody | MessageCtx | SubEntryBatch) -> int:
        """
        Send a message without waiting for its confirmation.

        :return: Publishing id of the message.
        """
        if len(self._unconfirmed) + len(self._buffer) >= self.window:
            await self._wait_space()
        elif self._error is not None:
            raise self._error
        buffer = self._buffer
        if type(message) is MessageCtx and message.stream_publish_id:
            # an id of its own: later messages continue from it
            pid = message.stream_publish_id
            if pid in self._unconfirmed or (
                    self._buffer_first <= pid < self._buffer_first + len(buffer)):
                raise ValueError('publishing id {} is waiting for confirmation'.format(pid))
            if buffer and pid != self.message_id + 1:
                self._send_buffer()
                buffer = self._buffer
            self.message_id = pid
        else:
            pid = self.message_id = self.message_id + 1
        if not buffer:
            self._buffer_first = pid
        buffer.append(message)
        if len(buffer) >= self.batch_size:
            self._send_buffer()
        elif not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._send_buffer)
        return pid

    def _send_buffer(self) -> None:
        self._scheduled = False
        buffer = self._buffer
        if not buffer:
            return
        self._buffer = []
        first = self._buffer_first
        self._deadline(range(first, first + len(buffer)))
        protocol = self._protocol
        if protocol is not None and protocol.is_open:
            try:
                frames = self._frames(protocol, buffer, first)
            except (RbFlyError, TypeError, ValueError):
                pass  # find the bad messages one by one below
            else:
                ids = range(first, first + len(buffer))
                self._unconfirmed.update(zip(ids, buffer, strict=True))
                self._send_frames(protocol, frames, len(buffer))
                return
        self._write_checked(protocol, list(enumerate(buffer, first)))

    async def _wait_space(self) -> None:
        while len(self._unconfirmed) + len(self._buffer) >= self.window:
            if self._error is not None:
                raise self._error
            self._send_buffer()
            if self._space is None or self._space.done():
                self._space = asyncio.get_running_loop().create_future()
            await self._space

    def on_confirm(self, publishing_ids: tp.Sequence[int]) -> None:
        super().on_confirm(publishing_ids)
        for listener in self._confirm_listeners:
            listener(publishing_ids)
        self._wake()

    def _rejected(self, publishing_id: int, error: Exception) -> None:
        self._rejections.append(error)
        for listener in self._error_listeners:
            listener(publishing_id, error)
        self._wake()

    def _fail(self, error: Exception) -> None:
        super()._fail(error)
        self._buffer = []
        self._wake(error)

    def _wake(self, error: Exception | None = None) -> None:
        space = self._space
        if space is not None and not space.done() \
                and len(self._unconfirmed) + len(self._buffer) < self.window:
            space.set_result(None)
        drained = self._drained
        if drained is not None and not drained.done() and not self._unconfirmed:
            if error is None:
                drained.set_result(None)
            else:
                drained.set_exception(error)

    async def confirmed(self, publishing_id: int) -> None:
        """
        Wait for the confirmation of a message sent with :py:meth:`send`.

        :raises MessageRejected: When the broker rejected the message.
        """
        buffered = self._buffer_first <= publishing_id < self._buffer_first + len(self._buffer)
        if publishing_id not in self._unconfirmed and not buffered:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting[publishing_id] = _Confirmation(future, 1)
        await future

    async def flush(self) -> None:
        """
        Send buffered messages and wait until the broker confirmed every
        message sent so far.

        :raises MessageRejected: When a message sent since the last flush
            was rejected by the broker (the first such error; all are
            reported to the error listeners); an encoding error of a
            message is raised the same way.
        """
        self._send_buffer()
        while self._unconfirmed:
            if self._error is not None:
                raise self._error
            if self._drained is None or self._drained.done():
                self._drained = asyncio.get_running_loop().create_future()
            await self._drained
        if self._rejections:
            error = self._rejections[0]
            self._rejections = []
            raise error

class PublisherBin(PublisherTrait):
    """
    Publisher of raw binary messages (no AMQP 1.0 encoding).
    """
    _amqp = False

    async def send(self, message: bytes | SubEntryBatch) -> None:
        """
        Send a binary message and wait for the broker's confirmation.
        """
        await self._publish([message])

class PublisherBinBatch(PublisherBatchTrait):
    """
    Batch publisher of raw binary messages.
    """
    _amqp = False

    def batch(self, message: bytes) -> None:
        """
        Add a binary message to the batch.
        """
        self._data.append(message)

PublisherBatch = PublisherBatchFast
"""Name used by older RbFly versions."""

PublisherBatchMem = PublisherBatchLimit
"""Name used by older RbFly versions."""

def stream_message_ctx(
        body: AMQPBody,
        *,
        publish_id: int | None = None,
        app_properties: AMQPAppProperties | None = None,
) -> MessageCtx:
    """
    Create a message with application properties (RbFly 0.10 helper).
    """
    return MessageCtx(
        body, app_properties=app_properties,
        stream_publish_id=0 if publish_id is None else publish_id,
    )

__all__ = [
    'BloomFilterExtract',
    'ConfirmListener',
    'ErrorListener',
    'Publisher',
    'PublisherBatch',
    'PublisherBatchFast',
    'PublisherBatchLimit',
    'PublisherBatchMem',
    'PublisherBin',
    'PublisherBinBatch',
    'PublisherPipelined',
    'PublisherTrait',
    'stream_message_ctx',
]
