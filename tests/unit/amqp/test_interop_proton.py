"""
Interoperability of the AMQP 1.0 codec with Qpid Proton
(python-qpid-proton): bytes encoded by rbfly decode identically in Proton,
and bytes encoded by Proton decode identically in rbfly.

Proton's Python types are mapped to rbfly's explicitly, see
:py:func:`from_proton` and :py:func:`to_proton`.
"""

from __future__ import annotations

import typing as tp
import uuid
from datetime import UTC, datetime, timedelta

import proton
import pytest
from hypothesis import assume, given, settings

from rbfly.amqp import (
    AMQPHeader,
    AMQPProperties,
    AMQPType,
    Array,
    Byte,
    Char,
    DataSections,
    Decimal32,
    Decimal64,
    Decimal128,
    Described,
    Float32,
    Int,
    Long,
    MessageCtx,
    SequenceSections,
    Short,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    UShort,
    decode_amqp,
    decode_value,
    encode_message,
    encode_value,
)

from ._helpers import EPOCH, assert_same, expected_decoded, values

PROTON_TYPES = {
    AMQPType.NULL: proton.Data.NULL, AMQPType.BOOLEAN: proton.Data.BOOL,
    AMQPType.UBYTE: proton.Data.UBYTE, AMQPType.USHORT: proton.Data.USHORT,
    AMQPType.UINT: proton.Data.UINT, AMQPType.ULONG: proton.Data.ULONG,
    AMQPType.BYTE: proton.Data.BYTE, AMQPType.SHORT: proton.Data.SHORT,
    AMQPType.INT: proton.Data.INT, AMQPType.LONG: proton.Data.LONG,
    AMQPType.FLOAT: proton.Data.FLOAT, AMQPType.DOUBLE: proton.Data.DOUBLE,
    AMQPType.DECIMAL32: proton.Data.DECIMAL32, AMQPType.DECIMAL64: proton.Data.DECIMAL64,
    AMQPType.DECIMAL128: proton.Data.DECIMAL128, AMQPType.CHAR: proton.Data.CHAR,
    AMQPType.TIMESTAMP: proton.Data.TIMESTAMP, AMQPType.UUID: proton.Data.UUID,
    AMQPType.BINARY: proton.Data.BINARY, AMQPType.STRING: proton.Data.STRING,
    AMQPType.SYMBOL: proton.Data.SYMBOL, AMQPType.LIST: proton.Data.LIST,
    AMQPType.MAP: proton.Data.MAP, AMQPType.ARRAY: proton.Data.ARRAY,
}
RBFLY_TYPES = {v: k for k, v in PROTON_TYPES.items()}

# Proton type -> rbfly type, for types mapped one to one
FROM_PROTON: dict[type, tp.Callable[[tp.Any], object]] = {
    proton.ubyte: UByte, proton.ushort: UShort, proton.uint: UInt, proton.ulong: ULong,
    proton.byte: Byte, proton.short: Short, proton.int32: int, proton.float32: Float32,
    proton.decimal32: Decimal32, proton.decimal64: Decimal64,
    proton.decimal128: lambda v: Decimal128(bytes(v)), proton.char: Char,
    proton.symbol: Symbol, memoryview: bytes,
}
TO_PROTON: dict[type, tp.Callable[[tp.Any], object]] = {
    UByte: proton.ubyte, UShort: proton.ushort, UInt: proton.uint, ULong: proton.ulong,
    Byte: proton.byte, Short: proton.short, Int: proton.int32, Long: int,
    Float32: proton.float32, Decimal32: proton.decimal32, Decimal64: proton.decimal64,
    Decimal128: lambda v: proton.decimal128(bytes(v)), Char: proton.char,
    Symbol: lambda v: proton.symbol(v.name), Timestamp: proton.timestamp,
    bytearray: bytes, memoryview: bytes,
}


def from_proton(value: tp.Any) -> tp.Any:
    """Convert a value decoded by Proton to the rbfly value it stands for."""
    t = type(value)
    if t in FROM_PROTON:
        return FROM_PROTON[t](value)
    if t is proton.timestamp:
        try:
            return EPOCH + timedelta(milliseconds=value)
        except OverflowError:
            return Timestamp(value)
    if t is proton.Array:
        return Array(
            [from_proton(v) for v in value.elements], RBFLY_TYPES[value.type],
            None if value.descriptor is proton.UNDESCRIBED
            else from_proton(tp.cast(tp.Any, value.descriptor)),
        )
    if t is proton.Described:
        return Described(from_proton(value.descriptor), from_proton(value.value))
    if isinstance(value, list):
        return [from_proton(v) for v in value]
    if isinstance(value, dict):
        return {from_proton(k): from_proton(v) for k, v in value.items()}
    return value


