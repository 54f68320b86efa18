# cython: language_level=3
"""
Bounds-checked reader and writer over raw memory.

Every byte that the Cython codecs read or write goes through these
functions. The fast path (enough room) is inlined into the caller; the slow
path (grow a buffer, or raise an error naming the offset) lives in
``_buffer.pyx`` so it can raise the proper rbfly exception.
"""

from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t
from cpython.ref cimport PyObject

cdef extern from "byteorder.h":
    uint16_t rbfly_load_u16(const unsigned char *p) nogil
    uint32_t rbfly_load_u32(const unsigned char *p) nogil
    uint64_t rbfly_load_u64(const unsigned char *p) nogil
    void rbfly_store_u16(unsigned char *p, uint16_t v) nogil
    void rbfly_store_u32(unsigned char *p, uint32_t v) nogil
    void rbfly_store_u64(unsigned char *p, uint64_t v) nogil
    float rbfly_load_f32(const unsigned char *p) nogil
    double rbfly_load_f64(const unsigned char *p) nogil
    void rbfly_store_f32(unsigned char *p, float v) nogil
    void rbfly_store_f64(unsigned char *p, double v) nogil

ctypedef struct Reader:
    const unsigned char *data
    Py_ssize_t pos
    Py_ssize_t end
    # exception class raised on a short read: called as error(message, offset)
    PyObject *error

ctypedef struct Writer:
    unsigned char *data
    Py_ssize_t pos
    Py_ssize_t cap
    # a bytearray that may be grown, or NULL for a fixed buffer
    PyObject *owner

cdef const unsigned char *reader_short(Reader *r, Py_ssize_t n) except NULL
cdef unsigned char *writer_grow(Writer *w, Py_ssize_t n) except NULL
cdef int reader_error(Reader *r, str message, Py_ssize_t offset) except -1

cdef inline const unsigned char *r_take(Reader *r, Py_ssize_t n) except NULL:
    """
    Take ``n`` bytes from the reader; raise the reader's error when fewer
    than ``n`` bytes are left.
    """
    cdef const unsigned char *p
    if n >= 0 and r.end - r.pos >= n:
        p = r.data + r.pos
        r.pos += n
        return p
    return reader_short(r, n)

cdef inline unsigned char *w_take(Writer *w, Py_ssize_t n) except NULL:
    """
    Reserve ``n`` bytes in the writer and return a pointer to them.
    """
    cdef unsigned char *p
    if w.cap - w.pos >= n:
        p = w.data + w.pos
        w.pos += n
        return p
    return writer_grow(w, n)
