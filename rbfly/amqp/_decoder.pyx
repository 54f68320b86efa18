# cython: language_level=3
"""
Decoder of the AMQP 1.0 type system (OASIS AMQP 1.0, part 1 "Types").

Grammar (section 1.2 of the specification)::

    type        = constructor untyped-bytes
    constructor = format-code / %x00 descriptor constructor
    format-code = fixed / variable / compound / array
    fixed       = empty / fixed-one / fixed-two / fixed-four / fixed-eight
                  / fixed-sixteen                      ; 0x4x .. 0x9x
    variable    = variable-one / variable-four         ; 0xax, 0xbx
    compound    = compound-one / compound-four         ; 0xcx, 0xdx
    array       = array-one / array-four               ; 0xex, 0xfx
    compound-*  = size count items                     ; size covers count
    array-*     = size count element-constructor *( untyped-bytes )

All integers are big-endian. The decoder checks every length against the
data left, limits nesting to ``MAX_DEPTH`` levels, and raises
:py:class:`rbfly.error.AMQPDecodeError` naming the offset of any problem.
"""

import uuid as _uuid
from datetime import UTC, datetime, timedelta

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_SetItem
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_FromLongLong, PyLong_FromUnsignedLongLong
from cpython.ref cimport Py_INCREF, PyObject
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t

from .._wire._buffer cimport (
    Reader, r_take, reader_error, rbfly_load_f32, rbfly_load_f64, rbfly_load_u16,
    rbfly_load_u32, rbfly_load_u64,
)

from ..error import AMQPDecodeError
from ..types import Symbol
from .types import (
    AMQPType, Array, Byte, Char, Decimal32, Decimal64, Decimal128, Described, Float32, Short,
    Timestamp, UByte, UInt, ULong, UShort,
)

cdef extern from "Python.h":
    PyObject *PyUnicode_DecodeASCII(const char *s, Py_ssize_t size, const char *errors)
    void PyErr_Clear()

cdef extern from "strcache.h":
    PyObject *rbfly_decode_str(const char *p, Py_ssize_t n)

cdef enum:
    # zero-width elements make any count cheap to declare; cap them
    MAX_ZERO_WIDTH_COUNT = 1 << 16
    # a map of more entries has its keys' hashes checked, which at most
    # MAX_SAME_HASH keys may share with another key
    MAP_HASH_CHECK = 64
    MAX_SAME_HASH = 64

# Zero-width array elements (null, booleans, uint and ulong 0, empty list)
# take no bytes: all the arrays of one decoded value or message may hold
# at most MAX_ZERO_WIDTH_COUNT of them plus one per byte of its data, so
# that a few bytes cannot make millions of objects (the cap used to be per
# array: 4 KB of arrays of empty lists made 26 million lists, 1.8 GB).
cdef Py_ssize_t zero_width_left = MAX_ZERO_WIDTH_COUNT

cdef void zero_width_budget(Py_ssize_t size) noexcept:
    """
    Start decoding a value or a message of ``size`` bytes (the budget of
    zero-width array elements is the module's, the GIL keeps it to one
    decoder at a time).
    """
    global zero_width_left
    zero_width_left = MAX_ZERO_WIDTH_COUNT + size

cdef object EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
cdef object symbol_cache = Symbol.__cache__
cdef type UUID_t = _uuid.UUID

# decoded unsigned values keep their AMQP type; small ones are preallocated
cdef tuple UBYTES = tuple(int.__new__(UByte, i) for i in range(256))
cdef tuple UINTS = tuple(int.__new__(UInt, i) for i in range(256))
cdef tuple ULONGS = tuple(int.__new__(ULong, i) for i in range(256))