def to_proton(value: tp.Any) -> tp.Any:
    """Convert an rbfly value to the Proton value of the same AMQP type."""
    t = type(value)
    if t in TO_PROTON:
        return TO_PROTON[t](value)
    if t is int:  # the type rbfly picks for a Python int
        if -2**31 <= value < 2**31:
            return proton.int32(value)
        return value if value < 2**63 else proton.ulong(value)
    if isinstance(value, datetime):
        return proton.timestamp((value - EPOCH) // timedelta(milliseconds=1))
    if isinstance(value, Array):
        convert: tp.Callable[[tp.Any], tp.Any] = {
            AMQPType.INT: proton.int32, AMQPType.LONG: int,
        }.get(value.type, to_proton)
        descriptor: tp.Any = proton.UNDESCRIBED if value.descriptor is None \
            else to_proton(value.descriptor)
        return proton.Array(descriptor, PROTON_TYPES[value.type], *(convert(v) for v in value))
    if isinstance(value, Described):
        return proton.Described(to_proton(value.descriptor), to_proton(value.value))
    if isinstance(value, (list, tuple)):
        return [to_proton(v) for v in value]
    if isinstance(value, dict):
        return {to_proton(k): to_proton(v) for k, v in value.items()}
    return value


def proton_limit(value: tp.Any) -> str | None:
    """
    Say why Proton's Python binding cannot decode ``value``, if it cannot.

    - ``proton.Data.get_object`` decodes a described value whose value is
      described as the inner described value alone (Proton's own encoding
      of it is the same as rbfly's);
    - Proton decodes binary as a writable memoryview, which cannot be a
      dict key;
    - ``proton.symbol`` is a ``str``, so a map cannot have both a string and
      a symbol key of the same text; ``proton.timestamp`` is an ``int``, so a
      map cannot have both a timestamp and an integer (or boolean) key of
      the same value.
    """
    if isinstance(value, Described):
        if isinstance(value.value, Described):
            return 'proton.Data cannot decode a described value of a described value'
        return proton_limit(value.descriptor) or proton_limit(value.value)
    if isinstance(value, dict):
        if any(isinstance(k, (bytes, bytearray, memoryview)) for k in value):
            return 'proton.Data decodes binary map keys as unhashable memoryviews'
        if any(isinstance(k, Symbol) and k.name in value for k in value):
            return 'proton.symbol equals str, so a map with both loses a key'
        try:
            distinct = len({to_proton(k) for k in value})
        except TypeError:
            distinct = len(value)
        if distinct < len(value):
            # e.g. proton.timestamp is an int: timestamp 0 equals False and 0
            return "Proton's types of different keys compare equal, so the map loses a key"
        return next(filter(None, map(proton_limit, [*value, *value.values()])), None)
    if isinstance(value, (list, tuple)):
        return next(filter(None, map(proton_limit, [*value, getattr(value, 'descriptor', None)])),
                    None)
    return None


def proton_decode(data: bytes, convert: bool = True) -> tp.Any:
    """
    Decode a value with proton.Data, converted to rbfly types while the
    Data object is alive (Proton decodes binary as a memoryview into it).
    """
    d = proton.Data()
    assert d.decode(data) == len(data)
    value = d.get_object()
    return from_proton(value) if convert else value


def proton_encode(value: tp.Any) -> bytes:
    d = proton.Data()
    d.put_object(value)
    return bytes(d.encode())


TS = datetime(2022, 8, 14, 16, 1, 13, 567000, tzinfo=UTC)
UUID = uuid.UUID('12345678-9abc-def0-1234-56789abcdef0')

VALUES: list[tp.Any] = [
    None, True, False,
    UByte(0), UByte(255), UShort(65535), UInt(0), UInt(255), UInt(2**32 - 1), ULong(0),
    ULong(255), ULong(2**64 - 1), Byte(-128), Short(-32768), Int(-1), Int(2**31 - 1),
    Long(-1), Long(-2**63),
    0, -128, 2**31 - 1, -2**31 - 1, 2**63 - 1, -2**63, 2**63, 2**64 - 1,
    Float32(1.5), Float32(float('-inf')), Float32(float('nan')), 1.5, -0.0, float('nan'),
    Decimal32(0x22500001), Decimal64(2**64 - 1), Decimal128(bytes(range(16))),
    Char('a'), Char('ż'), Char('\U0001f600'),
    TS, datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC), datetime(1, 1, 1, tzinfo=UTC),
    Timestamp(2**63 - 1), Timestamp(-2**63),
    UUID, b'', b'\x00\xff', b'x' * 300, '', 'ż' * 128, 'a' * 255, '\U0001f600',
    Symbol(''), Symbol('abc'), Symbol('s' * 300),
    [], [None], [1, 'a', [b'b']], list(range(300)), (1, 2), {}, {'a': 1},
    {Symbol('k'): None, ULong(1): [True], 'n': {'m': 1.5}}, {str(i): i for i in range(100)},
    Array([1, 2], AMQPType.INT), Array([1, 300], AMQPType.INT), Array([], AMQPType.INT),
    Array([1, -1], AMQPType.LONG), Array([2**40], AMQPType.LONG),
    Array([UInt(0), UInt(2**32 - 1)], AMQPType.UINT), Array([ULong(7)], AMQPType.ULONG),
    Array([UByte(1)], AMQPType.UBYTE), Array([Short(-1)], AMQPType.SHORT),
    Array(['a', 'ż' * 200], AMQPType.STRING), Array([Symbol('a')], AMQPType.SYMBOL),
    Array([b'a', b'b' * 300], AMQPType.BINARY), Array([True, False], AMQPType.BOOLEAN),
    Array([None, None], AMQPType.NULL), Array([1.5], AMQPType.DOUBLE),
    Array([Float32(0.5)], AMQPType.FLOAT), Array([Char('a')], AMQPType.CHAR),
    Array([TS], AMQPType.TIMESTAMP), Array([UUID], AMQPType.UUID),
    Array([Decimal32(1)], AMQPType.DECIMAL32), Array([Decimal64(1)], AMQPType.DECIMAL64),
    Array([Decimal128(b'\x01' * 16)], AMQPType.DECIMAL128),
    Array([[1], []], AMQPType.LIST), Array([{Symbol('a'): 1}], AMQPType.MAP),
    Array([Array([1], AMQPType.INT)], AMQPType.ARRAY),
    Array(['a'], AMQPType.STRING, Symbol('d')), Array([1], AMQPType.INT, ULong(5)),
    Described(ULong(0x70), [True]), Described(Symbol('x:y'), 'v'),
    Described(Symbol('n'), Described(ULong(1), {'a': [1]})),
    [Array([1], AMQPType.INT), Described(Symbol('d'), None), {UUID: TS}],
]


