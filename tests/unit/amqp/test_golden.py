"""
Golden byte vectors of the AMQP 1.0 type system codec.

Every vector is derived by hand from OASIS AMQP 1.0, part 1 "Types"
(section 1.6, "Primitive Type Definitions"): constructor, then the
big-endian size/count fields, then the payload.
"""

from __future__ import annotations

import typing as tp
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from rbfly.amqp import (
    AMQPType,
    Array,
    Byte,
    Char,
    Decimal32,
    Decimal64,
    Decimal128,
    Described,
    Float32,
    Int,
    Long,
    Short,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    UShort,
    decode_value,
    encode_value,
)
from rbfly.error import AMQPEncodeError, RbFlyError

from ._helpers import assert_same

def h(text: str) -> bytes:
    """Bytes from hex digits separated by spaces."""
    return bytes.fromhex(text)


def u32(n: int) -> bytes:
    return n.to_bytes(4, 'big')


INF = float('inf')
NAN = float('nan')
UUID = uuid.UUID('12345678-9abc-def0-1234-56789abcdef0')
TS = datetime(2022, 8, 14, 16, 1, 13, 567000, tzinfo=UTC)
NONE = object()  # "decodes to the encoded value itself"

# (value, encoding, decoded value or NONE)
BOTH_WAYS: list[tp.Any] = [
    # fixed width: null, boolean
    pytest.param(None, h('40'), NONE, id='null'),
    pytest.param(True, h('41'), NONE, id='true'),
    pytest.param(False, h('42'), NONE, id='false'),
    # unsigned integers
    pytest.param(UByte(0), h('50 00'), NONE, id='ubyte-0'),
    pytest.param(UByte(255), h('50 ff'), NONE, id='ubyte-max'),
    pytest.param(UShort(0x1234), h('60 12 34'), NONE, id='ushort'),
    pytest.param(UShort(0xffff), h('60 ff ff'), NONE, id='ushort-max'),
    pytest.param(UInt(0), h('43'), NONE, id='uint0'),
    pytest.param(UInt(1), h('52 01'), NONE, id='smalluint-1'),
    pytest.param(UInt(255), h('52 ff'), NONE, id='smalluint-max'),
    pytest.param(UInt(256), h('70 00 00 01 00'), NONE, id='uint-256'),
    pytest.param(UInt(2**32 - 1), h('70 ff ff ff ff'), NONE, id='uint-max'),
    pytest.param(ULong(0), h('44'), NONE, id='ulong0'),
    pytest.param(ULong(255), h('53 ff'), NONE, id='smallulong-max'),
    pytest.param(ULong(256), h('80 00 00 00 00 00 00 01 00'), NONE, id='ulong-256'),
    pytest.param(ULong(2**64 - 1), h('80 ff ff ff ff ff ff ff ff'), NONE, id='ulong-max'),
    # signed integers
    pytest.param(Byte(-128), h('51 80'), NONE, id='byte-min'),
    pytest.param(Byte(127), h('51 7f'), NONE, id='byte-max'),
    pytest.param(Short(-32768), h('61 80 00'), NONE, id='short-min'),
    pytest.param(Short(32767), h('61 7f ff'), NONE, id='short-max'),
    pytest.param(0, h('54 00'), NONE, id='smallint-0'),
    pytest.param(-1, h('54 ff'), NONE, id='smallint--1'),
    pytest.param(127, h('54 7f'), NONE, id='smallint-max'),
    pytest.param(-128, h('54 80'), NONE, id='smallint-min'),
    pytest.param(128, h('71 00 00 00 80'), NONE, id='int-128'),
    pytest.param(-129, h('71 ff ff ff 7f'), NONE, id='int--129'),
    pytest.param(2**31 - 1, h('71 7f ff ff ff'), NONE, id='int-max'),
    pytest.param(-2**31, h('71 80 00 00 00'), NONE, id='int-min'),
    pytest.param(2**31, h('81 00 00 00 00 80 00 00 00'), NONE, id='long-2**31'),
    pytest.param(-2**31 - 1, h('81 ff ff ff ff 7f ff ff ff'), NONE, id='long--2**31-1'),
    pytest.param(2**63 - 1, h('81 7f ff ff ff ff ff ff ff'), NONE, id='long-max'),
    pytest.param(-2**63, h('81 80 00 00 00 00 00 00 00'), NONE, id='long-min'),
    pytest.param(2**63, h('80 80 00 00 00 00 00 00 00'), ULong(2**63), id='int-2**63-ulong'),
    pytest.param(2**64 - 1, h('80 ff ff ff ff ff ff ff ff'), ULong(2**64 - 1), id='int-ulong-max'),
    pytest.param(Int(5), h('54 05'), 5, id='Int-smallint'),
    pytest.param(Int(-1000), h('71 ff ff fc 18'), -1000, id='Int-int'),
    pytest.param(Long(-100), h('55 9c'), -100, id='Long-smalllong'),
    pytest.param(Long(1000), h('81 00 00 00 00 00 00 03 e8'), 1000, id='Long-long'),
    # floating point
    pytest.param(Float32(1.5), h('72 3f c0 00 00'), NONE, id='float'),
    pytest.param(Float32(-0.0), h('72 80 00 00 00'), NONE, id='float--0'),
    pytest.param(Float32(INF), h('72 7f 80 00 00'), NONE, id='float-inf'),
    pytest.param(1.5, h('82 3f f8 00 00 00 00 00 00'), NONE, id='double'),
    pytest.param(-2.0, h('82 c0 00 00 00 00 00 00 00'), NONE, id='double-neg'),
    pytest.param(-INF, h('82 ff f0 00 00 00 00 00 00'), NONE, id='double--inf'),
    pytest.param(NAN, h('82 7f f8 00 00 00 00 00 00'), NONE, id='double-nan'),
    # decimals: raw IEEE 754 bits
    pytest.param(Decimal32(0x22500001), h('74 22 50 00 01'), NONE, id='decimal32'),
    pytest.param(
        Decimal64(0x2238000000000001), h('84 22 38 00 00 00 00 00 01'), NONE, id='decimal64',
    ),
    pytest.param(Decimal128(bytes(range(16))), b'\x94' + bytes(range(16)), NONE, id='decimal128'),
    # char: UTF-32BE code point
    pytest.param(Char('a'), h('73 00 00 00 61'), NONE, id='char'),
    pytest.param(Char('ż'), h('73 00 00 01 7c'), NONE, id='char-bmp'),
    pytest.param(Char('\U0001f600'), h('73 00 01 f6 00'), NONE, id='char-astral'),
    # timestamp: int64 ms since the Unix epoch
    pytest.param(TS, h('83 00 00 01 82 9d 16 7f 5f'), NONE, id='timestamp'),
    pytest.param(datetime(1970, 1, 1, tzinfo=UTC), h('83' + '00' * 8), NONE, id='ts-epoch'),
    pytest.param(
        datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC), h('83' + 'ff' * 8), NONE,
        id='ts--1ms',
    ),
    pytest.param(
        datetime(1, 1, 1, tzinfo=UTC), h('83 ff ff c7 7c ed d3 28 00'), NONE, id='ts-year-1',
    ),
    pytest.param(
        datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC),
        h('83 00 00 e6 77 d2 1f db ff'), NONE, id='ts-year-9999',
    ),
    pytest.param(Timestamp(253402300800000), h('83 00 00 e6 77 d2 1f dc 00'), NONE,
                 id='ts-year-10000'),
    pytest.param(Timestamp(2**63 - 1), h('83 7f ff ff ff ff ff ff ff'), NONE, id='ts-max'),
    pytest.param(Timestamp(-2**63), h('83 80 00 00 00 00 00 00 00'), NONE, id='ts-min'),
    # uuid
    pytest.param(UUID, b'\x98' + UUID.bytes, NONE, id='uuid'),
    # binary
    pytest.param(b'', h('a0 00'), NONE, id='vbin8-empty'),
    pytest.param(b'\x00\xff', h('a0 02 00 ff'), NONE, id='vbin8'),
    pytest.param(b'x' * 255, h('a0 ff') + b'x' * 255, NONE, id='vbin8-255'),
    pytest.param(b'x' * 256, h('b0 00 00 01 00') + b'x' * 256, NONE, id='vbin32-256'),
    pytest.param(bytearray(b'ab'), h('a0 02 61 62'), b'ab', id='bytearray'),
    pytest.param(memoryview(b'ab'), h('a0 02 61 62'), b'ab', id='memoryview'),
    # string: the 8-bit form holds up to 255 bytes of UTF-8, not characters
    pytest.param('', h('a1 00'), NONE, id='str8-empty'),
    pytest.param('abc', h('a1 03 61 62 63'), NONE, id='str8'),
    pytest.param('\U0001f600', h('a1 04 f0 9f 98 80'), NONE, id='str8-astral'),
    pytest.param('ż' * 127 + 'a', h('a1 ff') + 'ż'.encode() * 127 + b'a', NONE, id='str8-255'),
    pytest.param('ż' * 128, h('b1 00 00 01 00') + 'ż'.encode() * 128, NONE, id='str32-256'),
    pytest.param('a' * 256, h('b1 00 00 01 00') + b'a' * 256, NONE, id='str32-ascii'),
    # symbol
    pytest.param(Symbol(''), h('a3 00'), NONE, id='sym8-empty'),
    pytest.param(Symbol('abc'), h('a3 03 61 62 63'), NONE, id='sym8'),
    pytest.param(Symbol('s' * 255), h('a3 ff') + b's' * 255, NONE, id='sym8-255'),
    pytest.param(Symbol('s' * 256), h('b3 00 00 01 00') + b's' * 256, NONE, id='sym32-256'),
    # list: size covers count and items; list8 while size + 1 <= 255
    pytest.param([], h('45'), NONE, id='list0'),
    pytest.param([None], h('c0 02 01 40'), NONE, id='list8'),
    pytest.param([1, 'a'], h('c0 06 02 54 01 a1 01 61'), NONE, id='list8-2'),
    pytest.param((1,), h('c0 03 01 54 01'), [1], id='tuple'),
    pytest.param([None] * 254, h('c0 ff fe') + b'\x40' * 254, NONE, id='list8-count-254'),
    pytest.param(
        [None] * 255, h('d0 00 00 01 03 00 00 00 ff') + b'\x40' * 255, NONE, id='list32-count-255',
    ),
    pytest.param([b'x' * 252], h('c0 ff 01 a0 fc') + b'x' * 252, NONE, id='list8-size-255'),
    pytest.param(
        [b'x' * 253], h('d0 00 00 01 03 00 00 00 01 a0 fd') + b'x' * 253, NONE,
        id='list32-size-256',
    ),
    pytest.param([[[]]], h('c0 05 01 c0 02 01 45'), NONE, id='list-nested'),
    # map
    pytest.param({}, h('c1 01 00'), NONE, id='map8-empty'),
    pytest.param({'a': 1}, h('c1 06 02 a1 01 61 54 01'), NONE, id='map8'),
    pytest.param(
        {Symbol('k'): None, UByte(1): [True]}, h('c1 0b 04 a3 01 6b 40 50 01 c0 02 01 41'), NONE,
        id='map8-mixed',
    ),
    pytest.param({'k': b'x' * 249}, h('c1 ff 02 a1 01 6b a0 f9') + b'x' * 249, NONE,
                 id='map8-size-255'),
    pytest.param(
        {'k': b'x' * 250}, h('d1 00 00 01 03 00 00 00 02 a1 01 6b a0 fa') + b'x' * 250, NONE,
        id='map32-size-256',
    ),
    # array: size covers count, element constructor and elements
    pytest.param(Array([1, 2], AMQPType.INT), h('e0 04 02 54 01 02'), NONE, id='array-int-small'),
    pytest.param(
        Array([1, 300], AMQPType.INT), h('e0 0a 02 71 00 00 00 01 00 00 01 2c'), NONE,
        id='array-int',
    ),
    pytest.param(Array([], AMQPType.INT), h('e0 02 00 71'), NONE, id='array-empty'),
    pytest.param(Array([1, -1], AMQPType.LONG), h('e0 04 02 55 01 ff'), NONE, id='array-smalllong'),
    pytest.param(
        Array([2**40], AMQPType.LONG), h('e0 0a 01 81 00 00 01 00 00 00 00 00'), NONE,
        id='array-long',
    ),
    pytest.param(Array([UInt(0), UInt(255)], AMQPType.UINT), h('e0 04 02 52 00 ff'), NONE,
                 id='array-smalluint'),
    pytest.param(Array([UInt(256)], AMQPType.UINT), h('e0 06 01 70 00 00 01 00'), NONE,
                 id='array-uint'),
    pytest.param(Array([ULong(7)], AMQPType.ULONG), h('e0 03 01 53 07'), NONE,
                 id='array-smallulong'),
    pytest.param(
        Array(list(range(-128, 128)), AMQPType.INT),
        h('f0 00 00 01 05 00 00 01 00 54') + bytes(range(128, 256)) + bytes(range(128)), NONE,
        id='array32-smallint',
    ),
    pytest.param(Array(['a', 'bc'], AMQPType.STRING), h('e0 07 02 a1 01 61 02 62 63'), NONE,
                 id='array-str8'),
    pytest.param(
        Array(['x' * 256], AMQPType.STRING), h('f0 00 00 01 09 00 00 00 01 b1 00 00 01 00')
        + b'x' * 256, NONE, id='array32-str32',
    ),
    pytest.param(Array([Symbol('a')], AMQPType.SYMBOL), h('e0 04 01 a3 01 61'), NONE,
                 id='array-sym8'),
    pytest.param(Array([b'a'], AMQPType.BINARY), h('e0 04 01 a0 01 61'), NONE, id='array-vbin8'),
    pytest.param(
        Array([[1], []], AMQPType.LIST),
        h('e0 14 02 d0 00 00 00 06 00 00 00 01 54 01 00 00 00 04 00 00 00 00'), NONE,
        id='array-list',
    ),
    pytest.param(
        Array([{Symbol('a'): 1}], AMQPType.MAP),
        h('e0 0f 01 d1 00 00 00 09 00 00 00 02 a3 01 61 54 01'), NONE, id='array-map',
    ),
    pytest.param(
        Array([Array([1], AMQPType.INT)], AMQPType.ARRAY),
        h('e0 0c 01 f0 00 00 00 06 00 00 00 01 54 01'), NONE, id='array-array',
    ),
    pytest.param(Array([True, False], AMQPType.BOOLEAN), h('e0 04 02 56 01 00'), NONE,
                 id='array-bool'),
    pytest.param(Array([None, None], AMQPType.NULL), h('e0 02 02 40'), NONE, id='array-null'),
    pytest.param(Array([1.5], AMQPType.DOUBLE), h('e0 0a 01 82 3f f8 00 00 00 00 00 00'), NONE,
                 id='array-double'),
    pytest.param(Array([Char('a')], AMQPType.CHAR), h('e0 06 01 73 00 00 00 61'), NONE,
                 id='array-char'),
    pytest.param(Array([TS], AMQPType.TIMESTAMP), h('e0 0a 01 83 00 00 01 82 9d 16 7f 5f'), NONE,
                 id='array-timestamp'),
    pytest.param(
        Array(['a'], AMQPType.STRING, Symbol('d')), h('e0 08 01 00 a3 01 64 a1 01 61'), NONE,
        id='array-described',
    ),
    # described values
    pytest.param(Described(ULong(0x70), [True]), h('00 53 70 c0 02 01 41'), NONE,
                 id='described-ulong'),
    pytest.param(
        Described(Symbol('x:y'), 'v'), h('00 a3 03 78 3a 79 a1 01 76'), NONE, id='described-sym',
    ),
    pytest.param(
        Described(Described(ULong(1), None), 2), h('00 00 53 01 40 54 02'), NONE,
        id='described-nested',
    ),
]