# element type of an array by its (possibly narrowed) element constructor
cdef dict ARRAY_TYPES = {
    0x40: AMQPType.NULL, 0x41: AMQPType.BOOLEAN, 0x42: AMQPType.BOOLEAN,
    0x56: AMQPType.BOOLEAN, 0x50: AMQPType.UBYTE, 0x60: AMQPType.USHORT,
    0x43: AMQPType.UINT, 0x52: AMQPType.UINT, 0x70: AMQPType.UINT,
    0x44: AMQPType.ULONG, 0x53: AMQPType.ULONG, 0x80: AMQPType.ULONG,
    0x51: AMQPType.BYTE, 0x61: AMQPType.SHORT,
    0x54: AMQPType.INT, 0x71: AMQPType.INT, 0x55: AMQPType.LONG, 0x81: AMQPType.LONG,
    0x72: AMQPType.FLOAT, 0x82: AMQPType.DOUBLE,
    0x74: AMQPType.DECIMAL32, 0x84: AMQPType.DECIMAL64, 0x94: AMQPType.DECIMAL128,
    0x73: AMQPType.CHAR, 0x83: AMQPType.TIMESTAMP, 0x98: AMQPType.UUID,
    0xa0: AMQPType.BINARY, 0xb0: AMQPType.BINARY,
    0xa1: AMQPType.STRING, 0xb1: AMQPType.STRING,
    0xa3: AMQPType.SYMBOL, 0xb3: AMQPType.SYMBOL,
    0x45: AMQPType.LIST, 0xc0: AMQPType.LIST, 0xd0: AMQPType.LIST,
    0xc1: AMQPType.MAP, 0xd1: AMQPType.MAP,
    0xe0: AMQPType.ARRAY, 0xf0: AMQPType.ARRAY,
}


cdef int reader_for(Reader *r, object data, Py_buffer *view) except -1:
    """
    Point reader at the memory of ``data`` (bytes or any buffer).
    """
    r.pos = 0
    r.error = <PyObject*> AMQPDecodeError
    if type(data) is bytes:
        r.data = <const unsigned char*> PyBytes_AS_STRING(data)
        r.end = PyBytes_GET_SIZE(data)
        return 0
    PyObject_GetBuffer(data, view, PyBUF_SIMPLE)
    r.data = <const unsigned char*> view.buf
    r.end = view.len
    return 1

cdef inline int dec_error(Reader *r, str message, Py_ssize_t offset) except -1:
    return reader_error(r, message, offset)

cdef object dec_value(Reader *r, int depth):
    """
    Decode one value (constructor and data) at the reader's position.
    """
    cdef Py_ssize_t offset = r.pos
    cdef uint8_t code = r_take(r, 1)[0]
    cdef object descriptor
    if code == 0x00:
        if depth >= MAX_DEPTH:
            dec_error(r, 'AMQP value nested deeper than {} levels'.format(MAX_DEPTH), offset)
        descriptor = dec_value(r, depth + 1)
        return Described(descriptor, dec_value(r, depth + 1))
    return dec_payload(r, code, depth)