@pytest.mark.parametrize('value', VALUES, ids=repr)
def test_rbfly_to_proton(value: object) -> None:
    """A value encoded by rbfly decodes in Proton to the same value."""
    if reason := proton_limit(value):
        pytest.skip(reason)
    data = encode_value(value)
    assert_same(proton_decode(data), expected_decoded(value))


@pytest.mark.parametrize('value', VALUES, ids=repr)
def test_proton_to_rbfly(value: object) -> None:
    """A value encoded by Proton decodes in rbfly to the same value."""
    data = proton_encode(to_proton(value))
    assert_same(decode_value(data), expected_decoded(value))


def test_proton_int_mapping() -> None:
    """Python ints: Proton encodes long, rbfly the smallest of smallint/int/long/ulong."""
    assert proton_encode(5) == b'\x55\x05'
    assert encode_value(5) == b'\x54\x05'
    assert_same(decode_value(proton_encode(5)), 5)
    assert_same(proton_decode(encode_value(5), False), proton.int32(5))
    assert_same(proton_decode(encode_value(2**63), False), proton.ulong(2**63))

#
# messages
#

def proton_message(data: bytes) -> proton.Message:
    msg = proton.Message()
    msg.decode(data)
    return msg


def message_id_from_proton(value: tp.Any) -> tp.Any:
    """proton.Message gives a ulong message id as int; an id is never a signed int."""
    return ULong(value) if type(value) is int else from_proton(value)


def ms(seconds: float) -> int:
    return round(seconds * 1000)


