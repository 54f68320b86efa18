"""
Traced subscriptions: views over what the subscribe methods of an
instrumented client return (the compiled iterators stay as they are, and
so does their cost when not instrumented), and a traced handler for
``client.process()``.

A message, a window or a chunk counts as processed when the application
asks for the next one (see :py:mod:`rbfly.streams.subscriptions.tracking`),
and so its ``process`` span lasts: it starts as the message is handed
out, is current in the loop's body (a message published there is its
child: ``pipe`` continues the trace), and ends when the next one is asked
for, or the iteration ends (``aclose()``, ``async with``, the end of the
subscription, an error). A ``break`` out of ``async for`` without
closing the iterator leaves the span current in the task until the
iterator is collected; close it (``contextlib.aclosing``) to end it there.

- ``async for`` over ``subscribe()``: a ``process`` span per message,
  the child of the context the message carries, linked to it;
- windows and chunks: a ``process`` span per window or chunk, linked to
  each message's context (the SDK keeps 128 links of a span unless told
  otherwise: ``OTEL_SPAN_LINK_COUNT_LIMIT``), with
  ``messaging.batch.message_count``;
- ``client.process()``: a ``process`` span around each call of the
  handler (each retry), as for ``async for``.
"""

from __future__ import annotations

import inspect
import logging
import typing as tp
from collections.abc import AsyncGenerator, Sequence
from types import TracebackType

from opentelemetry import context as otel_context
from opentelemetry import trace

from ...amqp import MessageCtx, get_message_ctx
from ..subscriptions.handlers import Handler
from ._telemetry import Processing, Telemetry

logger = logging.getLogger('rbfly.streams.otel')

class Current:
    """
    The ``process`` span of what the application holds: started when
    handed out, current in the application's context, ended when the
    next one is asked for.
    """
    __slots__ = ('_processing', '_telemetry', '_token')

    def __init__(self, telemetry: Telemetry) -> None:
        self._telemetry = telemetry
        self._processing: Processing | None = None
        self._token: object = None

    def begin(
            self, messages: Sequence[MessageCtx], stream: str, group: str | None, batch: bool,
    ) -> None:
        processing = self._processing = self._telemetry.begin(messages, stream, group, batch)
        self._token = otel_context.attach(trace.set_span_in_context(processing.span))

    def end(self, error: BaseException | None = None, detach: bool = True) -> None:
        processing = self._processing
        if processing is None:
            return
        self._processing = None
        token, self._token = self._token, None
        if detach:
            try:
                otel_context.detach(token)  # type: ignore[arg-type]
            except Exception:  # noqa: BLE001 - another task's context: nothing to undo here
                logger.debug('process span of %r ended outside its context', processing.span)
        processing.end(error)

class TracedView:
    """
    A traced view of what a subscribe method returned: its other methods
    (``commit``, ``hand_back``, ``finished``...) are reached through this one.

    :param inner: What the subscribe method returned.
    :param stream: The stream or super stream subscribed to.
    :param group: The subscription's name, if any.
    """
    def __init__(
            self, inner: tp.Any, telemetry: Telemetry, stream: str, group: str | None,
    ) -> None:
        self._inner = inner
        self._stream = stream
        self._group = group
        self._current = Current(telemetry)

    def __getattr__(self, name: str) -> tp.Any:
        return getattr(self._inner, name)

    def _begin_batch(self, batch: Sequence[MessageCtx], stream: str | None) -> None:
        """The process span of a batch: of its stream, or of the one subscribed to."""
        if stream is None:
            first = batch[0].stream
            stream = first if all(m.stream == first for m in batch) else None
        self._current.begin(batch, stream or self._stream, self._group, True)

    async def aclose(self) -> None:
        """End the subscription (and the span of what was processed)."""
        self._current.end()
        await self._inner.aclose()

    def __del__(self) -> None:
        self._current.end(detach=False)

class TracedGenerator(TracedView, AsyncGenerator[tp.Any, None]):
    """A traced view with an async generator's API."""
    def __aiter__(self) -> tp.Self:
        return self

    async def asend(self, value: None) -> tp.Any:
        if value is not None:
            raise TypeError('can only send None to a subscription')
        return await self.__anext__()

    async def athrow(
            self,
            typ: type[BaseException] | BaseException,
            val: BaseException | object = None,
            tb: TracebackType | None = None,
    ) -> tp.Any:
        self._current.end(typ if isinstance(typ, BaseException) else None)
        return await self._inner.athrow(typ, val, tb)

class TracedMessages(TracedGenerator):
    """
    The messages' bodies (or objects) of a subscription
    (:py:class:`~rbfly.streams.subscriptions._bodies.Bodies` or
    :py:class:`~rbfly.streams.subscriptions.decoded.Decoded`), each
    processed in a ``process`` span.
    """
    async def __anext__(self) -> tp.Any:
        current = self._current
        current.end()
        value = await self._inner.__anext__()
        msg = get_message_ctx()
        current.begin([msg], msg.stream or self._stream, self._group, False)
        return value

class TracedChunks(TracedGenerator):
    """
    Chunks of a subscription, each processed in a ``process`` span (see
    :py:class:`~rbfly.streams.subscriptions.chunks.Chunks`).
    """
    async def __anext__(self) -> tp.Any:
        self._current.end()
        chunk = await self._inner.__anext__()
        if chunk:
            self._begin_batch(chunk, chunk.stream)
        return chunk

class TracedWindows(TracedView):
    """
    Windows of a subscription, each processed in a ``process`` span (see
    :py:class:`~rbfly.streams.subscriptions.windows.Windows`).
    """
    def __aiter__(self) -> TracedWindows:
        return self

    async def __anext__(self) -> list[MessageCtx]:
        while True:
            window = await self.getmany()
            if window:
                return window

    async def getmany(
            self, max_messages: int | None = None, max_wait: float | bool | None = False,
    ) -> list[MessageCtx]:
        """The next window (see ``Windows.getmany``)."""
        self._current.end()
        window: list[MessageCtx] = await self._inner.getmany(max_messages, max_wait)
        if window:
            self._begin_batch(window, None)
        return window

    async def __aenter__(self) -> TracedWindows:
        return self

    async def __aexit__(
            self, typ: type[BaseException] | None, value: BaseException | None,
            tb: TracebackType | None,
    ) -> None:
        self._current.end(value if not isinstance(value, GeneratorExit) else None)
        await self._inner.__aexit__(typ, value, tb)

def traced_handler(
        handler: Handler, telemetry: Telemetry, stream: str, group: str | None,
) -> Handler:
    """A handler of ``client.process()`` calling ``handler`` in a ``process`` span."""
    processing = telemetry.processing

    async def traced(msg: MessageCtx) -> None:
        with processing(msg, msg.stream or stream, group):
            result = handler(msg)
            if inspect.isawaitable(result):
                await result

    return traced

__all__ = [
    'TracedChunks', 'TracedGenerator', 'TracedMessages', 'TracedView', 'TracedWindows',
    'traced_handler',
]