cdef object dec_payload(Reader *r, uint8_t code, int depth):
    """
    Decode the bytes of a value whose constructor is ``code``.
    """
    cdef const unsigned char *p
    if code == 0x40:
        return None
    elif code == 0x41:
        return True
    elif code == 0x42:
        return False
    elif code == 0x56:
        p = r_take(r, 1)
        if p[0] > 1:
            dec_error(r, 'invalid boolean byte 0x{:02x}'.format(p[0]), r.pos - 1)
        return p[0] == 1
    elif code == 0x43:
        return UINTS[0]
    elif code == 0x44:
        return ULONGS[0]
    elif code == 0x45:
        return []
    elif code == 0x50:
        return UBYTES[r_take(r, 1)[0]]
    elif code == 0x51:
        return int.__new__(Byte, <int8_t> r_take(r, 1)[0])
    elif code == 0x52:
        return UINTS[r_take(r, 1)[0]]
    elif code == 0x53:
        return ULONGS[r_take(r, 1)[0]]
    elif code == 0x54 or code == 0x55:
        return <int8_t> r_take(r, 1)[0]
    elif code == 0x60:
        return int.__new__(UShort, rbfly_load_u16(r_take(r, 2)))
    elif code == 0x61:
        return int.__new__(Short, <int16_t> rbfly_load_u16(r_take(r, 2)))
    elif code == 0x70:
        return int.__new__(UInt, rbfly_load_u32(r_take(r, 4)))
    elif code == 0x71:
        return <int32_t> rbfly_load_u32(r_take(r, 4))
    elif code == 0x72:
        return float.__new__(Float32, rbfly_load_f32(r_take(r, 4)))
    elif code == 0x73:
        return dec_char(r)
    elif code == 0x74:
        return int.__new__(Decimal32, rbfly_load_u32(r_take(r, 4)))
    elif code == 0x80:
        return int.__new__(ULong, PyLong_FromUnsignedLongLong(rbfly_load_u64(r_take(r, 8))))
    elif code == 0x81:
        return PyLong_FromLongLong(<int64_t> rbfly_load_u64(r_take(r, 8)))
    elif code == 0x82:
        return rbfly_load_f64(r_take(r, 8))
    elif code == 0x83:
        return ms_to_datetime(<int64_t> rbfly_load_u64(r_take(r, 8)))
    elif code == 0x84:
        return int.__new__(Decimal64, PyLong_FromUnsignedLongLong(rbfly_load_u64(r_take(r, 8))))
    elif code == 0x94:
        return bytes.__new__(Decimal128, PyBytes_FromStringAndSize(<const char*> r_take(r, 16), 16))
    elif code == 0x98:
        return UUID_t(bytes=PyBytes_FromStringAndSize(<const char*> r_take(r, 16), 16))
    elif code == 0xa0:
        return dec_binary(r, r_take(r, 1)[0])
    elif code == 0xa1:
        return dec_string(r, r_take(r, 1)[0])
    elif code == 0xa3:
        return dec_symbol(r, r_take(r, 1)[0])
    elif code == 0xb0:
        return dec_binary(r, rbfly_load_u32(r_take(r, 4)))
    elif code == 0xb1:
        return dec_string(r, rbfly_load_u32(r_take(r, 4)))
    elif code == 0xb3:
        return dec_symbol(r, rbfly_load_u32(r_take(r, 4)))
    elif code == 0xc0 or code == 0xc1 or code == 0xe0:
        return dec_compound(r, code, 1, depth)
    elif code == 0xd0 or code == 0xd1 or code == 0xf0:
        return dec_compound(r, code, 4, depth)
    dec_error(r, 'unknown AMQP constructor 0x{:02x}'.format(code), r.pos - 1)

cdef object ms_to_datetime(int64_t ms):
    try:
        return EPOCH + timedelta(milliseconds=ms)
    except OverflowError:  # outside of datetime's years 1..9999
        return int.__new__(Timestamp, ms)

cdef object dec_char(Reader *r):
    cdef Py_ssize_t offset = r.pos
    cdef uint32_t cp = rbfly_load_u32(r_take(r, 4))
    if cp > 0x10ffff:
        dec_error(r, 'invalid char code point 0x{:x}'.format(cp), offset)
    return str.__new__(Char, chr(cp))

cdef object dec_binary(Reader *r, Py_ssize_t size):
    cdef const unsigned char *p = r_take(r, size)
    return PyBytes_FromStringAndSize(<const char*> p, size)

cdef object dec_string(Reader *r, Py_ssize_t size):
    cdef Py_ssize_t offset = r.pos
    cdef const unsigned char *p = r_take(r, size)
    cdef PyObject *s = rbfly_decode_str(<const char*> p, size)
    if s == NULL:
        PyErr_Clear()
        dec_error(r, 'invalid UTF-8 string of {} bytes'.format(size), offset)
    return steal(s)

cdef object dec_symbol(Reader *r, Py_ssize_t size):
    cdef Py_ssize_t offset = r.pos
    cdef const unsigned char *p = r_take(r, size)
    cdef PyObject *s = PyUnicode_DecodeASCII(<const char*> p, size, NULL)
    if s == NULL:
        PyErr_Clear()
        dec_error(r, 'invalid ASCII symbol of {} bytes'.format(size), offset)
    cdef object name = steal(s)
    cdef object sym = symbol_cache.get(name)
    if sym is None:
        sym = Symbol(name)
    return sym

cdef extern from *:
    """
    static inline PyObject *rbfly_steal(PyObject *o) { return o; }
    """
    object steal "rbfly_steal" (PyObject *o)