@pytest.mark.parametrize(('value', 'data', 'decoded'), BOTH_WAYS)
def test_encode(value: object, data: bytes, decoded: object) -> None:
    """A value is encoded as the exact bytes of its smallest encoding."""
    assert encode_value(value) == data


@pytest.mark.parametrize(('value', 'data', 'decoded'), BOTH_WAYS)
def test_decode(value: object, data: bytes, decoded: object) -> None:
    """The golden bytes decode to the expected value of the expected type."""
    assert_same(decode_value(data), value if decoded is NONE else decoded)


DECODE_ONLY: list[tp.Any] = [
    pytest.param(h('56 01'), True, id='boolean-byte-1'),
    pytest.param(h('56 00'), False, id='boolean-byte-0'),
    pytest.param(h('70 00 00 00 05'), UInt(5), id='uint-wide'),
    pytest.param(h('80 00 00 00 00 00 00 00 00'), ULong(0), id='ulong-wide'),
    pytest.param(h('71 00 00 00 05'), 5, id='int-wide'),
    pytest.param(h('55 05'), 5, id='smalllong'),
    pytest.param(h('81 00 00 00 00 00 00 00 05'), 5, id='long-wide'),
    pytest.param(h('b0 00 00 00 01 61'), b'a', id='vbin32-short'),
    pytest.param(h('b1 00 00 00 02 c5 bc'), 'ż', id='str32-short'),
    pytest.param(h('b3 00 00 00 01 61'), Symbol('a'), id='sym32-short'),
    pytest.param(h('c0 01 00'), [], id='list8-empty'),
    pytest.param(h('d0 00 00 00 04 00 00 00 00'), [], id='list32-empty'),
    pytest.param(h('d0 00 00 00 05 00 00 00 01 40'), [None], id='list32'),
    pytest.param(h('d1 00 00 00 04 00 00 00 00'), {}, id='map32-empty'),
    pytest.param(h('d1 00 00 00 08 00 00 00 02 a3 01 61 41'), {Symbol('a'): True}, id='map32'),
    pytest.param(h('f0 00 00 00 07 00 00 00 02 54 01 02'), Array([1, 2], AMQPType.INT),
                 id='array32'),
    pytest.param(h('e0 02 02 41'), Array([True, True], AMQPType.BOOLEAN), id='array-true'),
    pytest.param(h('e0 02 01 43'), Array([UInt(0)], AMQPType.UINT), id='array-uint0'),
    pytest.param(h('e0 02 02 45'), Array([[], []], AMQPType.LIST), id='array-list0'),
    pytest.param(h('e0 04 01 c0 01 00'), Array([[]], AMQPType.LIST), id='array-list8'),
    pytest.param(h('00 80 00 00 00 00 00 00 00 05 40'), Described(ULong(5), None),
                 id='described-ulong-wide'),
]


