# cython: language_level=3
"""
C API of a message iterator's cursor (:py:mod:`rbfly.streams.subscriptions._cursor`),
read and moved by the compiled message iterator (``_bodies``) without a
Python attribute lookup per message.
"""

from libc.stdint cimport uint64_t

from ...amqp._message cimport MessageCtx

cdef class Cursor:
    # the chunk at hand, and how many of its messages were handed out
    cdef public object messages
    cdef public Py_ssize_t next
    cdef public object stream
    # a flow strategy's credit held by the chunk, given back as the
    # message at this index is asked for (-1: not by the iterator)
    cdef object release
    cdef Py_ssize_t release_at
    # processed messages not reported yet: the last one's offset, how many,
    # and how many may be held back before reporting (see flush)
    cdef object report
    cdef uint64_t done_offset
    cdef Py_ssize_t done
    cdef Py_ssize_t limit

    cdef int processed(self, MessageCtx msg) except -1
    cdef int flush(self) except -1
