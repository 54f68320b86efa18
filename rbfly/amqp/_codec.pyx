# cython: language_level=3
"""
AMQP 1.0 type system codec (OASIS AMQP 1.0, part 1 "Types").

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

All integers are big-endian. The encoder always picks the smallest
encoding of a value's type; lengths are computed from the encoded bytes.
The decoder checks every length against the data left, limits nesting to
``MAX_DEPTH`` levels, and raises :py:class:`rbfly.error.AMQPDecodeError`
naming the offset of any problem.
"""

import uuid as _uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from cpython.buffer cimport (
    PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer,
)
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_SetItem
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_FromLongLong, PyLong_FromUnsignedLongLong
from cpython.ref cimport Py_INCREF, PyObject
from libc.stdint cimport (
    int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t,
)
from libc.string cimport memcpy, memmove

from .._wire._buffer cimport (
    Reader, Writer, r_take, reader_error, rbfly_load_f32, rbfly_load_f64, rbfly_load_u16,
    rbfly_load_u32, rbfly_load_u64, rbfly_store_f32, rbfly_store_f64, rbfly_store_u16,
    rbfly_store_u32, rbfly_store_u64, w_take,
)

from ..error import AMQPDecodeError, AMQPEncodeError
from ..types import Symbol
from .types import (
    AMQPType, Array, Byte, Char, Decimal32, Decimal64, Decimal128, Described, Float32, Int,
    Long, Short, Timestamp, UByte, UInt, ULong, UShort,
)

cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object s, Py_ssize_t *size)
    PyObject *PyUnicode_DecodeUTF8(const char *s, Py_ssize_t size, const char *errors)
    PyObject *PyUnicode_DecodeASCII(const char *s, Py_ssize_t size, const char *errors)
    bint PyUnicode_IS_ASCII(object s)
    long long PyLong_AsLongLongAndOverflow(object o, int *overflow) except? -1
    void PyErr_Clear()

cdef extern from "strcache.h":
    PyObject *rbfly_decode_str(const char *p, Py_ssize_t n)

cdef extern from *:
    """
    #define RBFLY_U32_MAX 0xffffffffLL
    #define RBFLY_I32_MIN (-0x7fffffffLL - 1)
    #define RBFLY_I32_MAX 0x7fffffffLL
    """
    # C constants: Cython would compare with big literals as Python ints
    const long long U32_MAX "RBFLY_U32_MAX"
    const long long I32_MIN "RBFLY_I32_MIN"
    const long long I32_MAX "RBFLY_I32_MAX"

cdef enum:
    # zero-width elements make any count cheap to declare; cap them
    MAX_ZERO_WIDTH_COUNT = 1 << 16

cdef object EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
cdef object EPOCH_NAIVE = datetime(1970, 1, 1)
cdef object ONE_MS = timedelta(milliseconds=1)
cdef object symbol_cache = Symbol.__cache__
cdef type Symbol_t = Symbol
cdef type UUID_t = _uuid.UUID
cdef type Described_t = Described
cdef type Array_t = Array
cdef dict WRAPPERS = {
    UByte: 0x50, UShort: 0x60, UInt: 0x70, ULong: 0x80,
    Byte: 0x51, Short: 0x61, Int: 0x71, Long: 0x81,
    Float32: 0x72, Char: 0x73, Timestamp: 0x83,
    Decimal32: 0x74, Decimal64: 0x84, Decimal128: 0x94,
}

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

#
# buffers
#

cdef int writer_for(Writer *w, object buffer, Py_buffer *view) except -1:
    """
    Point writer at the memory of a caller's buffer (fixed size).

    Return 1 when a buffer view was acquired; the caller must release it
    with ``PyBuffer_Release``.
    """
    w.pos = 0
    w.owner = NULL
    if type(buffer) is bytearray:
        w.data = <unsigned char*> PyByteArray_AS_STRING(buffer)
        w.cap = PyByteArray_GET_SIZE(buffer)
        return 0
    PyObject_GetBuffer(buffer, view, PyBUF_WRITABLE)
    w.data = <unsigned char*> view.buf
    w.cap = view.len
    return 1

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

#
# encoder
#

