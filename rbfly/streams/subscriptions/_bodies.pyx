# cython: language_level=3
"""
The message iterator of ``client.subscribe()``: ``async for body in ...``.

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

The message context (:py:func:`rbfly.streams.get_message_ctx`) is set per
message, as before: a task created while a message is processed keeps that
message's context.

Automatic offset tracking (:py:mod:`rbfly.streams.subscriptions.tracking`): a message
counts as processed when the next one is asked for, and the last one handed
out when the iteration ends (closed, finished, failed or dropped). The
iterator counts processed messages in C and reports them to the tracker in
batches, as many as the tracker can wait for (its first after a store at
once, which starts its timer), at the end of each chunk, and when the
tracker is about to store.

Hand-offs (:py:mod:`rbfly.streams.subscriptions.handoff`): a single active
consumer stepping down on a stream, or losing its connection, cuts the
chunk at hand if it is of that stream: the messages not handed out yet are
not (the next consumer of the stream processes them), and the next one
asked for comes from the next chunk. Nothing is checked per message.
"""

import logging
import weakref

from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from libc.stdint cimport uint64_t

from ...amqp._message cimport MessageCtx, set_ctx
from ..aio._ready cimport ready

# as documented (doc/logging.rst): the module's former name
logger = logging.getLogger('rbfly.streams._bodies')