@pytest.mark.parametrize(('data', 'expected'), DECODE_ONLY)
def test_decode_only(data: bytes, expected: object) -> None:
    """Encodings the encoder never picks (wider or alternative) decode too."""
    assert_same(decode_value(data), expected)


@pytest.mark.parametrize(
    ('value', 'data'),
    [
        pytest.param(datetime(2022, 8, 14, 16, 1, 13, 567000), h('83 00 00 01 82 9d 16 7f 5f'),
                     id='naive-is-utc'),
        pytest.param(
            datetime(2022, 8, 14, 18, 1, 13, 567000, tzinfo=timezone(timedelta(hours=2))),
            h('83 00 00 01 82 9d 16 7f 5f'), id='other-zone',
        ),
        pytest.param(datetime(2022, 8, 14, 16, 1, 13, 567999, tzinfo=UTC),
                     h('83 00 00 01 82 9d 16 7f 5f'), id='truncated-to-ms'),
        pytest.param(datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), h('83' + 'ff' * 8),
                     id='negative-floor-ms'),
        pytest.param(Array([1.5], AMQPType.FLOAT), h('e0 06 01 72 3f c0 00 00'), id='float-array'),
        pytest.param(Array([1, 2], AMQPType.UBYTE), h('e0 04 02 50 01 02'), id='ubyte-array'),
    ],
)
def test_encode_only(value: object, data: bytes) -> None:
    """Values that are normalised by encoding: times in other zones, plain elements."""
    assert encode_value(value) == data


