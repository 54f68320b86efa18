# cython: language_level=3
"""
The size of a message's body, where it costs nothing to know: for the
pipelined publisher's bounds in bytes (``rbfly.streams.publishers._pipeline``,
``rbfly.streams.publishers._confirm``) and the Publish encoder's frame limit.
"""

from cpython.bytes cimport PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_GET_LENGTH

from ...amqp._message cimport MessageCtx

cdef inline Py_ssize_t body_size(object message):
    """
    Bytes of a ``bytes`` body, characters of a ``str`` one, bare or in a
    :py:class:`MessageCtx`; 0 for others (their encoded size is known only
    once encoded, and they are bounded by count).
    """
    if type(message) is MessageCtx:
        message = (<MessageCtx> message)._body
    if type(message) is bytes:
        return PyBytes_GET_SIZE(message)
    if type(message) is str:
        return PyUnicode_GET_LENGTH(message)
    return 0
