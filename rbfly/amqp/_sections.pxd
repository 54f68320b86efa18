# cython: language_level=3
"""
C API of the AMQP 1.0 message codec, used by the streams client to encode
messages straight into publish frames and to decode delivered chunks.
"""

from .._wire._buffer cimport Reader, Writer
from ._message cimport MessageCtx

cdef int enc_message(Writer *w, MessageCtx msg) except -1
cdef int enc_body(Writer *w, object body) except -1
cdef MessageCtx dec_message(Reader *r)
