# cython: language_level=3
"""
AMQP 1.0 message sections: encoding a :py:class:`~rbfly.amqp.MessageCtx`
into the message format, and decoding it (OASIS AMQP 1.0, part 3.2
"Message Format").

Grammar::

    bare-message      = [ properties ] [ application-properties ]
                        application-data
    annotated-message = [ header ] [ delivery-annotations ]
                        [ message-annotations ] bare-message [ footer ]
    application-data  = 1*data / 1*amqp-sequence / amqp-value

Each section is a described value: ``0x00 0x53 <code>`` followed by a list
(header 0x70, properties 0x73), a map (annotations 0x71, 0x72,
application-properties 0x74, footer 0x78), binary (data 0x75), a list
(amqp-sequence 0x76) or any value (amqp-value 0x77).

The decoder accepts section descriptors as ``smallulong``, ``ulong`` and
symbols (``amqp:header:list`` ...), and sections in any order (other
clients write some out of the grammar's order), but no section twice and
no body mixing kinds of sections. Sections whose fields are all default
are not encoded.
"""

from cpython.buffer cimport PyBuffer_Release
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.bytearray cimport PyByteArray_AS_STRING
from cpython.ref cimport PyObject
from cpython.unicode cimport PyUnicode_GET_LENGTH
from libc.stdint cimport uint8_t, uint64_t
from libc.string cimport memcpy

from .._wire._buffer cimport Reader, Writer, r_take, rbfly_load_u32, rbfly_load_u64, w_take
from ._decoder cimport dec_binary, dec_payload, dec_value, reader_for, zero_width_budget
from ._encoder cimport enc_binary, enc_bytes_like, enc_value, writer_for
from ._message cimport AMQPHeader, AMQPProperties, MessageCtx

cdef extern from "Python.h":
    bint PyUnicode_IS_COMPACT_ASCII(object s)
    const void *PyUnicode_DATA(object s)

from ..error import AMQPDecodeError, AMQPEncodeError, RbFlyBufferError
from ..types import Symbol
from .types import DataSections, SequenceSections, UByte, UInt, ULong

cdef enum:
    SEC_HEADER = 0x70
    SEC_DELIVERY_ANNOTATIONS = 0x71
    SEC_ANNOTATIONS = 0x72
    SEC_PROPERTIES = 0x73
    SEC_APP_PROPERTIES = 0x74
    SEC_DATA = 0x75
    SEC_SEQUENCE = 0x76
    SEC_VALUE = 0x77
    SEC_FOOTER = 0x78

cdef dict SECTION_NAMES = {
    Symbol('amqp:header:list'): SEC_HEADER,
    Symbol('amqp:delivery-annotations:map'): SEC_DELIVERY_ANNOTATIONS,
    Symbol('amqp:message-annotations:map'): SEC_ANNOTATIONS,
    Symbol('amqp:properties:list'): SEC_PROPERTIES,
    Symbol('amqp:application-properties:map'): SEC_APP_PROPERTIES,
    Symbol('amqp:data:binary'): SEC_DATA,
    Symbol('amqp:amqp-sequence:list'): SEC_SEQUENCE,
    Symbol('amqp:amqp-value:*'): SEC_VALUE,
    Symbol('amqp:footer:map'): SEC_FOOTER,
}

cdef type DataSections_t = DataSections
cdef type SequenceSections_t = SequenceSections

#
# encoder
#

cdef inline int enc_descriptor(Writer *w, uint8_t code) except -1:
    cdef unsigned char *p = w_take(w, 3)
    p[0] = 0x00
    p[1] = 0x53
    p[2] = code
    return 0

cdef list trim(list fields):
    while fields and fields[len(fields) - 1] is None:
        fields.pop()
    return fields