cdef int enc_value(Writer *w, object obj, int depth) except -1:
    """
    Encode a Python object with its constructor, using the smallest
    encoding of its AMQP type.
    """
    cdef type t = type(obj)
    cdef unsigned char *p
    if t is str:
        return enc_string(w, obj)
    elif t is int:
        return enc_int(w, obj)
    elif t is bytes:
        return enc_binary(w, PyBytes_AS_STRING(obj), PyBytes_GET_SIZE(obj))
    elif t is dict:
        return enc_map(w, obj, depth, False)
    elif t is list:
        return enc_list(w, obj, depth, False)
    elif t is Symbol_t:
        return enc_symbol(w, obj)
    elif t is float:
        p = w_take(w, 9)
        p[0] = 0x82
        rbfly_store_f64(p + 1, obj)
        return 0
    elif t is bool:
        p = w_take(w, 1)
        p[0] = 0x41 if obj else 0x42
        return 0
    elif obj is None:
        p = w_take(w, 1)
        p[0] = 0x40
        return 0
    return enc_other(w, obj, t, depth)

cdef int enc_other(Writer *w, object obj, type t, int depth) except -1:
    cdef object code = WRAPPERS.get(t)
    cdef unsigned char *p
    if code is not None:
        return enc_typed(w, code, obj)
    elif t is Array_t:
        return enc_array(w, obj, depth, False)
    elif t is Described_t:
        return enc_described(w, obj, depth)
    elif isinstance(obj, int):  # IntEnum, numpy-like and other int subclasses
        return enc_int(w, obj)
    elif isinstance(obj, float):
        p = w_take(w, 9)
        p[0] = 0x82
        rbfly_store_f64(p + 1, obj)
        return 0
    elif isinstance(obj, str):
        return enc_string(w, obj)
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        return enc_bytes_like(w, obj)
    elif isinstance(obj, datetime):
        p = w_take(w, 9)
        p[0] = 0x83
        rbfly_store_u64(p + 1, <uint64_t> datetime_to_ms(obj))
        return 0
    elif isinstance(obj, UUID_t):
        return enc_uuid(w, obj)
    elif isinstance(obj, Array_t):
        return enc_array(w, obj, depth, False)
    elif isinstance(obj, (list, tuple)):
        return enc_list(w, obj, depth, False)
    elif isinstance(obj, Mapping):
        return enc_map(w, obj, depth, False)
    elif isinstance(obj, Described_t):
        return enc_described(w, obj, depth)
    raise AMQPEncodeError(
        'cannot encode object of type {} as AMQP 1.0 value'.format(t.__name__)
    )

cdef int64_t datetime_to_ms(object dt) except? -1:
    cdef object delta
    try:
        delta = dt - (EPOCH_NAIVE if dt.tzinfo is None else EPOCH)
    except TypeError:  # tzinfo set, but utcoffset() returns None
        delta = dt.replace(tzinfo=None) - EPOCH_NAIVE
    return delta // ONE_MS

cdef int enc_int(Writer *w, object obj) except -1:
    cdef int overflow = 0
    cdef long long v = PyLong_AsLongLongAndOverflow(obj, &overflow)
    cdef unsigned char *p
    if overflow == 0:
        if -128 <= v <= 127:
            p = w_take(w, 2)
            p[0] = 0x54
            p[1] = <uint8_t> v
        elif I32_MIN <= v <= I32_MAX:
            p = w_take(w, 5)
            p[0] = 0x71
            rbfly_store_u32(p + 1, <uint32_t> v)
        else:
            p = w_take(w, 9)
            p[0] = 0x81
            rbfly_store_u64(p + 1, <uint64_t> v)
        return 0
    if overflow > 0 and obj <= 0xffffffffffffffff:
        p = w_take(w, 9)
        p[0] = 0x80
        rbfly_store_u64(p + 1, <uint64_t> obj)
        return 0
    raise AMQPEncodeError(
        'integer out of AMQP range -2**63..2**64-1: {}'.format(obj)
    )

cdef int enc_binary(Writer *w, const char *data, Py_ssize_t size) except -1:
    cdef unsigned char *p
    if size <= 0xff:
        p = w_take(w, 2 + size)
        p[0] = 0xa0
        p[1] = <uint8_t> size
        memcpy(p + 2, data, size)
    else:
        check_size32(size, 'binary')
        p = w_take(w, 5 + size)
        p[0] = 0xb0
        rbfly_store_u32(p + 1, <uint32_t> size)
        memcpy(p + 5, data, size)
    return 0