cdef class Bodies:
    """
    Async iterator over the bodies of the messages of a chunk generator,
    each message set as the current message context.

    Also an async generator's ``asend``, ``athrow`` and ``aclose``, as
    ``subscribe()`` returned an async generator before (and RbFly 0.10's
    does): ``aclose()`` ends the subscription.

    :param chunks: Async generator of chunks (lists of messages with a
        ``stream`` attribute when tracked).
    :param tracker: Automatic offset tracking (an ``OffsetTracker`` of
        :py:mod:`rbfly.streams.subscriptions.tracking`), or ``None``.
    :param holding: What the application holds, for a single active
        consumer's hand-offs (a ``Holding`` of
        :py:mod:`rbfly.streams.subscriptions.handoff`): told how to cut the
        chunk at hand (a weak reference), or ``None``.
    """
    cdef object _chunks
    cdef object _messages   # a Chunk: a list (subclass)
    cdef Py_ssize_t _next
    cdef bint _closed
    # automatic offset tracking
    cdef object _tracker
    cdef object _stream         # stream of the messages processed, not reported
    cdef uint64_t _done_offset  # offset of the last of them
    cdef Py_ssize_t _done       # how many
    cdef Py_ssize_t _limit      # report when this many
    cdef object __weakref__     # the tracker holds a weak reference
    # a flow strategy's credit held by the chunk at hand, given back as the
    # message at this index is asked for (-1: not by the iterator)
    cdef object _release
    cdef Py_ssize_t _release_at

    def __cinit__(self, chunks: object, tracker: object = None, holding: object = None) -> None:
        self._chunks = chunks
        self._messages = []
        self._next = 0
        self._closed = False
        self._tracker = tracker
        self._stream = None
        self._done_offset = 0
        self._done = 0
        self._limit = 1
        self._release = None
        self._release_at = -1
        if tracker is not None:
            tracker.attach(self._pull)
        if holding is not None:
            holding.cut = weakref.WeakMethod(self._cut)

    def __aiter__(self) -> Bodies:
        return self

    def __anext__(self) -> object:
        cdef MessageCtx msg
        cdef object messages = self._messages
        cdef Py_ssize_t i = self._next
        if i < PyList_GET_SIZE(messages):
            if self._tracker is not None and i > 0:
                self._processed(<MessageCtx>PyList_GET_ITEM(messages, i - 1))
            if i == self._release_at:  # i messages processed: the strategy's share
                self._release_at = -1
                self._release()
            msg = <MessageCtx>PyList_GET_ITEM(messages, i)
            self._next = i + 1
            set_ctx(msg)
            return ready(msg._body)
        return self._next_chunk()

    cdef int _processed(self, MessageCtx msg) except -1:
        self._done_offset = msg.stream_offset
        self._done += 1
        if self._done >= self._limit:
            self._report()
        return 0

    cdef int _last_processed(self) except -1:
        """
        The last message handed out is processed: the next one is asked
        for, or the iteration ends. Report what is held back (the next
        chunk may be of another stream).
        """
        cdef object messages = self._messages
        cdef Py_ssize_t i = self._next
        if i > 0:
            self._processed(<MessageCtx>PyList_GET_ITEM(messages, i - 1))
            self._messages = []   # marked once
            self._next = 0
        if self._done:
            self._report()
        return 0

    cdef int _report(self) except -1:
        tracker = self._tracker
        done = self._done
        self._done = 0
        tracker.processed(self._stream, self._done_offset, done)
        self._limit = tracker.batch_limit()
        return 0

    def _cut(self, stream: object) -> None:
        """
        Hand out no more messages of the chunk at hand if it is of
        ``stream``: the message handed out last stays the last one
        processed of it; a flow strategy's credit the chunk held goes back.
        """
        messages = self._messages
        if getattr(messages, 'stream', None) != stream or self._next >= len(messages):
            return
        self._messages = messages[:self._next]
        if self._release_at >= 0:
            self._release_at = -1
            self._release()

    def _pull(self) -> object:
        """
        Processed messages not reported yet, as ``(stream, offset, count)``
        (or ``None``), for the tracker about to store.
        """
        if self._done == 0:
            return None
        result = (self._stream, self._done_offset, self._done)
        self._done = 0
        self._limit = 1   # the first processed after the store starts the timer
        return result

    cdef int _finish(self) except -1:
        """End of the iteration: the last message handed out is processed."""
        tracker = self._tracker
        if tracker is None:
            return 0
        try:
            self._last_processed()
        finally:
            self._tracker = None
            tracker.close()
        return 0

    async def _next_chunk(self) -> object:
        cdef MessageCtx msg
        cdef bint ok
        if self._closed:
            raise StopAsyncIteration
        if self._tracker is not None:
            self._last_processed()
        while True:
            ok = False
            try:
                messages = await self._chunks.__anext__()
                ok = True
            finally:
                if not ok:   # ended, failed or cancelled
                    self._finish()
            if messages:
                if not isinstance(messages, list):
                    raise TypeError('chunks must be lists of messages')
                self._messages = messages
                self._next = 1
                self._release = getattr(messages, 'release', None)
                self._release_at = -1 if self._release is None \
                    else getattr(messages, 'release_at', -1)
                if self._tracker is not None:
                    self._stream = messages.stream
                msg = <MessageCtx>messages[0]
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
        cdef Py_ssize_t i = self._next - 1
        messages = self._messages
        if i < 0 or i >= len(messages):
            return
        # the messages before it are counted already: the chunk at hand
        # starts with it, none handed out (its stream and credit kept)
        if i > 0:
            del messages[:i]
            if self._release_at >= 0:
                self._release_at -= i
        self._next = 0

    async def commit(self) -> None:
        """
        Commit the offset of the message being processed (the last one
        handed out) under the subscription's name: store it, and return
        once the broker has it (automatic offset tracking only: subscribe
        with a ``name`` and ``store_every``).

        :raises rbfly.streams.error.OffsetCommitTimeout: When the broker
            does not report it in time.
        """
        tracker = self._tracker
        if tracker is None:
            raise TypeError('commit() needs automatic offset tracking: subscribe with a name'
                            ' and store_every, or call client.commit_offset()')
        if self._done:
            self._report()   # those before it
        messages = self._messages
        i = self._next
        if 0 < i <= len(messages):   # (counted again when the next is asked for)
            tracker.processed(self._stream, (<MessageCtx>messages[i - 1]).stream_offset, 0)
        await tracker.commit()

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
        """End the subscription."""
        if self._closed:
            return
        self._closed = True
        try:
            self._finish()
        finally:
            self._messages = []
            self._next = 0
            await self._chunks.aclose()

    def __del__(self) -> None:
        # dropped without aclose() (a break out of the loop): the tracker
        # stores the last message handed out; the chunk generator is closed
        # by the event loop's async generator hooks
        if self._tracker is not None:
            try:
                self._finish()
            except Exception:
                logger.exception('offset tracking failed at the end of a subscription')
