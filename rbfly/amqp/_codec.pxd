# cython: language_level=3
"""
C API of the AMQP 1.0 value codec, shared with the message codec and the
streams client.
"""

from libc.stdint cimport uint8_t

from .._wire._buffer cimport Reader, Writer

cdef enum:
    MAX_DEPTH = 100

cdef int enc_value(Writer *w, object obj, int depth) except -1
cdef int enc_binary(Writer *w, const char *data, Py_ssize_t size) except -1
cdef int enc_string(Writer *w, object value) except -1
cdef int enc_symbol(Writer *w, object value) except -1
cdef int enc_bytes_like(Writer *w, object obj) except -1

cdef object dec_value(Reader *r, int depth)
cdef object dec_payload(Reader *r, uint8_t code, int depth)
cdef object dec_string(Reader *r, Py_ssize_t size)
cdef object dec_binary(Reader *r, Py_ssize_t size)

cdef int writer_for(Writer *w, object buffer, Py_buffer *view) except -1
cdef int reader_for(Reader *r, object data, Py_buffer *view) except -1