def test_timestamp_decoded_as_utc_datetime() -> None:
    """A timestamp decodes as an aware ``datetime`` in UTC."""
    value = decode_value(h('83 00 00 01 82 9d 16 7f 5f'))
    assert isinstance(value, datetime)
    assert value.tzinfo is UTC


def test_array_type_kept() -> None:
    """Arrays compare equal to lists, so the decoded element type is checked too."""
    value = decode_value(h('e0 04 02 55 01 ff'))
    assert isinstance(value, Array)
    assert value.type is AMQPType.LONG
    assert value.descriptor is None
    assert value == [1, -1]


@pytest.mark.parametrize('value', [2**64, -2**63 - 1, 2**100, -2**100])
def test_integer_out_of_range(value: int) -> None:
    """An integer outside of -2**63..2**64-1 raises AMQPEncodeError, not OverflowError."""
    with pytest.raises(AMQPEncodeError, match='integer out of AMQP range') as info:
        encode_value(value)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, RbFlyError)
    assert not isinstance(info.value, OverflowError)


@pytest.mark.parametrize('value', [2**64, -2**63 - 1])
def test_nested_integer_out_of_range(value: int) -> None:
    """An integer out of range nested in a compound raises AMQPEncodeError."""
    with pytest.raises(AMQPEncodeError):
        encode_value({'a': [1, value]})


