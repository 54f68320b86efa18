# cython: language_level=3
"""
C API of the AMQP 1.0 message context, used by the section codec
(:py:mod:`rbfly.amqp._sections`) and the streams client's compiled
iterators.
"""

from libc.stdint cimport uint64_t

cdef class AMQPHeader:
    cdef public bint durable
    cdef public object priority
    cdef public object ttl
    cdef public bint first_acquirer
    cdef public object delivery_count

    cdef bint is_default(self)
    cdef tuple key(self)

cdef class AMQPProperties:
    cdef public object message_id
    cdef public object user_id
    cdef public object to
    cdef public object subject
    cdef public object reply_to
    cdef public object correlation_id
    cdef public object content_type
    cdef public object content_encoding
    cdef public object absolute_expiry_time
    cdef public object creation_time
    cdef public object group_id
    cdef public object group_sequence
    cdef public object reply_to_group_id

    cdef list fields(self)

cdef class MessageCtx:
    cdef public object body
    cdef object _header
    cdef object _delivery_annotations
    cdef object _annotations
    cdef object _properties
    cdef object _app_properties
    cdef object _footer
    cdef public uint64_t stream_offset
    cdef public double stream_timestamp
    cdef public uint64_t stream_publish_id
    cdef public object stream

    cdef tuple key(self)

cdef int set_ctx(MessageCtx msg) except -1