cdef int enc_message(Writer *w, MessageCtx msg) except -1:
    """
    Encode a message's sections in the order the specification requires.
    """
    cdef object body = msg._body
    cdef AMQPHeader header
    cdef AMQPProperties props
    if msg._header is not None:
        header = msg._header
        if not header.is_default():
            enc_descriptor(w, SEC_HEADER)
            enc_value(w, [
                header.durable, UByte(header.priority),
                None if header.ttl is None else UInt(header.ttl),
                header.first_acquirer, UInt(header.delivery_count),
            ], 0)
    if msg._delivery_annotations:
        enc_descriptor(w, SEC_DELIVERY_ANNOTATIONS)
        enc_value(w, msg._delivery_annotations, 0)
    if msg._annotations:
        enc_descriptor(w, SEC_ANNOTATIONS)
        enc_value(w, msg._annotations, 0)
    if msg._properties is not None:
        props = msg._properties
        fields = trim(props.fields())
        if fields:
            if fields[11:12] and fields[11] is not None:
                fields[11] = UInt(fields[11])
            for i in (0, 5):  # message-id-ulong is ulong, never (small)int/long
                if i < len(fields) and isinstance(fields[i], int) \
                        and not isinstance(fields[i], bool):
                    fields[i] = ULong(fields[i])
            enc_descriptor(w, SEC_PROPERTIES)
            enc_properties(w, fields)
    if msg._app_properties:
        enc_descriptor(w, SEC_APP_PROPERTIES)
        enc_value(w, msg._app_properties, 0)

    enc_body(w, body)

    if msg._footer:
        enc_descriptor(w, SEC_FOOTER)
        enc_value(w, msg._footer, 0)
    return 0

cdef int enc_body(Writer *w, object body) except -1:
    """
    Encode the body sections of a message; alone, the whole message of a
    plain body (no other sections), which publishers send without making a
    :py:class:`MessageCtx` for it.
    """
    cdef type t = type(body)
    cdef Py_ssize_t size
    cdef unsigned char *p
    if t is str and PyUnicode_IS_COMPACT_ASCII(body) and PyUnicode_GET_LENGTH(body) <= 0xff:
        # the most common body, a short ASCII string: its characters are
        # its UTF-8 bytes, written with the section's descriptor at once
        # (through enc_value: 170 instructions a message, here about 60;
        # Callgrind, ``python -m perf.instructions many``)
        size = PyUnicode_GET_LENGTH(body)
        p = w_take(w, 5 + size)
        p[0] = 0x00
        p[1] = 0x53
        p[2] = SEC_VALUE
        p[3] = 0xa1  # str8-utf8
        p[4] = <uint8_t> size
        memcpy(p + 5, PyUnicode_DATA(body), size)
    elif t is bytes:
        enc_descriptor(w, SEC_DATA)
        enc_binary(w, PyBytes_AS_STRING(body), PyBytes_GET_SIZE(body))
    elif t is DataSections_t:
        if not body:
            raise AMQPEncodeError('message body of DataSections needs at least one section')
        for item in body:
            if not isinstance(item, (bytes, bytearray, memoryview)):
                raise AMQPEncodeError(
                    'data section must be bytes, got {}'.format(type(item).__name__)
                )
            enc_descriptor(w, SEC_DATA)
            enc_bytes_like(w, item)
    elif t is SequenceSections_t:
        if not body:
            raise AMQPEncodeError('message body of SequenceSections needs at least one section')
        for item in body:
            if not isinstance(item, (list, tuple)):
                raise AMQPEncodeError(
                    'amqp-sequence section must be a list, got {}'.format(type(item).__name__)
                )
            enc_descriptor(w, SEC_SEQUENCE)
            enc_value(w, list(item), 0)
    elif t is bytearray or t is memoryview:
        enc_descriptor(w, SEC_DATA)
        enc_bytes_like(w, body)
    else:
        enc_descriptor(w, SEC_VALUE)
        enc_value(w, body, 0)
    return 0

cdef int enc_properties(Writer *w, list fields) except -1:
    # address, string and symbol fields must not silently change type
    for i in (2, 3, 4, 10, 12):
        if i < len(fields) and fields[i] is not None and not isinstance(fields[i], str):
            raise AMQPEncodeError('message property {} must be str, got {!r}'.format(
                PROPERTY_NAMES[i], fields[i]
            ))
    for i in (6, 7):
        if i < len(fields) and fields[i] is not None and type(fields[i]) is not Symbol:
            if isinstance(fields[i], str):
                fields[i] = Symbol(fields[i])
            else:
                raise AMQPEncodeError('message property {} must be Symbol, got {!r}'.format(
                    PROPERTY_NAMES[i], fields[i]
                ))
    return enc_value(w, fields, 0)

