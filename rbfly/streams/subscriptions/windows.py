"""
Windows of messages for bulk sinks: lists of at most ``max_messages``
messages, or whatever arrived within ``max_wait`` seconds (Kafka's
``getmany(max_records, timeout_ms)``).

A window is cut from the chunks of the subscription as they come: small
chunks are merged, a big one is split across windows. Cutting is list
slicing, in C; the per-message work is the chunk's decoding, as for the
other iterators, and nothing is done per message in Python (no context
variable set, no awaitable made): a window of a thousand 10-byte messages
costs the Python of one call.

A window counts as processed when the application asks for the next one
(or ends the iteration), as the message iterator counts a message when
the next one is asked for (see :py:mod:`rbfly.streams.subscriptions.tracking`
and ``doc/consumer-groups.rst``). So, exactly as for messages:

- automatic offset tracking stores the offset of the last message of the
  windows processed (per stream, for a super stream), reported once per
  window;
- a flow strategy's credit held by a chunk (``CreditWhenProcessed``) goes
  back when the window holding its ``ratio``-th message is processed;
- a single active consumer stepping down on a stream (or losing its
  connection) drops the messages of that stream not handed out yet (the
  next member processes them), waits until the application asked for the
  next window if the window it holds has messages of that stream, and
  commits then (see :py:mod:`rbfly.streams.subscriptions.handoff`).

A window whose processing raised is not processed: leaving ``async
with client.subscribe_windows(...)`` with an exception does not count
the window handed out last (it is read again after a restart); a
``break`` out of the loop counts it, as for messages.

Waiting: the window's deadline is told to the chunk generator
(``Pace``), which hands over an empty chunk when it passes with no
chunk to take, rather than being cancelled (an async generator cancelled
ends). The chunk being waited for is fetched by a task of its own: a
``getmany`` cancelled (e.g. by ``asyncio.timeout`` around it) leaves the
subscription as it was, and the next call goes on with the same fetch
and the messages collected so far.
"""

from __future__ import annotations

import asyncio
import logging
import typing as tp
import weakref
from collections.abc import AsyncGenerator
from types import TracebackType

from ...amqp import MessageCtx
from ..error import StreamsError
from ..serializers import Codec
from .handoff import Holding
from .subscription import Chunk

if tp.TYPE_CHECKING:
    from .tracking import OffsetTracker

logger = logging.getLogger('rbfly.streams.subscriber')

class Pace:
    """
    The deadline of the window being filled (loop time, ``None``: none):
    the chunk generator yields an empty chunk when it passes; and the
    subscription's idle timeout (``timeout``), counted from the last chunk.

    Which of the two a wait ends at is decided when the wait is computed,
    not by reading the clock after it timed out: a timer may fire before
    the loop's clock reads its time (uvloop's timers count whole
    milliseconds), and a window's deadline not quite reached then was
    taken for the idle timeout (``TimeoutError`` from a subscription with
    none, about 1 run in 2 of ``test_windows_wait`` on uvloop at a load of
    10); and a getmany cancelled meanwhile clears the deadline its fetch
    still waits for.
    """
    __slots__ = ('_by_idle', '_idle', '_idle_at', 'deadline')

    def __init__(self) -> None:
        self.deadline: float | None = None
        self._idle: float | None = None
        self._idle_at: float | None = None
        self._by_idle = False

    def start(self, idle: float | None) -> None:
        """
        The subscription's idle timeout (``None``: none), counted from the
        first wait.
        """
        self._idle = idle

    def arrived(self) -> None:
        """A chunk arrived: the idle timeout counts from now."""
        if self._idle is not None:
            self._idle_at = asyncio.get_running_loop().time() + self._idle

    def wait(self) -> float | None:
        """Seconds to wait for the next chunk (``None``: forever)."""
        now = asyncio.get_running_loop().time()
        deadline = self.deadline
        if self._idle is not None and self._idle_at is None:
            self._idle_at = now + self._idle
        idle_at = self._idle_at
        # the wait ends at the idle timeout when it comes first (or alone)
        self._by_idle = idle_at is not None and (deadline is None or idle_at <= deadline)
        wait = None if idle_at is None else max(0.0, idle_at - now)
        if deadline is not None:
            left = max(0.0, deadline - now)
            wait = left if wait is None else min(wait, left)
        return wait

    def idle(self) -> bool:
        """
        Whether the last wait that timed out hit the idle timeout (raised),
        not the window's deadline (an empty chunk): the bound it was
        computed from (see :py:meth:`wait`).
        """
        return self._by_idle

