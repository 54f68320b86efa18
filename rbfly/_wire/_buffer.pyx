# cython: language_level=3
"""
Slow paths of the bounds-checked reader and writer (see ``_buffer.pxd``).
"""

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_Resize


from ..error import RbFlyBufferError

cdef const unsigned char *reader_short(Reader *r, Py_ssize_t n) except NULL:
    if n < 0:
        reader_error(r, 'negative length {}'.format(n), r.pos)
    reader_error(
        r,
        'truncated data: {} bytes needed, {} left'.format(n, r.end - r.pos),
        r.pos,
    )
    return NULL

cdef int reader_error(Reader *r, str message, Py_ssize_t offset) except -1:
    raise (<object> r.error)(message, offset)

cdef unsigned char *writer_grow(Writer *w, Py_ssize_t n) except NULL:
    cdef Py_ssize_t size
    cdef unsigned char *p
    if w.owner == NULL:
        raise RbFlyBufferError(
            'buffer too small: {} bytes needed, {} bytes available'
            .format(w.pos + n, w.cap)
        )
    size = max(w.cap * 2, w.pos + n, 64)
    PyByteArray_Resize(<object> w.owner, size)
    w.data = <unsigned char*> PyByteArray_AS_STRING(<object> w.owner)
    w.cap = size
    p = w.data + w.pos
    w.pos += n
    return p