FULL = MessageCtx(
    {'a': [1, 2]},
    header=AMQPHeader(durable=True, priority=6, ttl=132000, first_acquirer=True, delivery_count=3),
    delivery_annotations={Symbol('x-d'): 1},
    annotations={Symbol('x-a'): 'v', ULong(5): UUID},
    properties=AMQPProperties(
        message_id=31, user_id=b'user', to='/q', subject='s', reply_to='/r',
        correlation_id=UUID, content_type=Symbol('text/plain'),
        content_encoding=Symbol('gzip'), absolute_expiry_time=TS,
        creation_time=datetime(2000, 1, 2, tzinfo=UTC), group_id='g', group_sequence=5,
        reply_to_group_id='rg',
    ),
    app_properties={'k': 'v', 'n': 1, 't': TS},
    footer={Symbol('x-f'): b'\x01'},
)


def test_message_rbfly_to_proton() -> None:
    """Every section of an rbfly message decodes in proton.Message (which has no footer)."""
    m = proton_message(encode_message(FULL))
    header, props = FULL.header, FULL.properties
    assert (m.durable, m.priority, ms(m.ttl), m.first_acquirer, m.delivery_count) == (
        header.durable, header.priority, header.ttl, header.first_acquirer,
        header.delivery_count,
    )
    assert from_proton(m.instructions) == FULL.delivery_annotations
    assert_same(from_proton(m.annotations), FULL.annotations)
    assert_same(message_id_from_proton(m.id), ULong(31))
    assert_same(bytes(m.user_id), b'user')
    assert (m.address, m.subject, m.reply_to) == ('/q', 's', '/r')
    assert_same(m.correlation_id, UUID)
    assert_same(from_proton(m.content_type), Symbol('text/plain'))
    assert_same(from_proton(m.content_encoding), Symbol('gzip'))
    assert ms(m.expiry_time) == ms(TS.timestamp())
    assert tp.cast(datetime, props.creation_time).timestamp() == m.creation_time
    assert (m.group_id, m.group_sequence, m.reply_to_group_id) == ('g', 5, 'rg')
    assert_same(from_proton(m.properties), FULL.app_properties)
    assert_same(from_proton(m.body), FULL.body)
    assert m.inferred is False


def test_message_proton_to_rbfly() -> None:
    """Every section of a proton.Message decodes in rbfly."""
    m = proton.Message(
        body={'a': [1, 2]}, durable=True, priority=6, ttl=132.0, first_acquirer=True,
        delivery_count=3, id=31, user_id=b'user', address='/q', subject='s', reply_to='/r',
        correlation_id=UUID, content_type='text/plain', content_encoding='gzip',
        expiry_time=TS.timestamp(), creation_time=946771200.0, group_id='g',
        group_sequence=5, reply_to_group_id='rg', instructions={proton.symbol('x-d'): 1},
        annotations={proton.symbol('x-a'): 'v', proton.ulong(5): UUID},
        properties={'k': 'v', 'n': 1, 't': proton.timestamp(ms(TS.timestamp()))},
    )
    msg = decode_amqp(bytes(m.encode()))
    assert msg.header == FULL.header
    assert msg.delivery_annotations == FULL.delivery_annotations
    assert_same(msg.annotations, FULL.annotations)
    assert msg.properties == FULL.properties
    assert_same(msg.properties.message_id, ULong(31))
    assert_same(msg.properties.content_type, Symbol('text/plain'))
    assert_same(msg.app_properties, FULL.app_properties)
    assert_same(msg.body, FULL.body)


def test_footer_interop() -> None:
    """
    Footers: proton.Message has no footer API, so the footer section is
    encoded with proton.Data and appended to Proton's message.
    """
    footer = proton.Data()
    footer.put_object(proton.Described(proton.ulong(0x78), {proton.symbol('x-f'): b'\x01'}))
    data = bytes(proton.Message(body='ab').encode()) + bytes(footer.encode())
    msg = decode_amqp(data)
    assert_same(msg.footer, {Symbol('x-f'): b'\x01'})
    assert msg.body == 'ab'
    # rbfly's footer is accepted by Proton; the rest of the message is intact
    assert proton_message(encode_message(MessageCtx('ab', footer=msg.footer))).body == 'ab'
    section = encode_value(Described(ULong(0x78), {Symbol('x-f'): b'\x01'}))
    assert_same(proton_decode(section), Described(
        ULong(0x78), {Symbol('x-f'): b'\x01'},
    ))


