"""
The pipelined publisher: ``await send(msg)`` returns at once with the
message's publishing id, and the broker's confirmations come later.

Its hot path (``send``, the buffer, the window) is C, in
:py:mod:`rbfly.streams.publishers._pipeline`; this module holds what waits on the
event loop: sending the buffer soon, waiting for room in the window, the
futures of ``flush`` and ``confirmed``, and the listeners. The other
publishers are in :py:mod:`rbfly.streams.publishers.awaited`, which exports this
one too.
"""

from __future__ import annotations

import asyncio
import logging
import typing as tp
from collections.abc import Callable

from ...amqp import MessageCtx
from ...types import AMQPBody
from ..error import EnqueueTimeout
from ..protocol._publish import SubEntryBatch
from ._confirm import Confirmation, track
from ._pipeline import PipelineState, message_size
from .base import PublisherTrait
from .listeners import ConfirmationStatus, ConfirmListener, ErrorListener, StatusListener
from .options import PublisherOptions

# the publishers' logger, as documented (doc/logging.rst)
logger = logging.getLogger('rbfly.streams.publisher')

DEFER_MAX = 0.01
"""
Seconds at most the pipelined publisher's buffer waits for the
confirmation in flight before it is sent (see ``PublisherPipelined._send_soon``).
"""