cdef object dec_compound(Reader *r, uint8_t code, int width, int depth):
    """
    Decode a list, map or array: size, count and the elements, checking
    that the elements use exactly ``size`` bytes.
    """
    cdef Py_ssize_t offset = r.pos - 1
    cdef Py_ssize_t size, count, end, saved_end, i, same
    cdef const unsigned char *p = r_take(r, width)
    cdef object result, key, value
    cdef set hashes
    if depth >= MAX_DEPTH:
        dec_error(r, 'AMQP value nested deeper than {} levels'.format(MAX_DEPTH), offset)
    size = p[0] if width == 1 else rbfly_load_u32(p)
    if size > r.end - r.pos:
        dec_error(
            r,
            'compound size {} exceeds the {} bytes left'.format(size, r.end - r.pos),
            offset,
        )
    if size < width:
        dec_error(r, 'compound size {} too small for its count'.format(size), offset)
    saved_end = r.end
    end = r.end = r.pos + size
    p = r_take(r, width)
    count = p[0] if width == 1 else rbfly_load_u32(p)
    if (code & 0x0f) == 0x00:  # list or array
        if (code & 0xf0) >= 0xe0:
            result = dec_array(r, count, offset, depth)
        else:
            if count > end - r.pos:
                dec_error(r, 'list count {} exceeds its size'.format(count), offset)
            result = PyList_New(count)
            for i in range(count):
                value = dec_value(r, depth + 1)
                Py_INCREF(value)
                PyList_SET_ITEM(result, i, value)
    else:
        if count % 2:
            dec_error(r, 'map has an odd number of elements: {}'.format(count), offset)
        if count > end - r.pos:
            dec_error(r, 'map count {} exceeds its size'.format(count), offset)
        result = {}
        # the keys of a large map must not share hashes: an int's, a
        # UUID's are chosen by the sender, and dictionary insertion slows
        # to a crawl (8,000 UUID keys of one hash took 8.8 s to decode)
        hashes = set() if count > 2 * MAP_HASH_CHECK else None
        same = 0
        for _ in range(count // 2):
            key = dec_value(r, depth + 1)
            value = dec_value(r, depth + 1)
            try:  # a list, a dict, or a described value with such a descriptor
                if hashes is not None:
                    h = hash(key)
                    if h in hashes:
                        same += 1
                        if same > MAX_SAME_HASH:
                            dec_error(r, 'map has more than {} keys of a hash shared with another'
                                      ' key'.format(MAX_SAME_HASH), offset)
                    else:
                        hashes.add(h)
                PyDict_SetItem(result, key, value)
            except TypeError:
                dec_error(r, 'unhashable map key of type {}'.format(type(key).__name__), offset)
    if r.pos != end:
        dec_error(
            r,
            'compound size {} does not match its {} bytes of elements'.format(
                size, r.pos - end + size
            ),
            offset,
        )
    r.end = saved_end
    return result

cdef object dec_array(Reader *r, Py_ssize_t count, Py_ssize_t offset, int depth):
    cdef object descriptor = None
    cdef list values

    cdef uint8_t elem = r_take(r, 1)[0]
    if elem == 0x00:
        descriptor = dec_value(r, depth + 1)
        elem = r_take(r, 1)[0]
    if elem not in ARRAY_TYPES:
        dec_error(r, 'invalid array element constructor 0x{:02x}'.format(elem), r.pos - 1)
    global zero_width_left
    if elem in (0x40, 0x41, 0x42, 0x43, 0x44, 0x45):
        if count > zero_width_left:
            dec_error(r, 'array count {} of zero-width elements, over the {} left for'
                      ' the data'.format(count, zero_width_left), offset)
        zero_width_left -= count
    elif count > r.end - r.pos:
        dec_error(r, 'array count {} exceeds its size'.format(count), offset)
    values = [dec_payload(r, elem, depth + 1) for _ in range(count)]
    return Array(values, ARRAY_TYPES[elem], descriptor)


#
# Python API
#

def decode_value(data: bytes | bytearray | memoryview) -> object:
    """
    Decode a single AMQP 1.0 value that spans the whole of ``data``.

    :raises rbfly.error.AMQPDecodeError: When the data is malformed or has
        trailing bytes.
    """
    cdef Reader r
    cdef Py_buffer view
    cdef int acquired = reader_for(&r, data, &view)
    zero_width_budget(r.end)
    try:
        value = dec_value(&r, 0)
        if r.pos != r.end:
            dec_error(&r, '{} trailing bytes after value'.format(r.end - r.pos), r.pos)
        return value
    finally:
        if acquired:
            PyBuffer_Release(&view)
