"""
Windows of messages for bulk sinks: lists of at most ``max_messages``
messages, or whatever arrived within ``max_wait`` seconds (Kafka's
``getmany(max_records, timeout_ms)``); a view over the reader's progress
(:py:mod:`rbfly.streams.subscriptions.progress`).

A window is cut from the chunks the progress took, as they come: small
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

All of that is the progress's; a window iterator only says when a
window is handed out and when the application moved on.

A window whose processing raised is not processed: leaving ``async
with client.subscribe_windows(...)`` with an exception does not count
the window handed out last (it is read again after a restart); a
``break`` out of the loop counts it, as for messages.

Waiting: the window's deadline is a bound of the progress's take, which
waits without taking a chunk; chunks taken stay queued in the progress
until a window is cut from them. A ``getmany`` cancelled (e.g. by
``asyncio.timeout`` around it) leaves the subscription as it was: the
next call goes on with the chunks taken so far.
"""

from __future__ import annotations

import asyncio
import logging
from types import TracebackType

from ...amqp import MessageCtx
from ..offset import Offset
from ..serializers import Codec
from .progress import Progress

logger = logging.getLogger('rbfly.streams.subscriber')

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

    :param progress: The reader's progress.
    :param max_messages: Messages of a window at most.
    :param max_wait: Seconds a window waits to fill (``None``: until full).
    :param codec: Decodes each message's body (a serializer's), or ``None``.
    :param stream: The stream (or super stream), named in the codec's
        errors when a message does not name its own.
    """
    def __init__(
            self,
            progress: Progress,
            max_messages: int,
            max_wait: float | None,
            *,
            codec: Codec | None = None,
            stream: str | None = None,
    ) -> None:
        self._closed = True  # (until checked: nothing to end when the bounds are bad)
        check_window(max_messages, max_wait)
        self._progress = progress
        self._decode = None if codec is None else codec.decode
        self._stream = stream
        self.max_messages = max_messages
        self.max_wait = max_wait
        # the error that ended the subscription, raised once the messages
        # taken before it are handed out
        self._error: BaseException | None = None
        self._ended = False
        self._closed = False

    @property
    def finished(self) -> bool:
        """Whether the subscription ended (e.g. ``stop_at_end``) and nothing is left."""
        return self._ended and not self._progress.queued

    def __aiter__(self) -> Windows:
        return self

    async def __anext__(self) -> list[MessageCtx]:
        while True:
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
        otherwise) ends nothing: the chunks it took go to the next call.

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
        progress = self._progress
        progress.moved()
        if self._closed:
            raise StopAsyncIteration
        if self._error is not None and not progress.queued:
            error, self._error = self._error, None
            await self._close()
            raise error
        if self.finished:
            await self._close()
            raise StopAsyncIteration
        deadline = None if max_wait is None \
            else asyncio.get_running_loop().time() + max_wait
        while progress.queued < max_messages and not self._ended and self._error is None:
            try:
                chunk = await progress.take(deadline)
            except StopAsyncIteration:
                self._ended = True
                break
            except asyncio.CancelledError:
                raise  # (safe to cancel: what was taken stays queued)
            except Exception as ex:  # noqa: BLE001 - raised by the next call
                self._error = ex
                break
            if chunk is None:  # the deadline passed
                break
            progress.queue(chunk)
        window = progress.window(max_messages)
        if not window:
            if self._error is not None:
                error, self._error = self._error, None
                await self._close()
                raise error
            if self._ended:
                await self._close()
                raise StopAsyncIteration
        decode = self._decode
        if decode is not None:
            # (in place: the messages are the window's alone; an error
            # raises with the window handed out, see __aexit__)
            stream = self._stream
            for msg in window:
                msg.body = decode(msg, stream)
        return window

    async def commit(self) -> None:
        """
        Commit the offsets of the window being processed (the last one
        handed out) and of those before: store them, and return once the
        broker has them (automatic offset tracking only).

        :raises rbfly.streams.error.OffsetCommitTimeout: When the broker
            does not report it in time.
        """
        await self._progress.commit()

    async def _close(self) -> None:
        self._closed = True
        await self._progress.close()

    def pause(self, *streams: str) -> None:
        """
        Hand out no message of ``streams`` (the stream, or partitions of a
        super stream) until ``resume()``; the others go on. Nothing
        is lost or read twice: what was received of them is held back,
        and the broker gets no credit for them.
        """
        self._progress.pause(*streams)

    def resume(self, *streams: str) -> None:
        """Hand out the messages of paused ``streams`` again."""
        self._progress.resume(*streams)

    def paused(self) -> frozenset[str]:
        """The streams paused."""
        return frozenset(self._progress.paused.streams)

    async def seek(self, stream: str, offset: Offset | int) -> None:
        """
        Read ``stream`` from ``offset`` on (an ``Offset``, or an offset):
        the window being processed does not count as processed for it; with
        automatic offset tracking, the offset stored becomes the one
        before ``offset`` (see ``Progress.seek``).
        """
        await self._progress.seek(stream, offset)

    async def aclose(self) -> None:
        """End the subscription: the window handed out last is processed."""
        await self._close()

    def __del__(self) -> None:
        # dropped without aclose() (a break out of the loop): the progress
        # is closed as an async generator's finalizer would close it
        if not self._closed:
            self._closed = True
            try:
                self._progress.abandon()
            except Exception:
                logger.exception('ending a subscription dropped by the application failed')

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
            self._progress.drop()
        await self.aclose()

__all__ = ['Windows', 'check_window']