class PublisherPipelined(PipelineState, PublisherTrait):
    """
    Publisher that does not wait for confirmations one message at a time.

    :py:meth:`send` returns the message's publishing id at once. Messages
    sent in one iteration of the event loop (up to ``batch_size``, or
    ``batch_bytes`` of bodies) go out in one Publish frame, and while a
    frame waits for its confirmation, the messages sent meanwhile wait for
    it too (or for ``DEFER_MAX``, 10 ms, at most): a lone message goes at
    once, messages sent one at a time under load go together; at most
    ``window`` messages wait for confirmation, and :py:meth:`send` waits
    while the window is full, or while the connection's write buffer is
    above its high-water mark (the socket takes bytes slower than the
    application makes them), so memory stays bounded however fast the
    application sends.

    Confirmations: ``await confirmed(pid)`` for one message,
    ``await flush()`` for all messages sent so far, or listeners added with
    :py:meth:`add_listener`. A message rejected by the broker fails its
    :py:meth:`confirmed` waiter, is reported to the error listeners, and
    makes the next :py:meth:`flush` raise :py:class:`MessageRejected`.

    Leaving the publisher's context flushes: it sends what is buffered and
    waits for the confirmations (bound the wait with the publisher's
    ``confirm_timeout``); leaving on an exception sends what is buffered
    without waiting.

    :ivar window: Messages that may wait for confirmation, 10,000 unless
        given to :py:meth:`~rbfly.streams.StreamsClient.publisher`.
    :ivar window_bytes: Bytes of message bodies that may wait for
        confirmation, 2 MiB unless given to
        :py:meth:`~rbfly.streams.StreamsClient.publisher` (counted for
        ``bytes`` and ``str`` bodies, bare or in a
        :py:class:`~rbfly.amqp.MessageCtx`; a single message bigger than
        that goes when nothing else waits).
    :ivar batch_size: Messages buffered before they are sent without
        waiting for the next iteration of the event loop (1,000).
    :ivar batch_bytes: Bytes of message bodies buffered before they are
        sent without waiting for the next iteration of the event loop
        (1 MiB, a Publish frame's worth on RabbitMQ's defaults; counted for
        ``bytes`` and ``str`` bodies, bare or in a
        :py:class:`~rbfly.amqp.MessageCtx`).
    :ivar linger: Seconds a message may wait in the buffer for more to
        fill a Publish frame (0, the default: until the next iteration of
        the event loop); a buffer of ``batch_size`` messages goes at once.
    :ivar enqueue_timeout: Seconds :py:meth:`send` may wait for room in
        the window before it raises
        :py:class:`~rbfly.streams.error.EnqueueTimeout` (``None``, the
        default: it waits as long as it takes).
    """
    _default_window: tp.ClassVar[int] = 10_000
    _default_window_bytes: tp.ClassVar[int] = 2 << 20
    _default_batch_size: tp.ClassVar[int] = 1_000
    _default_batch_bytes: tp.ClassVar[int] = 1 << 20
    _default_linger: tp.ClassVar[float] = 0.0
    enqueue_timeout: float | None = None

    def __init_subclass__(cls, **kw: object) -> None:
        # a subclass's ``window = 500`` would hide the C field from Python
        # code only: it becomes the default the C field starts with
        super().__init_subclass__(**kw)
        for name in ('window', 'window_bytes', 'batch_size', 'batch_bytes', 'linger'):
            value = cls.__dict__.get(name)
            if isinstance(value, int | float):
                delattr(cls, name)
                setattr(cls, '_default_' + name, value)

    def __init__(self, *args: tp.Any, **kw: tp.Any) -> None:
        # window, batch_size, the buffer and its first publishing id are C
        # fields of PipelineState, as is send() (see _pipeline); the
        # constructor of PublisherTrait sets them (_apply)
        super().__init__(*args, **kw)
        self._space: asyncio.Future[None] | None = None
        # the buffer waits for the confirmation in flight (see _send_soon)
        self._deferred = False
        self._drained: asyncio.Future[None] | None = None
        self._confirm_listeners: list[ConfirmListener] = []
        self._error_listeners: list[ErrorListener] = []
        self._status_listeners: list[StatusListener] = []
        self._rejections: list[Exception] = []

    def _apply(self, options: PublisherOptions) -> None:
        super()._apply(options)
        self.window = self._default_window if options.window is None else options.window
        self.window_bytes = self._default_window_bytes if options.window_bytes is None \
            else options.window_bytes
        self.batch_size = self._default_batch_size
        self.batch_bytes = self._default_batch_bytes
        self.linger = self._default_linger if options.linger is None else options.linger
        if options.enqueue_timeout is not None:
            self.enqueue_timeout = options.enqueue_timeout

    # the C functions, named here to be documented with the class
    send = PipelineState.send
    send_many = PipelineState.send_many

    async def _send_rest(self, messages: list[tp.Any], i: int) -> int:
        """
        The rest of :py:meth:`send_many` from index ``i``: a message the
        C loop did not take goes the way of :py:meth:`send` (waiting for
        room in the window, raising an error, taking its own id), and the
        loop takes the following ones again.
        """
        n = len(messages)
        while i < n:
            await self._send(messages[i])
            i = self._take(messages, i + 1)
        return self.message_id

    def add_listener(
            self,
            on_confirm: ConfirmListener | None = None,
            on_error: ErrorListener | None = None,
            on_status: StatusListener | None = None,
    ) -> None:
        """
        Add listeners of confirmations (called with the publishing ids
        confirmed by one broker frame), of rejections (a publishing id and
        its error), and of outcomes with the messages themselves
        (``on_status``: a sequence of
        :py:class:`~rbfly.streams.ConfirmationStatus`, for a message
        confirmed or failed, e.g. to log or store a failed message; it
        costs an object per message, the other listeners do not).

        Listeners run as the connection reads the broker's frames: they
        should return quickly, and an error they raise is logged (logger
        ``rbfly.streams.publisher``), not raised.
        """
        for listener in (on_confirm, on_error, on_status):
            if listener is not None and not callable(listener):
                raise TypeError('a listener must be callable, got {!r}'.format(listener))
        if on_confirm is not None:
            self._confirm_listeners.append(on_confirm)
        if on_error is not None:
            self._error_listeners.append(on_error)
        if on_status is not None:
            self._status_listeners.append(on_status)

    async def _send(self, message: AMQPBody | MessageCtx | SubEntryBatch) -> int:
        """
        Send a message: the way with a full window, a full write buffer, an
        error or an own id.
        """
        if self._write_paused or self._pending_bytes >= self.window_bytes \
                or len(self._unconfirmed) + len(self._buffer) >= self.window:
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
        size = message_size(message)
        self._pending_bytes += size
        self._buffer_bytes += size
        if len(buffer) >= self.batch_size or self._buffer_bytes >= self.batch_bytes:
            self._send_buffer()
        elif not self._scheduled:
            self._scheduled = True
            loop = asyncio.get_running_loop()
            if self.linger > 0:
                self._timer_handle = loop.call_later(self.linger, self._send_buffer)
            else:
                loop.call_soon(self._send_soon)
        return pid

    async def finish(self) -> None:
        # leaving the context waits for the confirmations (and raises a
        # rejection), as a flush() would: nothing sent is lost unnoticed
        await self.flush()

    def send_pending(self) -> None:
        self._send_buffer()

    def _send_soon(self) -> None:
        """
        Send the buffer at the end of the event loop's iteration (no
        ``linger``): at once when nothing sent earlier waits for its
        confirmation, or else when the next confirmation comes (at most
        ``DEFER_MAX`` later; a full buffer goes at once).

        An application sending a message at a time (an open loop) would
        otherwise send a frame, and make the broker write a chunk, per
        message: at 50k msg/s, 264k frames for 400k messages, and RabbitMQ
        3.10 at 95% of a core; waiting for the confirmation in flight, 13.6k
        frames and 31%, and a consumer in the same process got the messages
        2.0 ms after they were due at the median, 15 ms at the 99th
        percentile, not 56 and 326 ms. It costs a message at most one
        confirmation's round trip; nothing waits when nothing is in flight:
        a lone message goes at once. (The Nagle algorithm, confirmations
        being the acknowledgements; the Java client's dynamic batching.)
        A ``linger`` of 1 ms batches more still (tail of 3.8 ms, 0.7 ms
        of latency added to every message).
        """
        protocol = self.protocol
        if self._unconfirmed and self._buffer and self._error is None \
                and protocol is not None and protocol.is_open:
            if not self._deferred:
                self._deferred = True
                self._timer_handle = asyncio.get_running_loop().call_later(
                    DEFER_MAX, self._send_buffer,
                )
            return
        self._send_buffer()

    def _send_buffer(self) -> None:
        self._scheduled = False
        self._deferred = False
        if self._timer_handle is not None:  # a linger's: sent before it ran out
            self._timer_handle.cancel()
            self._timer_handle = None
        buffer = self._buffer
        if not buffer:
            return
        self._buffer = []
        self._buffer_bytes = 0
        first = self._buffer_first
        self._deadline(range(first, first + len(buffer)))
        protocol = self.protocol
        if protocol is not None and protocol.is_open:
            try:
                frames = self._frames(protocol, buffer, first)
            except Exception:  # noqa: BLE001 - e.g. filter_extract's own error
                pass  # find the bad messages one by one below
            else:
                track(self._unconfirmed, self._waiting, buffer, first, None, None)
                self._send_frames(protocol, frames, len(buffer))
                # the frames went to the transport's buffer: the next send
                # waits until it drains below its low-water mark
                self._write_paused = not protocol.is_writable
                return
        self._write_checked(protocol, list(enumerate(buffer, first)))
        self._write_paused = protocol is not None and not protocol.is_writable

    def _has_room(self) -> bool:
        """
        Whether a sender waiting for room in the full window may go on: when
        a whole batch fits (``batch_size``, at most half the window; in
        bytes, ``batch_bytes``, at most half of ``window_bytes``). Going
        on at the first confirmation would send frames as small as the
        broker's confirmation groups, each costing the broker about as much
        as a full one (RabbitMQ 3.10, medians of 5-7 rounds: 568k msg/s
        going on at once, 613k waiting for a batch's room).
        """
        window = self.window
        free = window - len(self._unconfirmed) - len(self._buffer)
        if free < min(self.batch_size, max(1, window // 2)):
            return False
        window_bytes = self.window_bytes
        free_bytes = window_bytes - self._pending_bytes
        return free_bytes >= min(self.batch_bytes, max(1, window_bytes // 2))

    async def _wait_space(self) -> None:
        """Wait for room in the window, for up to ``enqueue_timeout``."""
        timeout = self.enqueue_timeout
        if timeout is None:
            await self._wait_room()
            return
        cm = asyncio.timeout(timeout)
        try:
            async with cm:
                await self._wait_room()
        except TimeoutError:
            if cm.expired():  # not a TimeoutError of the publisher's error
                raise EnqueueTimeout(self.stream, timeout) from None
            raise

    async def _wait_room(self) -> None:
        while True:
            if self._error is not None:
                raise self._error
            if not self._unconfirmed and not self._buffer:
                self._pending_bytes = 0  # nothing waits (see _released)
            if self._write_paused:
                protocol = self.protocol
                if protocol is not None and not protocol.is_writable:
                    await protocol.wait_writable()
                    continue
                self._write_paused = False
            if self._has_room():
                return
            self._send_buffer()
            if self._write_paused:
                continue
            if self._space is None or self._space.done():
                self._space = asyncio.get_running_loop().create_future()
            # shared by every waiting sender: shielded, so that one sender
            # cancelled (e.g. by its enqueue_timeout) does not cancel the
            # others' wait
            await asyncio.shield(self._space)

    def on_confirm(self, publishing_ids: tp.Sequence[int]) -> None:
        statuses = None
        if self._status_listeners:
            unconfirmed = self._unconfirmed
            statuses = [
                ConfirmationStatus(pid, unconfirmed[pid], True)
                for pid in publishing_ids if pid in unconfirmed
            ]
        super().on_confirm(publishing_ids)
        if self._deferred:
            self._send_buffer()
        for listener in self._confirm_listeners:
            _call(listener, publishing_ids)
        if statuses:
            for status_listener in self._status_listeners:
                _call(status_listener, statuses)
        self._wake()

    def _released(self, size: int) -> None:
        if self._unconfirmed or self._buffer:
            self._pending_bytes = max(0, self._pending_bytes - size)
        else:
            # nothing waits: exactly 0, even if a MessageCtx's body was
            # replaced while it waited (it would count off another size)
            self._pending_bytes = 0

    def _rejected(self, publishing_id: int, error: Exception, message: object) -> None:
        self._released(message_size(message))
        self._rejections.append(error)
        for listener in self._error_listeners:
            _call(listener, publishing_id, error)
        if self._status_listeners:
            statuses = [ConfirmationStatus(publishing_id, message, False, error)]
            for status_listener in self._status_listeners:
                _call(status_listener, statuses)
        if self._deferred:  # an answer to what was in flight, as a confirmation
            self._send_buffer()
        self._wake()

    def on_connection_lost(self, error: Exception) -> None:
        super().on_connection_lost(error)
        # what is buffered joins the unconfirmed messages now, in order of
        # their ids, to be sent again after the ones before them: left in
        # the buffer (waiting for a confirmation, or a linger), it could go
        # out first on the new connection, from a confirmation the recovery
        # itself makes (see restore), and the broker would take the
        # earlier ids sent after them for duplicates
        self._send_buffer()

    def close(self) -> None:
        super().close()
        # a sender waiting for room, or a flush in another task, would never
        # be woken once the publisher is detached: they get the error
        error = tp.cast(Exception, self._error)
        space = self._space
        if space is not None and not space.done():
            space.set_result(None)  # the sender raises the error
        drained = self._drained
        if drained is not None and not drained.done():
            drained.set_exception(error)
            drained.exception()  # retrieved: its waiter may be gone (see flush)
        # so would a confirmed() waiting: confirmations of a detached
        # publisher are dropped
        waiting = self._waiting
        self._waiting = {}
        for c in waiting.values():
            c.fail(error)

    def fail(self, error: Exception) -> None:
        super().fail(error)
        self._buffer = []
        self._buffer_bytes = 0
        self._pending_bytes = 0
        self._wake(error)

    def _wake(self, error: Exception | None = None) -> None:
        space = self._space
        if space is not None and not space.done() and (error is not None or self._has_room()):
            space.set_result(None)
        drained = self._drained
        if drained is not None and not drained.done() and not self._unconfirmed:
            if error is None:
                drained.set_result(None)
            else:
                drained.set_exception(error)
                drained.exception()  # retrieved: its waiter may be gone (see flush)

    async def confirmed(self, publishing_id: int) -> None:
        """
        Wait for the confirmation of a message sent with :py:meth:`send`.

        :raises MessageRejected: When the broker rejected the message.
        """
        buffered = self._buffer_first <= publishing_id < self._buffer_first + len(self._buffer)
        if publishing_id not in self._unconfirmed and not buffered:
            return
        if self._closed:  # its confirmation would never reach a closed publisher
            raise tp.cast(Exception, self._error)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting[publishing_id] = Confirmation(future, 1)
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
            await asyncio.shield(self._drained)  # shared, as _space in _wait_room
        if self._rejections:
            error = self._rejections[0]
            self._rejections = []
            raise error

def _call(listener: Callable[..., object], *args: object) -> None:
    """
    Call an application's listener; its error is logged, not raised.

    Listeners run in the connection's callback, as frames are read: an
    error raised there would drop the connection and the rest of what it
    read (the other publishers' confirmations among it).
    """
    try:
        listener(*args)
    except Exception:  # the application's; see above
        logger.exception('publisher listener %r failed', listener)

__all__ = ['DEFER_MAX', 'PublisherPipelined']
