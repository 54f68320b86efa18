# cython: language_level=3
"""
The publishing ids of a PublishConfirm frame, read where they arrived
(see ``_confirm_ids.pyx``).
"""

from libc.stdint cimport uint64_t

from ..._wire._buffer cimport rbfly_load_u64

cdef class ConfirmIds:
    # the frame's ids, 8 big-endian bytes each
    cdef bytes _data
    cdef const unsigned char *_p
    cdef Py_ssize_t n

    cdef inline uint64_t at(self, Py_ssize_t i) noexcept:
        return rbfly_load_u64(self._p + 8 * i)

cdef ConfirmIds confirm_ids(const unsigned char *p, Py_ssize_t count)
