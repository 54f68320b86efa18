# cython: language_level=3
"""
The messages a publisher sent and waits to see confirmed, by publishing id,
in runs of consecutive ids (see ``_unconfirmed.pyx``).
"""

from cpython.exc cimport PyErr_Clear, PyErr_Occurred
from libc.stdint cimport uint64_t

cdef extern from "Python.h":
    # without Cython's exception check: as_id clears the error itself
    unsigned long long long_as_ull "PyLong_AsUnsignedLongLong" (object o)

cdef inline bint as_id(object pid, uint64_t *value) noexcept:
    """
    A publishing id as a C integer, in ``value``; false for an ``int`` out
    of the ids' range (0 to 2**64 - 1), or any other object, which no
    message has.
    """
    if type(pid) is not int:
        return False
    value[0] = long_as_ull(pid)
    if value[0] == <uint64_t> -1 and PyErr_Occurred() != NULL:
        PyErr_Clear()
        return False
    return True

cdef class Run:
    # messages of the ids first, first + 1, ...; a confirmed (or failed)
    # one's slot holds the module's GONE marker; live: slots not GONE
    cdef uint64_t first
    cdef list messages
    cdef Py_ssize_t live

cdef class Unconfirmed:
    # runs in order of their ids, not overlapping; those before head are
    # gone (kept until compacted, so that dropping the oldest run costs
    # no shift of the list)
    cdef list _runs
    cdef Py_ssize_t _head
    # messages kept: the publisher's window counts them
    cdef readonly Py_ssize_t count

    cdef int add_run(self, uint64_t first, list messages) except -1
    cdef int put(self, uint64_t pid, object message) except -1
    cdef object take(self, uint64_t pid, object default)
    cdef object lookup(self, object pid, object default)
    cdef Py_ssize_t find(self, uint64_t pid)
    cdef void drop_run(self, Py_ssize_t i)
