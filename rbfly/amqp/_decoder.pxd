# cython: language_level=3
"""
C API of the AMQP 1.0 value decoder, shared with the message codec and
the chunk decoder.
"""

from libc.stdint cimport uint8_t

from .._wire._buffer cimport Reader

cdef enum:
    MAX_DEPTH = 100

cdef object dec_value(Reader *r, int depth)
cdef object dec_payload(Reader *r, uint8_t code, int depth)
cdef object dec_string(Reader *r, Py_ssize_t size)
cdef object dec_binary(Reader *r, Py_ssize_t size)
cdef int reader_for(Reader *r, object data, Py_buffer *view) except -1
# before decoding a value or a message of `size` bytes: see _decoder.pyx
cdef void zero_width_budget(Py_ssize_t size) noexcept