cdef tuple PROPERTY_NAMES = (
    'message_id', 'user_id', 'to', 'subject', 'reply_to', 'correlation_id',
    'content_type', 'content_encoding', 'absolute_expiry_time', 'creation_time',
    'group_id', 'group_sequence', 'reply_to_group_id',
)

def encode_amqp(buffer: bytearray | memoryview, message: MessageCtx) -> int:
    """
    Encode an AMQP message into ``buffer``, starting at its beginning.

    :param buffer: Writable buffer (``bytearray``, or any object with a
        writable buffer interface).
    :param message: Message to encode.
    :return: Number of bytes written.

    :raises rbfly.error.RbFlyBufferError: When the message does not fit.
    :raises rbfly.error.AMQPEncodeError: When a value cannot be encoded.
    """
    cdef Writer w
    cdef Py_buffer view
    if type(message) is not MessageCtx:
        raise AMQPEncodeError(
            'message must be MessageCtx, got {}'.format(type(message).__name__)
        )
    cdef int acquired = writer_for(&w, buffer, &view)
    cdef bytes data
    try:
        try:
            enc_message(&w, message)
        except RbFlyBufferError:
            # a compound reserves room for its 32-bit header until it is
            # complete, so a message that fits only just overflows: retry
            data = encode_message(message)
            if PyBytes_GET_SIZE(data) > w.cap:
                raise
            memcpy(w.data, PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
            w.pos = PyBytes_GET_SIZE(data)
    finally:
        if acquired:
            PyBuffer_Release(&view)
    return w.pos

def encode_message(message: MessageCtx) -> bytes:
    """
    Encode an AMQP message and return its bytes.
    """
    cdef bytearray buffer = bytearray(256)
    cdef Writer w
    if type(message) is not MessageCtx:
        raise AMQPEncodeError(
            'message must be MessageCtx, got {}'.format(type(message).__name__)
        )
    w.data = <unsigned char*> PyByteArray_AS_STRING(buffer)
    w.cap = 256
    w.pos = 0
    w.owner = <PyObject*> buffer
    enc_message(&w, message)
    return PyBytes_FromStringAndSize(<const char*> w.data, w.pos)

#
# decoder
#

cdef int section_code(Reader *r) except -1:
    """
    Read a section's descriptor and return its code.
    """
    cdef Py_ssize_t offset = r.pos
    cdef const unsigned char *p = r_take(r, 2)
    cdef uint64_t code
    if p[0] != 0x00:
        raise AMQPDecodeError(
            'expected a described message section, got constructor 0x{:02x}'.format(p[0]),
            offset,
        )
    if p[1] == 0x53:
        code = r_take(r, 1)[0]
    elif p[1] == 0x80:
        code = rbfly_load_u64(r_take(r, 8))
    elif p[1] == 0xa3 or p[1] == 0xb3:
        name = dec_payload(r, p[1], 0)
        if name not in SECTION_NAMES:
            raise AMQPDecodeError('unknown message section {!r}'.format(str(name)), offset)
        return SECTION_NAMES[name]
    else:
        raise AMQPDecodeError(
            'invalid section descriptor constructor 0x{:02x}'.format(p[1]), offset + 1
        )
    if code < SEC_HEADER or code > SEC_FOOTER:
        raise AMQPDecodeError('unknown message section 0x{:x}'.format(code), offset)
    return <int> code

cdef object dec_map_section(Reader *r, Py_ssize_t offset, str name):
    value = dec_value(r, 0)
    if value is not None and type(value) is not dict:
        raise AMQPDecodeError('{} section must be a map'.format(name), offset)
    return value

cdef object dec_list_section(Reader *r, Py_ssize_t offset, str name, Py_ssize_t size):
    value = dec_value(r, 0)
    if value is None:
        return [None] * size
    if type(value) is not list or len(<list> value) > size:
        raise AMQPDecodeError('{} section must be a list of at most {} fields'.format(
            name, size
        ), offset)
    return value + [None] * (size - len(<list> value))

cdef MessageCtx dec_message(Reader *r):
    """
    Decode all sections of a message from the reader.
    """
    cdef MessageCtx msg = MessageCtx.__new__(MessageCtx)
    cdef int code, body_code = 0, seen = 0
    cdef Py_ssize_t offset
    cdef const unsigned char *p
    cdef object body = None
    cdef list fields
    zero_width_budget(r.end - r.pos)
    while r.pos < r.end:
        offset = r.pos
        p = r.data + r.pos
        # fast path: data and amqp-value sections with smallulong descriptor
        if r.end - r.pos >= 3 and p[0] == 0 and p[1] == 0x53:
            r.pos += 3
            code = p[2]
            if code < SEC_HEADER or code > SEC_FOOTER:
                raise AMQPDecodeError('unknown message section 0x{:x}'.format(code), offset)
        else:
            code = section_code(r)
        # sections in any order are accepted (rstream writes delivery
        # annotations after the body); a section other than the body's
        # given twice, or a body mixing kinds of section, is an error
        if SEC_DATA <= code <= SEC_VALUE:
            if body_code and (body_code != code or code == SEC_VALUE):
                raise AMQPDecodeError(
                    'message body mixes sections 0x{:x} and 0x{:x}'.format(body_code, code),
                    offset,
                )
        elif seen & (1 << (code - SEC_HEADER)):
            raise AMQPDecodeError('message section 0x{:x} repeated'.format(code), offset)
        seen |= 1 << (code - SEC_HEADER)
        if code == SEC_DATA:
            p = r_take(r, 1)
            if p[0] == 0xa0:
                value = dec_binary(r, r_take(r, 1)[0])
            elif p[0] == 0xb0:
                value = dec_binary(r, rbfly_load_u32(r_take(r, 4)))
            else:
                raise AMQPDecodeError('data section must be binary', offset)
            if body_code == SEC_DATA:
                if type(body) is not DataSections_t:
                    body = DataSections([body])
                body.append(value)
            else:
                body = value
            body_code = code
        elif code == SEC_VALUE:
            body = dec_value(r, 0)
            body_code = code
        elif code == SEC_SEQUENCE:
            value = dec_value(r, 0)
            if type(value) is not list:
                raise AMQPDecodeError('amqp-sequence section must be a list', offset)
            if body_code == 0:
                body = SequenceSections()
            body.append(value)
            body_code = code
        elif code == SEC_APP_PROPERTIES:
            msg._app_properties = dec_map_section(r, offset, 'application-properties')
        elif code == SEC_ANNOTATIONS:
            msg._annotations = dec_map_section(r, offset, 'message-annotations')
        elif code == SEC_HEADER:
            fields = dec_list_section(r, offset, 'header', 5)
            try:  # AMQPHeader checks the types of its fields, and makes ints of floats
                msg._header = AMQPHeader(
                    bool(fields[0]), 4 if fields[1] is None else fields[1], fields[2],
                    bool(fields[3]), 0 if fields[4] is None else fields[4],
                )
            except (TypeError, ValueError, OverflowError) as ex:  # e.g. a float NaN ttl
                raise AMQPDecodeError('invalid header section: {}'.format(ex), offset) from None
        elif code == SEC_DELIVERY_ANNOTATIONS:
            msg._delivery_annotations = dec_map_section(r, offset, 'delivery-annotations')
        elif code == SEC_PROPERTIES:
            fields = dec_list_section(r, offset, 'properties', 13)
            try:  # AMQPProperties checks the types of its fields
                msg._properties = AMQPProperties(*fields)
            except (TypeError, ValueError, OverflowError) as ex:
                raise AMQPDecodeError(
                    'invalid properties section: {}'.format(ex), offset
                ) from None
        elif code == SEC_FOOTER:
            msg._footer = dec_map_section(r, offset, 'footer')
    msg._body = body
    return msg

def decode_amqp(buffer: bytes | bytearray | memoryview) -> MessageCtx:
    """
    Decode an AMQP message.

    :param buffer: The message's bytes; all of them must belong to the
        message.

    :raises rbfly.error.AMQPDecodeError: When the data is malformed; the
        exception names the offset of the problem.
    """
    cdef Reader r
    cdef Py_buffer view
    cdef int acquired = reader_for(&r, buffer, &view)
    try:
        return dec_message(&r)
    finally:
        if acquired:
            PyBuffer_Release(&view)