@pytest.mark.parametrize(
    ('wrapper', 'value'),
    [
        (UByte, 256), (UByte, -1), (UShort, 2**16), (UInt, 2**32), (UInt, -1), (ULong, 2**64),
        (ULong, -1), (Byte, 128), (Byte, -129), (Short, 2**15), (Int, 2**31), (Int, -2**31 - 1),
        (Long, 2**63), (Timestamp, -2**63 - 1), (Decimal32, 2**32), (Decimal64, -1),
    ],
)
def test_wrapper_out_of_range(wrapper: type[int], value: int) -> None:
    """A wrapper constructed with a value outside of its type's range raises AMQPEncodeError."""
    with pytest.raises(AMQPEncodeError, match='out of range'):
        wrapper(value)


def test_wrapper_invalid_size() -> None:
    """Decimal128 needs 16 bytes; Char needs exactly one code point."""
    with pytest.raises(AMQPEncodeError, match='16 bytes'):
        Decimal128(b'\x00' * 15)
    with pytest.raises(AMQPEncodeError, match='one code point'):
        Char('ab')


def test_list_length_fields() -> None:
    """A list32's size and count fields are big-endian and cover the count field."""
    data = encode_value(list(range(300)))
    assert data[:9] == b'\xd0' + u32(len(data) - 5) + u32(300)