class WindowHolding(Holding):
    """
    What a window iterator's application holds: the streams of the window
    handed out last, until the next one is asked for. The chunk
    generator's reports of single chunks do not apply (a window may span
    chunks, and a chunk windows); the iterator reports instead.
    """
    __slots__ = ('held',)

    def __init__(self) -> None:
        super().__init__()
        self.held: frozenset[str] = frozenset()

    def handed(self, stream: str) -> None:
        pass  # taken into the window iterator's buffer, not the application's hands

    def moved(self) -> None:
        pass

    def hold(self, streams: frozenset[str]) -> None:
        """The application is handed a window of messages of ``streams``."""
        self.held = streams

    def free(self) -> None:
        """The application asked for the next window, or the iteration ended."""
        self.held = frozenset()
        Holding.moved(self)

    def cut_off(self, stream: str) -> None:
        if self.cut is not None and (cut := self.cut()) is not None:
            cut(stream)

    async def released(self, stream: str, timeout: float) -> bool:
        while stream in self.held:
            if self._moved is None:
                self._moved = asyncio.get_running_loop().create_future()
            try:
                async with asyncio.timeout(timeout):
                    await asyncio.shield(self._moved)
            except TimeoutError:
                return False
        return True

# a part of a window: a chunk, and the indexes of its messages in it
Segment: tp.TypeAlias = tuple['Chunk', int, int]

def check_window(max_messages: object, max_wait: object) -> None:
    """The bounds of a window: a positive count, and seconds or ``None``."""
    if isinstance(max_messages, bool) or not isinstance(max_messages, int) or max_messages < 1:
        raise ValueError('max_messages must be a positive int, got {!r}'.format(max_messages))
    if max_wait is not None and (
            isinstance(max_wait, bool) or not isinstance(max_wait, int | float)
            or not 0 <= max_wait < float('inf')):
        raise ValueError('max_wait must be seconds (0 or more) or None, got {!r}'.format(
            max_wait))

