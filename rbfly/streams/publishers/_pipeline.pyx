# cython: language_level=3
"""
The per-message path of the pipelined publisher, in C.

:py:meth:`PublisherPipelined.send` runs once per message, at rates of
hundreds of thousands per second: in Python, checking the window, taking
a publishing id and buffering the message cost about 175 ns per message
(attribute lookups in instance dictionaries, an interpreted frame), a
sixth of what the client spends per message when pipelining to RabbitMQ
3.10 on two cores, where the client and the broker share the processors
(every nanosecond the client saves goes to the broker). Here the state the
path touches lives in C fields of the publisher object, and the path
itself is a C function; the rest of the publisher (sending a buffer,
confirmations, waiting for room) stays in Python, in
:py:mod:`rbfly.streams.publishers.pipelined`, which uses the same fields through
their Python attributes.
"""

from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE

from ...amqp._message cimport MessageCtx
from ..aio._ready cimport ready
from ..protocol._size cimport body_size
from ._unconfirmed cimport Unconfirmed

import asyncio

cdef object get_running_loop = asyncio.get_running_loop

def message_size(message: object) -> int:
    """
    Body bytes of a message, as the publisher's bounds in bytes count them
    (see :py:mod:`rbfly.streams.protocol._size`).
    """
    return body_size(message)