cdef int enc_bytes_like(Writer *w, object obj) except -1:
    cdef Py_buffer view
    PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE)
    try:
        enc_binary(w, <const char*> view.buf, view.len)
    finally:
        PyBuffer_Release(&view)
    return 0

cdef inline int check_size32(Py_ssize_t size, str what) except -1:
    if size > U32_MAX:
        raise AMQPEncodeError('{} too long for AMQP: {} bytes'.format(what, size))
    return 0

cdef const char *utf8(object value, Py_ssize_t *size) except NULL:
    cdef const char *data = PyUnicode_AsUTF8AndSize(value, size)
    if data == NULL:
        PyErr_Clear()
        raise AMQPEncodeError('string is not encodable as UTF-8: {!r}'.format(value))
    return data

cdef int enc_str_code(Writer *w, const char *data, Py_ssize_t size, uint8_t small) except -1:
    cdef unsigned char *p
    if size <= 0xff:
        p = w_take(w, 2 + size)
        p[0] = small
        p[1] = <uint8_t> size
        memcpy(p + 2, data, size)
    else:
        check_size32(size, 'string')
        p = w_take(w, 5 + size)
        p[0] = small | 0x10
        rbfly_store_u32(p + 1, <uint32_t> size)
        memcpy(p + 5, data, size)
    return 0

cdef int enc_string(Writer *w, object value) except -1:
    cdef Py_ssize_t size
    cdef const char *data = utf8(value, &size)
    return enc_str_code(w, data, size, 0xa1)

cdef int enc_symbol(Writer *w, object value) except -1:
    cdef Py_ssize_t size
    cdef object name = value.name if type(value) is Symbol_t else value
    if not PyUnicode_IS_ASCII(name):
        raise AMQPEncodeError('symbol must be ASCII: {!r}'.format(name))
    cdef const char *data = utf8(name, &size)
    return enc_str_code(w, data, size, 0xa3)

cdef int enc_uuid(Writer *w, object value) except -1:
    cdef bytes data = value.bytes
    cdef unsigned char *p = w_take(w, 17)
    p[0] = 0x98
    memcpy(p + 1, PyBytes_AS_STRING(data), 16)
    return 0

cdef int enc_described(Writer *w, object obj, int depth) except -1:
    if depth >= MAX_DEPTH:
        raise AMQPEncodeError('AMQP value nested deeper than {} levels'.format(MAX_DEPTH))
    w_take(w, 1)[0] = 0x00
    enc_value(w, obj.descriptor, depth + 1)
    return enc_value(w, obj.value, depth + 1)

cdef Py_ssize_t compound_begin(Writer *w, bint element) except -1:
    """
    Reserve the 32-bit header of a compound: constructor, size and count,
    or only size and count for an array element.
    """
    cdef Py_ssize_t start = w.pos
    w_take(w, 8 if element else 9)
    return start

cdef int compound_end(
        Writer *w, Py_ssize_t start, Py_ssize_t count, uint8_t code32, bint element
) except -1:
    """
    Finish a compound (list, map or array) begun at ``start``. A value is
    shrunk to the 8-bit form when it fits; an array element keeps the
    32-bit form of its array's element constructor.
    """
    cdef Py_ssize_t hdr = 8 if element else 9
    cdef Py_ssize_t items = w.pos - start - hdr
    cdef unsigned char *p = w.data + start
    check_size32(items + 4, 'compound')
    if count > U32_MAX:
        raise AMQPEncodeError('compound has too many elements: {}'.format(count))
    if element:
        rbfly_store_u32(p, <uint32_t> (items + 4))
        rbfly_store_u32(p + 4, <uint32_t> count)
    elif items + 1 <= 0xff and count <= 0xff:
        p[0] = code32 - 0x10
        p[1] = <uint8_t> (items + 1)
        p[2] = <uint8_t> count
        memmove(p + 3, p + 9, items)
        w.pos -= 6
    else:
        p[0] = code32
        rbfly_store_u32(p + 1, <uint32_t> (items + 4))
        rbfly_store_u32(p + 5, <uint32_t> count)
    return 0