class Windows:
    """
    Async iterator over windows of messages (lists of
    :py:class:`~rbfly.amqp.MessageCtx`), and :py:meth:`getmany` for a
    window of other bounds.

    :param chunks: The chunk generator (of the client's
        ``Subscribing.chunks``, given
        ``pace`` and ``holding``).
    :param tracker: Automatic offset tracking (reported by window), or
        ``None``.
    :param holding: What the application holds, for hand-offs.
    :param pace: The deadline the chunk generator is told.
    :param max_messages: Messages of a window at most.
    :param max_wait: Seconds a window waits to fill (``None``: until full).
    :param codec: Decodes each message's body (a serializer's), or ``None``.
    :param stream: The stream (or super stream), named in the codec's
        errors when a message does not name its own.
    """
    def __init__(
            self,
            chunks: AsyncGenerator[Chunk, None],
            tracker: OffsetTracker | None,
            holding: WindowHolding,
            pace: Pace,
            max_messages: int,
            max_wait: float | None,
            *,
            codec: Codec | None = None,
            stream: str | None = None,
    ) -> None:
        check_window(max_messages, max_wait)
        self._decode = None if codec is None else codec.decode
        self._stream = stream
        self._chunks = chunks
        self._tracker = tracker
        self._holding = holding
        self._pace = pace
        self.max_messages = max_messages
        self.max_wait = max_wait
        # the chunk being cut, and its first message not in a window yet
        self._chunk: Chunk | None = None
        self._pos = 0
        # the window handed out last, and the one being filled
        self._handed: list[Segment] = []
        self._filling: list[Segment] = []
        self._error: BaseException | None = None
        # the fetch of the next chunk, kept over a cancelled getmany; a
        # chunk it fetched that a hand-off cut before it was taken
        self._pending: asyncio.Future[Chunk] | None = None
        self._dropped: Chunk | None = None
        self._ended = False
        self._closed = False
        holding.cut = weakref.WeakMethod(self._cut)

    @property
    def finished(self) -> bool:
        """Whether the subscription ended (e.g. ``stop_at_end``) and nothing is left."""
        return self._ended and self._chunk is None

    def __aiter__(self) -> Windows:
        return self

    async def __anext__(self) -> list[MessageCtx]:
        while True:
            if self.finished or self._closed:
                await self._finish()
                raise StopAsyncIteration
            window = await self.getmany()
            if window:
                return window

    async def getmany(
            self, max_messages: int | None = None, max_wait: float | bool | None = False,
    ) -> list[MessageCtx]:
        """
        The next window: at most ``max_messages`` messages (the
        iterator's unless given), as soon as that many are there, or what
        arrived within ``max_wait`` seconds of the call (the iterator's
        unless given; ``None``: until full or the end of the
        subscription), possibly none. The window handed out before is
        processed now.

        ``max_wait`` bounds the wait for messages, not the call: wrap it
        in ``asyncio.timeout`` for that. A call cancelled so (or
        otherwise) ends nothing: the messages it collected and the chunk
        it waited for go to the next call.

        :raises StopAsyncIteration: The subscription ended (e.g.
            ``stop_at_end``, or ``aclose()``) and no message is left.
        :raises Exception: The error that ended the subscription (after
            the messages received before it are handed out).
        """
        if max_messages is None:
            max_messages = self.max_messages
        if max_wait is False:
            max_wait = self.max_wait
        check_window(max_messages, max_wait)
        self._processed()
        if self._error is not None and self._chunk is None:
            error, self._error = self._error, None
            self._ended = True
            await self._finish()
            raise error
        if self._closed or self.finished:
            await self._finish()
            raise StopAsyncIteration
        filling = self._filling
        pace = self._pace
        if max_wait is not None:
            pace.deadline = asyncio.get_running_loop().time() + max_wait
        try:
            count = await self._fill(filling, max_messages)
        finally:
            pace.deadline = None
        if not count and self.finished and self._error is None:
            await self._finish()
            raise StopAsyncIteration
        self._filling = []
        return self._hand_out(filling)

    async def _fill(self, filling: list[Segment], max_messages: int) -> int:
        """
        Fill a window up to ``max_messages`` messages, until the deadline
        or the end; the count of its messages. What a cancelled call
        collected is in ``filling`` already, and counts.
        """
        count = sum(end - start for _, start, end in filling)
        while count < max_messages:
            chunk = self._chunk
            if chunk is None:
                if self._ended or self._error is not None:
                    break
                chunk = await self._next()
                if chunk is None:  # the deadline passed, or the end
                    break
                self._chunk = chunk
                self._pos = 0
            start = self._pos
            end = min(len(chunk), start + max_messages - count)
            filling.append((chunk, start, end))
            count += end - start
            if end == len(chunk):
                self._chunk = None
            else:
                self._pos = end
        return count

    def _hand_out(self, filling: list[Segment]) -> list[MessageCtx]:
        """The window of the segments filled, handed out to the application."""
        self._handed = filling
        # (segments a cut emptied stay out of the window)
        window: list[MessageCtx] = []
        streams = set()
        for chunk, start, end in filling:
            if start < end:
                window.extend(chunk if start == 0 and end == len(chunk) else chunk[start:end])
                streams.add(chunk.stream)
        self._holding.hold(frozenset(streams))
        decode = self._decode
        if decode is not None:
            # (in place: the messages are the window's alone; an error
            # raises with the window handed out, see __aexit__)
            stream = self._stream
            for msg in window:
                msg.body = decode(msg, stream)
        return window

    async def _next(self) -> Chunk | None:
        """
        The next chunk of messages; ``None`` when the window's deadline
        passed first, or the subscription ended (or failed: the error is
        raised by the next call, once this window is handed out).

        The chunk generator is awaited in a task of its own, shielded: a
        cancelled call leaves it running for the next one (an async
        generator cancelled ends).
        """
        carried = self._pending is not None  # a cancelled call's fetch
        while True:
            pending = self._pending
            if pending is None:
                pending = self._pending = asyncio.ensure_future(_fetch(self._chunks))
            try:
                chunk = await asyncio.shield(pending)
            except StopAsyncIteration:
                self._pending = None
                self._ended = True
                return None
            except asyncio.CancelledError:
                if pending.cancelled():  # the fetch itself: the generator ended
                    self._pending = None
                    self._ended = self._closed = True
                raise
            except Exception as ex:  # noqa: BLE001 - raised by the next call
                self._pending = None
                self._error = ex
                return None
            self._pending = None
            if chunk is self._dropped:  # cut before it was taken: the next consumer's
                self._dropped = None
                continue
            if chunk:
                return chunk
            deadline = self._pace.deadline
            if not carried or (
                    deadline is not None and asyncio.get_running_loop().time() >= deadline):
                return None
            carried = False  # the deadline of a cancelled call passed: wait on

    def _processed(self) -> None:
        """
        The window handed out last is processed: report its messages to
        the tracker, give back the credit its chunks held, and let a
        hand-off waiting for it go on.
        """
        self._processed_by(self._tracker)

    def _processed_by(self, tracker: OffsetTracker | None) -> None:
        handed = self._handed
        if not handed:
            return
        self._handed = []
        for chunk, start, end in handed:
            if start >= end:
                continue
            if tracker is not None:
                tracker.processed(chunk.stream, chunk[end - 1].stream_offset, end - start)
            _release(chunk, start, end)
        self._holding.free()

    def _cut(self, stream: str) -> None:
        """
        Hand out no more messages of ``stream`` received so far (a
        hand-off, or a lost connection): the next consumer of it processes
        them. The window handed out stays the application's.
        """
        chunk = self._chunk
        if chunk is not None and chunk.stream == stream:
            self._chunk = None
            _release(chunk, self._pos, len(chunk), cut=True)
        filling = self._filling
        for i, (c, start, end) in enumerate(filling):
            if c.stream == stream and start < end:
                filling[i] = (c, start, start)
                _release(c, start, end, cut=True)
        # a chunk fetched and not taken yet: out of the subscription's
        # buffer (which the hand-off emptied) and not in the window either,
        # while the call waiting for the fetch has not resumed (or was
        # cancelled); taken after the hand-off, it was processed twice
        pending = self._pending
        if pending is not None and pending.done() and not pending.cancelled() \
                and pending.exception() is None:
            fetched = pending.result()
            if fetched and fetched.stream == stream:
                self._dropped = fetched
                _release(fetched, 0, len(fetched), cut=True)

    async def commit(self) -> None:
        """
        Commit the offsets of the window being processed (the last one
        handed out) and of those before: store them, and return once the
        broker has them (automatic offset tracking only).

        :raises rbfly.streams.error.OffsetCommitTimeout: When the broker
            does not report it in time.
        """
        tracker = self._tracker
        if tracker is None:
            raise TypeError('commit() needs automatic offset tracking: subscribe with a name'
                            ' and store_every, or call client.commit_offset()')
        for chunk, start, end in self._handed:
            if start < end:  # (counted again when the next window is asked for)
                tracker.processed(chunk.stream, chunk[end - 1].stream_offset, 0)
        await tracker.commit()

    async def _finish(self) -> None:
        """
        The iteration ends: the window handed out last is processed, and
        the offsets of what was processed are committed (the next consumer
        of the name starts after them). A failed commit is logged: the
        messages since the offset stored before are read again, and an
        error here would hide the one that ended the iteration.
        """
        self._processed()
        tracker = self._tracker
        if tracker is None:
            return
        self._tracker = None
        tracker.close()
        try:
            await tracker.commit()
        except StreamsError as ex:
            logger.warning('offsets under %r not committed at the end of the subscription: %s',
                           tracker.reference, ex)

    async def aclose(self) -> None:
        """End the subscription: the window handed out last is processed."""
        if self._closed and self._tracker is None:
            return
        self._closed = True
        self._chunk = None
        try:
            await self._finish()
        finally:
            pending, self._pending = self._pending, None
            if pending is not None:  # a cancelled getmany's fetch: ended with the subscription
                pending.cancel()
                await asyncio.wait((pending,))
                if not pending.cancelled():
                    pending.exception()  # (retrieved: the subscription ends anyway)
            await self._chunks.aclose()

    def _drop(self) -> None:
        """
        The window handed out last is not processed (its processing
        raised): not reported to the tracker; its credit and its streams
        are let go, as the subscription ends.
        """
        self._processed_by(None)

    def __del__(self) -> None:
        # dropped without aclose() (a break out of the loop): the tracker
        # stores the last window handed out; the chunk generator is closed
        # by the event loop's async generator hooks
        tracker = getattr(self, '_tracker', None)  # (not set: bad bounds)
        if tracker is not None:
            self._tracker = None
            try:
                self._processed_by(tracker)
                tracker.close()
            except Exception:
                logger.exception('offset tracking failed at the end of a subscription')

    async def __aenter__(self) -> Windows:
        return self

    async def __aexit__(
            self, typ: type[BaseException] | None, value: BaseException | None,
            tb: TracebackType | None,
    ) -> None:
        """
        End the subscription; an exception leaving the block leaves the
        window being processed unprocessed (not counted, nor committed:
        read again after a restart). Without one (a ``break`` too) the
        window counts as processed.
        """
        if value is not None and not isinstance(value, GeneratorExit):
            self._drop()
        await self.aclose()

async def _fetch(chunks: AsyncGenerator[Chunk, None]) -> Chunk:
    """The next chunk of a chunk generator (a coroutine, for a task)."""
    return await anext(chunks)

def _release(chunk: Chunk, start: int, end: int, cut: bool = False) -> None:
    """
    Give back the credit a chunk holds under a flow strategy, when its
    messages ``start:end`` cover the one it waits for (the message
    iterator gives it back as message ``release_at`` is asked for, i.e.
    ``release_at`` messages are processed); a cut gives it back at once.
    """
    release_at = getattr(chunk, 'release_at', -1)
    if release_at < 0:
        return
    if cut or start < release_at <= end:
        chunk.release_at = -1
        chunk.release()

__all__ = ['Pace', 'WindowHolding', 'Windows', 'check_window']
