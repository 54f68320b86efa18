# cython: language_level=3
"""
C API of the AMQP 1.0 value encoder, shared with the message codec and
the streams client.
"""

from .._wire._buffer cimport Writer

cdef enum:
    MAX_DEPTH = 100

cdef int enc_value(Writer *w, object obj, int depth) except -1
cdef int enc_binary(Writer *w, const char *data, Py_ssize_t size) except -1
cdef int enc_string(Writer *w, object value) except -1
cdef int enc_symbol(Writer *w, object value) except -1
cdef int enc_bytes_like(Writer *w, object obj) except -1
cdef int writer_for(Writer *w, object buffer, Py_buffer *view) except -1