cdef int enter(int depth) except -1:
    if depth >= MAX_DEPTH:
        raise AMQPEncodeError('AMQP value nested deeper than {} levels'.format(MAX_DEPTH))
    return 0

cdef int enc_list(Writer *w, object items, int depth, bint element) except -1:
    cdef Py_ssize_t start, count = 0
    enter(depth)
    if not element and not items:
        w_take(w, 1)[0] = 0x45
        return 0
    start = compound_begin(w, element)
    if type(items) is list:
        for item in <list> items:
            enc_value(w, item, depth + 1)
            count += 1
    else:
        for item in items:
            enc_value(w, item, depth + 1)
            count += 1
    return compound_end(w, start, count, 0xd0, element)

cdef int enc_map(Writer *w, object items, int depth, bint element) except -1:
    cdef Py_ssize_t start, count = 0
    enter(depth)
    start = compound_begin(w, element)
    if type(items) is dict:
        for key, value in (<dict> items).items():
            enc_value(w, key, depth + 1)
            enc_value(w, value, depth + 1)
            count += 2
    else:
        for key, value in items.items():
            enc_value(w, key, depth + 1)
            enc_value(w, value, depth + 1)
            count += 2
    return compound_end(w, start, count, 0xd1, element)

cdef int array_code(object arr) except -1:
    """
    Element constructor of an array: its type's code, narrowed when every
    element fits a smaller encoding of the same type.
    """
    cdef int code = arr.type
    if not arr:
        return code
    if code == 0x71 or code == 0x81:
        if all(isinstance(v, int) and -128 <= v <= 127 for v in arr):
            return 0x54 if code == 0x71 else 0x55
    elif code == 0x70 or code == 0x80:
        if all(isinstance(v, int) and 0 <= v <= 0xff for v in arr):
            return 0x52 if code == 0x70 else 0x53
    elif code == 0xb0:
        if all(isinstance(v, (bytes, bytearray, memoryview)) and len(v) <= 0xff for v in arr):
            return 0xa0
    elif code == 0xb1:
        if all(isinstance(v, str) and len(v.encode('utf-8', 'surrogatepass')) <= 0xff
               for v in arr):
            return 0xa1
    elif code == 0xb3:
        if all(type(v) is Symbol_t and len(v.name) <= 0xff for v in arr):
            return 0xa3
    return code

cdef int enc_array(Writer *w, object arr, int depth, bint element) except -1:
    cdef Py_ssize_t start, count = 0
    cdef int code = array_code(arr)
    enter(depth)
    start = compound_begin(w, element)
    if arr.descriptor is not None:
        w_take(w, 1)[0] = 0x00
        enc_value(w, arr.descriptor, depth + 1)
    w_take(w, 1)[0] = <uint8_t> code
    for item in arr:
        enc_payload(w, code, item, depth + 1)
        count += 1
    return compound_end(w, start, count, 0xf0, element)

cdef int enc_typed(Writer *w, int code, object obj) except -1:
    """
    Encode a value of an explicit AMQP type (a wrapper class), choosing the
    smallest encoding of that type.
    """
    cdef object v
    if code == 0x70:  # uint -> uint0 / smalluint / uint
        v = obj
        if v == 0:
            w_take(w, 1)[0] = 0x43
            return 0
        elif 0 < v <= 0xff:
            code = 0x52
    elif code == 0x80:  # ulong -> ulong0 / smallulong / ulong
        v = obj
        if v == 0:
            w_take(w, 1)[0] = 0x44
            return 0
        elif 0 < v <= 0xff:
            code = 0x53
    elif code == 0x71 and -128 <= obj <= 127:
        code = 0x54
    elif code == 0x81 and -128 <= obj <= 127:
        code = 0x55
    w_take(w, 1)[0] = code
    return enc_payload(w, code, obj, 0)

cdef int check_range(object value, object low, object high, str name) except -1:
    if not isinstance(value, int) or isinstance(value, bool):
        raise AMQPEncodeError(
            '{} value must be an integer, got {}'.format(name, type(value).__name__)
        )
    if not low <= value <= high:
        raise AMQPEncodeError(
            '{} value out of range {}..{}: {}'.format(name, low, high, value)
        )
    return 0