@pytest.mark.parametrize(
    'message_id',
    [ULong(2**64 - 1), 31, UUID, b'\x00id', 'id-1'],
    ids=['ulong', 'int', 'uuid', 'binary', 'string'],
)
def test_message_id_interop(message_id: tp.Any) -> None:
    """Message ids of every AMQP type (ulong, uuid, binary, string) interoperate."""
    expected = ULong(message_id) if type(message_id) is int else message_id
    msg = MessageCtx(None, properties=AMQPProperties(message_id=message_id))
    m = proton_message(encode_message(msg))
    assert_same(message_id_from_proton(m.id), expected)
    m = proton.Message(id=to_proton(message_id))
    assert_same(decode_amqp(bytes(m.encode())).properties.message_id, expected)


@pytest.mark.parametrize('value', VALUES, ids=repr)
def test_amqp_value_interop(value: tp.Any) -> None:
    """An amqp-value body of every type interoperates both ways."""
    if value is None:
        pytest.skip('proton.Message(body=None) has no body section at all')
    if reason := proton_limit(value):
        pytest.skip(reason)
    m = proton_message(encode_message(MessageCtx(value)))
    assert m.inferred is False or isinstance(value, (bytes, list, tuple))
    assert_same(from_proton(m.body), expected_decoded(value))
    data = bytes(proton.Message(body=to_proton(value)).encode())
    assert_same(decode_amqp(data).body, expected_decoded(value))


@pytest.mark.parametrize(
    ('body', 'proton_body'),
    [
        pytest.param(b'abc', b'abc', id='data'),
        pytest.param(b'x' * 300, b'x' * 300, id='data-vbin32'),
        pytest.param(SequenceSections([[1, 'a']]), [1, 'a'], id='sequence'),
    ],
)
def test_inferred_body_interop(body: tp.Any, proton_body: tp.Any) -> None:
    """Data and amqp-sequence sections are Proton's inferred bodies."""
    m = proton_message(encode_message(MessageCtx(body)))
    assert m.inferred is True
    assert_same(from_proton(m.body), expected_decoded(proton_body))
    data = bytes(proton.Message(body=to_proton(proton_body), inferred=True).encode())
    assert_same(decode_amqp(data).body, body)


def proton_sections(data: bytes) -> list[tp.Any]:
    """
    The sections of an encoded message, each decoded by ``proton.Data`` as
    a described value (descriptor, value): ``proton.Message`` holds one
    body section (it keeps only the last), ``proton.Data`` decodes one
    value at a time.
    """
    sections = []
    while data:
        d = proton.Data()
        size = d.decode(data)
        assert 0 < size <= len(data)
        value = d.get_object()
        assert type(value) is proton.Described
        sections.append((from_proton(value.descriptor), from_proton(value.value)))
        data = data[size:]
    return sections


@pytest.mark.parametrize(('body', 'code', 'sections'), [
    pytest.param(DataSections([b'a', b'b' * 300]), 0x75, [b'a', b'b' * 300], id='data'),
    pytest.param(SequenceSections([[1], [2, 'x']]), 0x76, [[1], [2, 'x']], id='sequence'),
])
def test_several_body_sections(body: tp.Any, code: int, sections: list[tp.Any]) -> None:
    """
    Several data or amqp-sequence sections interoperate both ways: rbfly's
    sections are Proton's described values of the section's code, one
    after the other, and such values Proton encodes are rbfly's body.
    """
    assert proton_sections(encode_message(MessageCtx(body))) == [
        (ULong(code), expected_decoded(s)) for s in sections
    ]
    data = b''.join(
        proton_encode(proton.Described(proton.ulong(code), to_proton(s))) for s in sections
    )
    decoded = decode_amqp(data).body
    assert type(decoded) is type(body)
    assert_same(decoded, body)

#
# hypothesis
#

@settings(max_examples=300, deadline=None)
@given(values)
def test_interop_roundtrip(value: tp.Any) -> None:
    """Random values cross between rbfly and Proton in both directions unchanged."""
    assume(proton_limit(value) is None)
    expected = expected_decoded(value)
    assert_same(proton_decode(encode_value(value)), expected)
    assert_same(decode_value(proton_encode(to_proton(value))), expected)
