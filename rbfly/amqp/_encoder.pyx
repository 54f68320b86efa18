# cython: language_level=3
"""
Encoder of the AMQP 1.0 type system (OASIS AMQP 1.0, part 1 "Types").

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
Nesting is limited to ``MAX_DEPTH`` levels; a value without an AMQP
mapping raises :py:class:`rbfly.error.AMQPEncodeError` naming it.
"""

import uuid as _uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.ref cimport PyObject
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy, memmove

from .._wire._buffer cimport (
    Writer, rbfly_store_f32, rbfly_store_f64, rbfly_store_u16, rbfly_store_u32,
    rbfly_store_u64, w_take,
)

from ..error import AMQPEncodeError
from ..types import Symbol
from .types import (
    Array, Byte, Char, Decimal32, Decimal64, Decimal128, Described, Float32, Int, Long, Short,
    Timestamp, UByte, UInt, ULong, UShort,
)

cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object s, Py_ssize_t *size)
    bint PyUnicode_IS_ASCII(object s)
    long long PyLong_AsLongLongAndOverflow(object o, int *overflow) except? -1
    void PyErr_Clear()

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

cdef object EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
cdef object EPOCH_NAIVE = datetime(1970, 1, 1)
cdef object ONE_MS = timedelta(milliseconds=1)
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