cdef int enc_payload(Writer *w, int code, object obj, int depth) except -1:
    """
    Write the bytes of a value in the exact format of constructor ``code``,
    without the constructor (array elements and typed values).
    """
    if code == 0x40:
        if obj is not None:
            raise AMQPEncodeError('null array element must be None, got {!r}'.format(obj))
    elif code == 0x56:
        if type(obj) is not bool:
            raise AMQPEncodeError('boolean value must be bool, got {!r}'.format(obj))
        w_take(w, 1)[0] = 1 if obj else 0
    elif code == 0x50 or code == 0x52 or code == 0x53:
        check_range(obj, 0, 0xff, 'ubyte')
        w_take(w, 1)[0] = <uint8_t> obj
    elif code == 0x51 or code == 0x54 or code == 0x55:
        check_range(obj, -0x80, 0x7f, 'byte')
        w_take(w, 1)[0] = <uint8_t> <int8_t> obj
    elif code == 0x60:
        check_range(obj, 0, 0xffff, 'ushort')
        rbfly_store_u16(w_take(w, 2), <uint16_t> obj)
    elif code == 0x61:
        check_range(obj, -0x8000, 0x7fff, 'short')
        rbfly_store_u16(w_take(w, 2), <uint16_t> <int16_t> obj)
    elif code == 0x70 or code == 0x74:
        check_range(obj, 0, 0xffffffff, 'uint')
        rbfly_store_u32(w_take(w, 4), <uint32_t> obj)
    elif code == 0x71:
        check_range(obj, -0x80000000, 0x7fffffff, 'int')
        rbfly_store_u32(w_take(w, 4), <uint32_t> <int32_t> obj)
    elif code == 0x80 or code == 0x84:
        check_range(obj, 0, 0xffffffffffffffff, 'ulong')
        rbfly_store_u64(w_take(w, 8), <uint64_t> obj)
    elif code == 0x81:
        check_range(obj, -0x8000000000000000, 0x7fffffffffffffff, 'long')
        rbfly_store_u64(w_take(w, 8), <uint64_t> <int64_t> obj)
    elif code == 0x83:
        if isinstance(obj, datetime):
            rbfly_store_u64(w_take(w, 8), <uint64_t> datetime_to_ms(obj))
        else:
            check_range(obj, -0x8000000000000000, 0x7fffffffffffffff, 'timestamp')
            rbfly_store_u64(w_take(w, 8), <uint64_t> <int64_t> obj)
    elif code == 0x72:
        rbfly_store_f32(w_take(w, 4), float_value(obj))
    elif code == 0x82:
        rbfly_store_f64(w_take(w, 8), float_value(obj))
    elif code == 0x73:
        if not isinstance(obj, str) or len(obj) != 1:
            raise AMQPEncodeError('char value must be one code point, got {!r}'.format(obj))
        rbfly_store_u32(w_take(w, 4), <uint32_t> ord(obj))
    elif code == 0x94:
        if not isinstance(obj, bytes) or len(obj) != 16:
            raise AMQPEncodeError('decimal128 value must be 16 bytes, got {!r}'.format(obj))
        memcpy(w_take(w, 16), PyBytes_AS_STRING(obj), 16)
    elif code == 0x98:
        if not isinstance(obj, UUID_t):
            raise AMQPEncodeError('uuid value must be uuid.UUID, got {!r}'.format(obj))
        memcpy(w_take(w, 16), PyBytes_AS_STRING(obj.bytes), 16)
    elif code == 0xa0 or code == 0xb0:
        enc_var_payload(w, code, bytes_value(obj))
    elif code == 0xa1 or code == 0xb1:
        if not isinstance(obj, str):
            raise AMQPEncodeError('string value must be str, got {!r}'.format(obj))
        enc_var_payload(w, code, obj)
    elif code == 0xa3 or code == 0xb3:
        if type(obj) is not Symbol_t:
            raise AMQPEncodeError('symbol value must be Symbol, got {!r}'.format(obj))
        enc_var_payload(w, code, obj.name)
    elif code == 0xd0:
        if not isinstance(obj, (list, tuple)):
            raise AMQPEncodeError('list value must be a list, got {!r}'.format(obj))
        enc_list(w, obj, depth, True)
    elif code == 0xd1:
        if not isinstance(obj, Mapping):
            raise AMQPEncodeError('map value must be a dict, got {!r}'.format(obj))
        enc_map(w, obj, depth, True)
    elif code == 0xf0:
        if not isinstance(obj, Array_t):
            raise AMQPEncodeError('array value must be an Array, got {!r}'.format(obj))
        enc_array(w, obj, depth, True)
    else:
        raise AMQPEncodeError('unsupported AMQP type code 0x{:02x}'.format(code))
    return 0

