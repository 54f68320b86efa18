# cython: language_level=3
"""
The message iterator of ``client.subscribe()``: ``async for body in ...``,
a view over its reader's progress
(:py:mod:`rbfly.streams.subscriptions.progress`).

An ``async for`` over an async generator costs a generator resumption, the
wrapping of the yielded value and a ``ContextVar.set`` call per message:
about 200 ns, as much as decoding the message. Most of the time the next
message is already decoded, in the chunk at hand, so :py:class:`Bodies`
answers ``__anext__`` with an awaitable that is done at once: a small C
type whose ``am_send`` slot returns the body without raising
``StopIteration`` (the interpreter's ``async for`` sends to it through
that slot), after setting the message context through the C API. Only at
the end of a chunk does it await the next one, in a coroutine. Measured
(10-byte AMQP messages, uvloop): 211 ns per message of the generator
against 90 ns.

The chunk at hand and what was handed out of it are the progress's
cursor (``_cursor``), read and moved here in C: the progress cuts it at a
hand-off, pulls the processed messages it holds back before storing an
offset, and knows whether the application holds a message of a stream.

The message context (:py:func:`rbfly.streams.get_message_ctx`) is set per
message, as before: a task created while a message is processed keeps that
message's context.

Taking the next chunk is safe to cancel: a cancelled ``__anext__`` leaves
the subscription as it was (``asyncio.timeout`` around it, then going on,
loses nothing). The iteration ends with :py:meth:`Bodies.aclose`, the
end of the subscription, an error, or the iterator dropped (a ``break``
out of the loop: the progress is closed by a task then, as an async
generator's finalizer would).
"""

import asyncio
import logging

from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE

from ...amqp._message cimport MessageCtx, set_ctx
from ..aio._ready cimport ready
from ._cursor cimport Cursor

# as documented (doc/logging.rst): the module's former name
logger = logging.getLogger('rbfly.streams._bodies')

cdef class Bodies:
    """
    Async iterator over the bodies of a subscription's messages, each
    message set as the current message context.

    Also an async generator's ``asend``, ``athrow`` and ``aclose``, as
    ``subscribe()`` returned an async generator before (and RbFly 0.10's
    does): ``aclose()`` ends the subscription.

    :param progress: The reader's progress (a
        :py:class:`~rbfly.streams.subscriptions.progress.Progress`): takes
        the chunks, owns the cursor.
    """
    cdef object _progress
    cdef Cursor _cursor
    cdef bint _closed

    def __cinit__(self, progress: object) -> None:
        self._progress = progress
        self._cursor = progress.cursor
        self._closed = False

    def __aiter__(self) -> Bodies:
        return self

    def __anext__(self) -> object:
        cdef MessageCtx msg
        cdef Cursor c = self._cursor
        cdef object messages = c.messages
        cdef Py_ssize_t i = c.next
        if i < PyList_GET_SIZE(messages):
            if c.report is not None and i > 0:
                c.processed(<MessageCtx>PyList_GET_ITEM(messages, i - 1))
            if i == c.release_at:  # i messages processed: the strategy's share
                c.release_at = -1
                c.release()
            msg = <MessageCtx>PyList_GET_ITEM(messages, i)
            c.next = i + 1
            set_ctx(msg)
            return ready(msg._body)
        return self._next_chunk()

    async def _next_chunk(self) -> object:
        cdef MessageCtx msg
        if self._closed:
            raise StopAsyncIteration
        progress = self._progress
        progress.moved()  # the message handed out last is processed
        try:
            chunk = await progress.take()
        except asyncio.CancelledError:
            raise  # (safe to cancel: nothing was taken)
        except BaseException:  # ended, failed, timed out: the subscription ends
            self._closed = True
            await progress.close()
            raise
        self._cursor.load(chunk)
        msg = <MessageCtx>chunk[0]
        set_ctx(msg)
        return msg._body

    def hand_back(self) -> None:
        """
        The message handed out last goes back, unprocessed: the next one
        asked for is it again, and it does not count as processed until
        then (a blocking subscription's take completed after its caller
        stopped waiting: the application never saw the message, so
        neither a commit nor the end of the iteration stores its offset).
        Nothing happens when no message of the chunk at hand is out.
        """
        self._cursor.hand_back()

    async def commit(self) -> None:
        """
        Commit the offset of the message being processed (the last one
        handed out) under the subscription's name: store it, and return
        once the broker has it (automatic offset tracking only: subscribe
        with a ``name`` and ``store_every``).

        :raises rbfly.streams.error.OffsetCommitTimeout: When the broker
            does not report it in time.
        """
        await self._progress.commit()

    def pause(self, *streams: object) -> None:
        """
        Hand out no message of ``streams`` (the stream, or partitions of a
        super stream) until ``resume()``; the others go on. Nothing
        is lost or read twice: what was received of them is held back,
        and the broker gets no credit for them.
        """
        self._progress.pause(*streams)

    def resume(self, *streams: object) -> None:
        """Hand out the messages of paused ``streams`` again."""
        self._progress.resume(*streams)

    def paused(self) -> frozenset:
        """The streams paused."""
        return frozenset(self._progress.paused.streams)

    async def seek(self, stream: object, offset: object) -> None:
        """
        Read ``stream`` from ``offset`` on (an ``Offset``, or an offset):
        the message being processed of it does not count as processed;
        with automatic offset tracking, the offset stored becomes the one
        before ``offset`` (see ``Progress.seek``).
        """
        await self._progress.seek(stream, offset)

    def asend(self, value: object) -> object:
        if value is not None:
            raise TypeError('can only send None to a subscription')
        return self.__anext__()

    async def athrow(self, typ: object, val: object = None, tb: object = None) -> object:
        await self.aclose()
        if val is None:
            raise typ
        raise val

    async def aclose(self) -> None:
        """End the subscription: the message handed out last is processed."""
        if self._closed:
            return
        self._closed = True
        await self._progress.close()

    def __del__(self) -> None:
        # dropped without aclose() (a break out of the loop): the progress
        # is closed as an async generator's finalizer would close it
        if not self._closed:
            self._closed = True
            try:
                self._progress.abandon()
            except Exception:
                logger.exception('ending a subscription dropped by the application failed')