cdef class PipelineState:
    """
    State of the pipelined publisher's per-message path, in C fields.

    :ivar window: Messages that may wait for confirmation (buffered or
        sent); :py:meth:`send` waits while that many wait.
    :ivar window_bytes: Body bytes that may wait for confirmation;
        :py:meth:`send` waits while that many wait.
    :ivar batch_size: Messages buffered before the buffer is sent without
        waiting for the next iteration of the event loop.
    :ivar batch_bytes: Body bytes buffered before the buffer is sent
        without waiting for the next iteration of the event loop.
    """
    # the fields of PublisherTrait the path reads: declared here, they
    # are C fields that PublisherTrait's Python code sets as attributes
    cdef public object message_id
    cdef public Unconfirmed _unconfirmed
    cdef public object _error
    # messages buffered for the next Publish frames, the publishing id of
    # the first, and whether sending the buffer is scheduled
    cdef public list _buffer
    cdef public object _buffer_first
    cdef public bint _scheduled
    cdef public Py_ssize_t window
    # body bytes of the messages buffered or waiting for confirmation, and
    # their bound (see _size.body_size for what is counted)
    cdef public Py_ssize_t _pending_bytes
    cdef public Py_ssize_t window_bytes
    cdef public Py_ssize_t batch_size
    # body bytes buffered, and the bound that sends the buffer at once:
    # a buffer of big messages is sent as soon as it fills a frame or so,
    # not when it holds batch_size of them (1,000 messages of 512 KiB, or
    # 512 MB, were encoded and written at once, copied into the
    # transport's buffer)
    cdef public Py_ssize_t _buffer_bytes
    cdef public Py_ssize_t batch_bytes
    # the connection's write buffer is full: send() takes the slow way,
    # which waits for it to drain
    cdef public bint _write_paused
    # seconds a message may wait for more to fill a frame (0: until the
    # next iteration of the event loop), and the timer of that wait
    cdef public double linger
    cdef public object _timer_handle

    def __cinit__(self, *args, **kw):
        self.message_id = 0
        self._unconfirmed = Unconfirmed()
        self._buffer = []
        self._buffer_first = 0
        self._scheduled = False
        self.window = 10_000
        self._pending_bytes = 0
        self.window_bytes = 2 << 20
        self.batch_size = 1_000
        self._buffer_bytes = 0
        self.batch_bytes = 1 << 20
        self._write_paused = False
        self.linger = 0.0
        self._timer_handle = None

    def send(self, message):
        """
        Send a message without waiting for its confirmation.

        Await the result (or pass it to :py:func:`asyncio.create_task`) to
        get the publishing id; the wait is for room in the window only.
        When there is room, the message is buffered for sending at once,
        as this method is called, and the awaitable it returns is done
        already: no coroutine is made per message.

        :return: Awaitable of the publishing id of the message.
        """
        cdef list buffer = self._buffer
        cdef Py_ssize_t n = PyList_GET_SIZE(buffer)
        cdef Py_ssize_t size, buffered
        cdef bint full
        if self._error is None \
                and not self._write_paused \
                and self._unconfirmed.count + n < self.window \
                and self._pending_bytes < self.window_bytes \
                and not (type(message) is MessageCtx
                         and (<MessageCtx> message).stream_publish_id):
            size = body_size(message)
            buffered = self._buffer_bytes + size
            full = n + 1 >= self.batch_size or buffered >= self.batch_bytes
            if not self._scheduled and not full:
                # first, as it raises outside of an event loop
                if self.linger > 0:
                    self._timer_handle = get_running_loop().call_later(
                        self.linger, self._send_buffer,
                    )
                else:
                    get_running_loop().call_soon(self._send_soon)
                self._scheduled = True
            pid = self.message_id = self.message_id + 1
            if n == 0:
                self._buffer_first = pid
            buffer.append(message)
            self._buffer_bytes = buffered
            self._pending_bytes += size
            if full:
                self._send_buffer()
            return ready(pid)
        # a full window, a full write buffer, an error or an own publishing id
        return self._send(message)

    def send_many(self, messages):
        """
        Send messages without waiting for their confirmation: the bulk
        form of :py:meth:`send`.

        The messages are buffered (and sent a batch at a time, as
        :py:meth:`send` does) in one C loop, with no awaitable per message;
        the call waits only while the window is full (or the connection's
        write buffer), going on as soon as a batch fits. A message with a
        publishing id of its own goes through the way of :py:meth:`send`,
        in order.

        Await the result (or pass it to :py:func:`asyncio.create_task`) to
        get the publishing id of the last message (the last id sent before
        the call, for no message); :py:meth:`flush` waits for all of them.

        :param messages: A list (any other iterable is made one first).
        :return: Awaitable of the publishing id of the last message.
        :raises EnqueueTimeout: When the window stays full for the
            publisher's ``enqueue_timeout`` (the messages before the one
            waiting are sent, up to the publisher's ``message_id``; the
            others are not).
        """
        cdef list items = messages if type(messages) is list else list(messages)
        cdef Py_ssize_t i
        if PyList_GET_SIZE(items):
            get_running_loop()  # first, as it raises outside of an event loop
        i = self._take(items, 0)
        if i == PyList_GET_SIZE(items):
            return ready(self.message_id)
        return self._send_rest(items, i)

    cpdef Py_ssize_t _take(self, list messages, Py_ssize_t i) except -1:
        """
        Buffer messages from index ``i`` on while they take the fast way
        of :py:meth:`send` (room in the window, no error, no id of their
        own); return the index of the first one not taken.
        """
        cdef list buffer = self._buffer
        cdef Py_ssize_t n = PyList_GET_SIZE(messages)
        cdef Py_ssize_t nb = PyList_GET_SIZE(buffer)
        cdef Py_ssize_t unconfirmed = self._unconfirmed.count
        cdef Py_ssize_t size
        cdef object msg
        # the ids as a C integer: an int object per message cost about 60
        # instructions (Callgrind, ``python -m perf.instructions many``)
        cdef unsigned long long pid = self.message_id
        while i < n:
            if self._error is not None or self._write_paused \
                    or unconfirmed + nb >= self.window \
                    or self._pending_bytes >= self.window_bytes:
                break
            msg = <object> PyList_GET_ITEM(messages, i)
            if type(msg) is MessageCtx and (<MessageCtx> msg).stream_publish_id:
                break
            size = body_size(msg)
            pid = pid + 1
            if nb == 0:
                self._buffer_first = pid
            buffer.append(msg)
            nb += 1
            self._buffer_bytes += size
            self._pending_bytes += size
            i += 1
            if nb >= self.batch_size or self._buffer_bytes >= self.batch_bytes:
                self.message_id = pid
                self._send_buffer()
                buffer = self._buffer
                nb = PyList_GET_SIZE(buffer)
                unconfirmed = self._unconfirmed.count
        self.message_id = pid
        if nb and not self._scheduled:
            if self.linger > 0:
                self._timer_handle = get_running_loop().call_later(
                    self.linger, self._send_buffer,
                )
            else:
                get_running_loop().call_soon(self._send_soon)
            self._scheduled = True
        return i