cdef double float_value(object obj) except? -1:
    if not isinstance(obj, (float, int)) or isinstance(obj, bool):
        raise AMQPEncodeError('float value must be a number, got {!r}'.format(obj))
    return obj

cdef bytes bytes_value(object obj):
    if isinstance(obj, bytes):
        return obj
    if isinstance(obj, (bytearray, memoryview)):
        return bytes(obj)
    raise AMQPEncodeError('binary value must be bytes, got {!r}'.format(obj))

cdef int enc_var_payload(Writer *w, int code, object value) except -1:
    cdef Py_ssize_t size
    cdef const char *data
    cdef unsigned char *p
    if isinstance(value, bytes):
        data = PyBytes_AS_STRING(value)
        size = PyBytes_GET_SIZE(value)
    else:
        if (code & 0x0f) == 0x03 and not PyUnicode_IS_ASCII(value):
            raise AMQPEncodeError('symbol must be ASCII: {!r}'.format(value))
        data = utf8(value, &size)
    if code & 0x10:
        check_size32(size, 'string')
        p = w_take(w, 4 + size)
        rbfly_store_u32(p, <uint32_t> size)
        memcpy(p + 4, data, size)
    else:
        if size > 0xff:
            raise AMQPEncodeError('internal error: 8-bit size overflow')  # pragma: no cover
        p = w_take(w, 1 + size)
        p[0] = <uint8_t> size
        memcpy(p + 1, data, size)
    return 0

#
# decoder
#

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
    cdef Py_ssize_t size, count, end, saved_end, i
    cdef const unsigned char *p = r_take(r, width)
    cdef object result, key, value
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
        for _ in range(count // 2):
            key = dec_value(r, depth + 1)
            value = dec_value(r, depth + 1)
            try:  # a list, a dict, or a described value with such a descriptor
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
    if elem in (0x40, 0x41, 0x42, 0x43, 0x44, 0x45):
        if count > MAX_ZERO_WIDTH_COUNT:
            dec_error(r, 'array count {} of zero-width elements'.format(count), offset)
    elif count > r.end - r.pos:
        dec_error(r, 'array count {} exceeds its size'.format(count), offset)
    values = [dec_payload(r, elem, depth + 1) for _ in range(count)]
    return Array(values, ARRAY_TYPES[elem], descriptor)

#
# Python API
#

def encode_value(obj: object) -> bytes:
    """
    Encode a single Python value as AMQP 1.0 data.

    :param obj: Value to encode (see :py:mod:`rbfly.amqp.types` for the
        type mapping).
    """
    cdef bytearray buffer = bytearray(64)
    cdef Writer w
    w.data = <unsigned char*> PyByteArray_AS_STRING(buffer)
    w.cap = 64
    w.pos = 0
    w.owner = <PyObject*> buffer
    enc_value(&w, obj, 0)
    return PyBytes_FromStringAndSize(<const char*> w.data, w.pos)

def decode_value(data: bytes | bytearray | memoryview) -> object:
    """
    Decode a single AMQP 1.0 value that spans the whole of ``data``.

    :raises rbfly.error.AMQPDecodeError: When the data is malformed or has
        trailing bytes.
    """
    cdef Reader r
    cdef Py_buffer view
    cdef int acquired = reader_for(&r, data, &view)
    try:
        value = dec_value(&r, 0)
        if r.pos != r.end:
            dec_error(&r, '{} trailing bytes after value'.format(r.end - r.pos), r.pos)
        return value
    finally:
        if acquired:
            PyBuffer_Release(&view)
