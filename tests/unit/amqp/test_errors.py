"""
Malformed AMQP 1.0 data and values that cannot be encoded.

Decoding bad data raises :py:class:`rbfly.error.AMQPDecodeError` naming
the problem and its offset; it never raises ``IndexError``, ``SystemError``
or ``TypeError``, and never crashes. Encoding an unsupported value raises
:py:class:`rbfly.error.AMQPEncodeError`.
"""

from __future__ import annotations

import decimal
import typing as tp
import uuid
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rbfly.amqp import (
    AMQPHeader,
    AMQPProperties,
    AMQPType,
    Array,
    DataSections,
    Described,
    MessageCtx,
    SequenceSections,
    Symbol,
    ULong,
    decode_amqp,
    decode_value,
    encode_amqp,
    encode_message,
    encode_value,
)
from rbfly.error import AMQPDecodeError, AMQPEncodeError, RbFlyError

def h(text: str) -> bytes:
    return bytes.fromhex(text)


def u32(n: int) -> bytes:
    return n.to_bytes(4, 'big')


def decode_error(
        decode: tp.Callable[[bytes], object], data: bytes, match: str | None = None,
) -> AMQPDecodeError:
    """Decode ``data``, expecting AMQPDecodeError with a valid offset."""
    with pytest.raises(AMQPDecodeError, match=match) as info:
        decode(data)
    error = info.value
    assert isinstance(error, RbFlyError)
    assert isinstance(error.offset, int)
    assert 0 <= error.offset <= len(data), error
    assert '(at offset {})'.format(error.offset) in str(error)
    return error

#
# truncated data
#

VALUES = [
    [1, 'ab', {Symbol('k'): [None, True, 2**40]}, b'x' * 300],
    {'ż' * 200: Array([uuid.UUID(int=1)], AMQPType.UUID, Symbol('d'))},
    Described(ULong(0x77), Array([[1], [2, 3]], AMQPType.LIST)),
    datetime(2022, 1, 1, tzinfo=UTC),
]


@pytest.mark.parametrize('value', VALUES, ids=['list', 'map', 'described', 'timestamp'])
def test_truncated_value(value: object) -> None:
    """Every proper prefix of a value's encoding is truncated data."""
    data = encode_value(value)
    for n in range(len(data)):
        decode_error(decode_value, data[:n])


SECTIONS = [
    encode_value(Described(ULong(0x70), [True, None, None, None, ULong(3)])),
    encode_value(Described(ULong(0x72), {Symbol('x-a'): 'v' * 20})),
    encode_value(Described(ULong(0x73), ['id', None, 'to'])),
    encode_value(Described(ULong(0x74), {'k': 1.5})),
    encode_value(Described(ULong(0x75), b'a' * 300)),
    encode_value(Described(ULong(0x75), b'b')),
    encode_value(Described(ULong(0x78), {Symbol('f'): None})),
]


def test_truncated_message() -> None:
    """A message cut anywhere but between sections is truncated data."""
    data = b''.join(SECTIONS)
    boundaries = {0}
    for s in SECTIONS:
        boundaries.add(max(boundaries) + len(s))
    assert decode_amqp(data).footer == {Symbol('f'): None}
    for n in range(len(data)):
        if n in boundaries:
            decode_amqp(data[:n])  # a shorter, still valid message
        else:
            decode_error(decode_amqp, data[:n])


@pytest.mark.parametrize(
    'msg',
    [
        MessageCtx({'a': [1, 2]}, AMQPHeader(durable=True), properties=AMQPProperties(to='q')),
        MessageCtx(SequenceSections([[1], ['x' * 300]])),
    ],
)
def test_truncated_encoded_message(msg: MessageCtx) -> None:
    """Every proper prefix of an encoded message either decodes or raises AMQPDecodeError."""
    data = encode_message(msg)
    for n in range(len(data)):
        try:
            decode_amqp(data[:n])
        except AMQPDecodeError as ex:
            assert 0 <= ex.offset <= n

#
# malformed values
#

BAD_VALUES = [
    pytest.param(b'', 'truncated data', 0, id='empty'),
    pytest.param(h('01'), 'unknown AMQP constructor 0x01', 0, id='constructor-01'),
    pytest.param(h('57'), 'unknown AMQP constructor 0x57', 0, id='constructor-57'),
    pytest.param(h('ff'), 'unknown AMQP constructor 0xff', 0, id='constructor-ff'),
    pytest.param(h('c0 02 01 01'), 'unknown AMQP constructor 0x01', 3, id='nested-constructor'),
    pytest.param(h('a0 05 61 62'), 'truncated data: 5 bytes needed, 2 left', 2, id='vbin8-short'),
    pytest.param(h('b0 ff ff ff ff 61'), 'truncated data', 5, id='vbin32-huge'),
    pytest.param(h('b1 80 00 00 00'), 'truncated data', 5, id='str32-huge'),
    pytest.param(h('d0 ff ff ff ff 00 00 00 00'), 'compound size 4294967295 exceeds', 0,
                 id='list32-size-huge'),
    pytest.param(h('d0 00 00 00 04') + u32(2**32 - 1), 'list count 4294967295 exceeds', 0,
                 id='list32-count-huge'),
    pytest.param(h('c1 00 00'), 'compound size 0 too small', 0, id='map8-size-0'),
    pytest.param(h('d1 00 00 00 04 ff ff ff fe'), 'map count 4294967294 exceeds', 0,
                 id='map32-count-huge'),
    pytest.param(h('f0 00 00 00 05') + u32(2**32 - 1) + h('40'),
                 'array count 4294967295 of zero-width elements', 0, id='array-null-count-huge'),
    pytest.param(h('f0 00 00 00 05') + u32(2**32 - 1) + h('41'), 'zero-width', 0,
                 id='array-true-count-huge'),
    pytest.param(h('e0 02 ff 54'), 'array count 255 exceeds', 0, id='array8-count'),
    pytest.param(h('e0 02 01 01'), 'invalid array element constructor 0x01', 3,
                 id='array-element-constructor'),
    pytest.param(h('e0 01 00'), 'truncated data', 3, id='array-no-element-constructor'),
    pytest.param(h('c0 00'), 'compound size 0 too small', 0, id='list8-size-0'),
    pytest.param(h('c0 03 01 40 40'), 'compound size 3 does not match its 2 bytes', 0,
                 id='list-size-mismatch'),
    pytest.param(h('c0 02 02 40 40'), 'list count 2 exceeds its size', 0, id='list-count-size'),
    pytest.param(h('c0 03 02 a0 05 00'), 'truncated data', 5, id='element-past-compound'),
    pytest.param(h('c1 02 01 40'), 'map has an odd number of elements: 1', 0, id='map-odd'),
    pytest.param(h('c1 03 02 45 40'), 'unhashable map key of type list', 0, id='map-key-list'),
    pytest.param(h('c1 05 02 c1 01 00 40'), 'unhashable map key of type dict', 0,
                 id='map-key-map'),
    pytest.param(h('c1 06 02 e0 02 00 54 40'), 'unhashable map key of type Array', 0,
                 id='map-key-array'),
    pytest.param(h('c1 05 02 00 45 40 40'), 'unhashable map key of type Described', 0,
                 id='map-key-described-list'),
    pytest.param(h('a1 02 c3 28'), 'invalid UTF-8 string of 2 bytes', 2, id='utf8-invalid'),
    pytest.param(h('a1 03 ed a0 80'), 'invalid UTF-8', 2, id='utf8-surrogate'),
    pytest.param(h('a1 01 c5'), 'invalid UTF-8', 2, id='utf8-cut'),
    pytest.param(h('b1 00 00 00 01 ff'), 'invalid UTF-8', 5, id='utf8-str32'),
    pytest.param(h('a3 02 c5 bc'), 'invalid ASCII symbol of 2 bytes', 2, id='symbol-non-ascii'),
    pytest.param(h('b3 00 00 00 01 80'), 'invalid ASCII symbol', 5, id='sym32-non-ascii'),
    pytest.param(h('56 02'), 'invalid boolean byte 0x02', 1, id='boolean-byte'),
    pytest.param(h('73 00 11 00 00'), 'invalid char code point 0x110000', 1, id='char'),
    pytest.param(h('40 40'), '1 trailing bytes after value', 1, id='trailing'),
    pytest.param(h('00'), 'truncated data', 1, id='described-no-descriptor'),
    pytest.param(h('00 53 01'), 'truncated data', 3, id='described-no-value'),
]


@pytest.mark.parametrize(('data', 'message', 'offset'), BAD_VALUES)
def test_bad_value(data: bytes, message: str, offset: int) -> None:
    """Malformed values raise AMQPDecodeError naming the problem and its offset."""
    assert decode_error(decode_value, data, message).offset == offset


def nested_lists(depth: int) -> bytes:
    data = b'\x45'
    for _ in range(depth):
        data = b'\xd0' + u32(len(data) + 4) + u32(1) + data
    return data


def nested_maps(depth: int) -> bytes:
    data = b'\x40'
    for _ in range(depth):
        data = b'\xd1' + u32(len(data) + 5) + u32(2) + b'\x40' + data
    return data


def nested_arrays(depth: int) -> bytes:
    payload = u32(5) + u32(0) + b'\x40'  # element of the innermost array: no elements
    for _ in range(depth - 1):
        body = u32(1) + b'\xf0' + payload
        payload = u32(len(body)) + body
    return b'\xf0' + payload


@pytest.mark.parametrize(
    'data',
    [
        pytest.param(nested_lists(1000), id='lists'),
        pytest.param(b'\x00' * 1000 + b'\x40', id='described'),
        pytest.param(nested_maps(1000), id='maps'),
        pytest.param(nested_arrays(1000), id='arrays'),
    ],
)
def test_decode_too_deep(data: bytes) -> None:
    """Values nested deeper than the limit raise AMQPDecodeError, not RecursionError."""
    decode_error(decode_value, data, 'nested deeper than 100 levels')
    decode_error(decode_amqp, b'\x00Sw' + data, 'nested deeper than 100 levels')


def test_decode_nesting_limit() -> None:
    """Nesting up to the limit decodes."""
    value = decode_value(nested_lists(99))
    for _ in range(99):
        assert isinstance(value, list)
        value = value[0]
    assert value == []
    array = decode_value(nested_arrays(100))
    for _ in range(99):
        assert isinstance(array, Array)
        assert array.type == AMQPType.ARRAY
        array = array[0]
    assert array == Array([], AMQPType.NULL)
    assert isinstance(decode_value(nested_maps(100)), dict)


def zero_width_arrays(count: int, per_array: int, element: str = '45') -> bytes:
    """A list of arrays of zero-width elements (empty lists by default)."""
    array = h('f0 00 00 00 05') + u32(per_array) + h(element)
    body = u32(count) + array * count
    return h('d0') + u32(len(body)) + body


def test_decode_zero_width_arrays_bounded() -> None:
    """
    The zero-width elements of all the arrays of a value or a message are
    bounded together, not each array alone (4 KB made 26 million lists).
    """
    data = zero_width_arrays(400, 2**16)
    error = decode_error(decode_value, data, 'array count 65536 of zero-width elements, over'
                         ' the 4009 left')
    assert error.offset == 19
    assert decode_error(decode_amqp, b'\x00Sw' + data, 'zero-width elements').offset == 22


def test_decode_zero_width_arrays_allowed() -> None:
    """
    2**16 zero-width elements are allowed, and one per byte of the data
    beyond them; the allowance starts anew for each value and message.
    """
    data = zero_width_arrays(2, 2**15 + 14, '40')  # 29 bytes: 2**16 + 29 elements allowed
    assert len(data) == 29
    assert [len(a) for a in tp.cast(list[Array], decode_value(data))] == [2**15 + 14] * 2
    error = decode_error(decode_value, zero_width_arrays(2, 2**15 + 15, '41'),
                         'array count 32783 of zero-width elements, over the 32782 left')
    assert error.offset == 19
    message = b'\x00Sw' + zero_width_arrays(1, 2**16, '40')
    for _ in range(3):
        assert len(tp.cast(list[Array], decode_amqp(message).body)[0]) == 2**16


HASH_MODULUS = 2**61 - 1  # of int hashes, and so of UUID hashes


def map_of(keys: list[bytes]) -> bytes:
    """A map of the encoded keys, each with a null value."""
    body = u32(2 * len(keys)) + b''.join(key + h('40') for key in keys)
    return h('d1') + u32(len(body)) + body


def test_decode_map_keys_of_one_hash() -> None:
    """
    A large map whose keys share a hash is refused: inserting them takes
    quadratic time (8,000 UUID keys took 8.8 s, a megabyte of them minutes).
    """
    keys = [h('98') + (5 + k * HASH_MODULUS).to_bytes(16, 'big') for k in range(200)]
    error = decode_error(decode_value, map_of(keys), 'more than 64 keys of a hash shared')
    assert error.offset == 0
    decode_error(decode_amqp, b'\x00Sw' + map_of(keys), 'more than 64 keys of a hash shared')
    assert len(tp.cast(dict[object, None], decode_value(map_of(keys[:65])))) == 65


def test_decode_map_of_described_keys() -> None:
    """Described keys of one descriptor do not share a hash, but for their value."""
    keys = [h('00 53 01 80') + k.to_bytes(8, 'big') for k in range(2000)]
    value = tp.cast(dict[Described, None], decode_value(map_of(keys)))
    assert list(value) == [Described(ULong(1), ULong(k)) for k in range(2000)]
    assert hash(Described(ULong(1), [1])) == hash(Described(ULong(1), [2]))


def test_decode_map_key_nested_described() -> None:
    """
    A key nested 90 levels deep in descriptors, each described value a
    list, hashes in linear time (catching TypeError to hash the descriptor
    alone took 2**90 steps; a fuzzer's finding).
    """
    key = h('00') * 90 + h('40') + h('45') * 90
    value = tp.cast(dict[Described, None], decode_value(map_of([key])))
    (described,) = value
    for _ in range(89):
        described = described.descriptor
    assert described == Described(None, [])


def test_encode_too_deep() -> None:
    """Values nested deeper than the limit raise AMQPEncodeError."""
    lists: list[tp.Any] = []
    maps: dict[str, tp.Any] = {}
    described = Described(Symbol('d'), None)
    arrays = Array([], AMQPType.INT)
    for _ in range(1000):
        lists = [lists]
        maps = {'k': maps}
        described = Described(Symbol('d'), described)
        arrays = Array([arrays], AMQPType.ARRAY)
    cyclic: list[tp.Any] = []
    cyclic.append(cyclic)
    value: tp.Any
    for value in (lists, maps, described, arrays, cyclic):
        with pytest.raises(AMQPEncodeError, match='nested deeper than 100 levels'):
            encode_value(value)
        with pytest.raises(AMQPEncodeError, match='nested deeper than 100 levels'):
            encode_message(MessageCtx(value))

#
# malformed messages
#

BAD_MESSAGES = [
    pytest.param(h('40 40'), 'expected a described message section, got constructor 0x40', 0,
                 id='not-described'),
    pytest.param(h('00 53 79 40'), 'unknown message section 0x79', 0, id='section-79'),
    pytest.param(h('00 53 6f 40'), 'unknown message section 0x6f', 0, id='section-6f'),
    pytest.param(h('00 80 00 00 00 01 00 00 00 75 40'), 'unknown message section 0x100000075',
                 0, id='section-ulong'),
    pytest.param(h('00 a3 03 61 62 63 40'), "unknown message section 'abc'", 0,
                 id='section-symbol'),
    pytest.param(h('00 54 75 a0 00'), 'invalid section descriptor constructor 0x54', 1,
                 id='section-smallint'),
    pytest.param(h('00 53'), 'truncated data', 2, id='section-truncated'),
    pytest.param(h('00 53 75 a0 01 61 00 53 77 40'), 'body mixes sections 0x75 and 0x77', 6,
                 id='data-then-value'),
    pytest.param(h('00 53 77 40 00 53 77 40'), 'body mixes sections 0x77 and 0x77', 4,
                 id='value-twice'),
    pytest.param(h('00 53 76 45 00 53 77 40'), 'body mixes sections 0x76 and 0x77', 4,
                 id='sequence-then-value'),
    pytest.param(h('00 53 76 45 00 53 75 a0 00'), 'body mixes sections 0x76 and 0x75', 4,
                 id='sequence-then-data'),
    pytest.param(h('00 53 74 c1 01 00 00 53 74 c1 01 00'), 'section 0x74 repeated', 6,
                 id='app-properties-twice'),
    pytest.param(h('00 53 70 45 00 53 70 45'), 'section 0x70 repeated', 4,
                 id='header-twice'),
    pytest.param(h('00 53 78 c1 01 00 00 53 78 c1 01 00'), 'section 0x78 repeated', 6,
                 id='footer-twice'),
    pytest.param(h('00 53 77 40 00 53 78 c1 01 00 00 53 75 a0 00'), 'body mixes sections',
                 10, id='value-then-data-after-footer'),
    pytest.param(h('00 53 75 a1 01 61'), 'data section must be binary', 0, id='data-string'),
    pytest.param(h('00 53 76 40'), 'amqp-sequence section must be a list', 0,
                 id='sequence-null'),
    pytest.param(h('00 53 76 e0 02 00 54'), 'amqp-sequence section must be a list', 0,
                 id='sequence-array'),
    pytest.param(h('00 53 70 a1 01 61'), 'header section must be a list of at most 5', 0,
                 id='header-string'),
    pytest.param(h('00 53 70 c0 07 06 40 40 40 40 40 40'), 'header section must be a list', 0,
                 id='header-6-fields'),
    pytest.param(h('00 53 73 c1 01 00'), 'properties section must be a list of at most 13', 0,
                 id='properties-map'),
    pytest.param(h('00 53 74 c0 01 00'), 'application-properties section must be a map', 0,
                 id='app-properties-list'),
    pytest.param(h('00 53 71 a3 00'), 'delivery-annotations section must be a map', 0,
                 id='delivery-annotations-symbol'),
    pytest.param(h('00 53 72 45'), 'message-annotations section must be a map', 0,
                 id='annotations-list'),
    pytest.param(h('00 53 78 54 01'), 'footer section must be a map', 0, id='footer-int'),
    pytest.param(h('00 53 70 c0 05 02 40 a1 01 61'), "invalid header section: .*'priority'", 0,
                 id='header-priority-string'),
    pytest.param(h('00 53 70 c0 06 03 40 40 a3 01 61'), "invalid header section: .*'ttl'", 0,
                 id='header-ttl-symbol'),
    # a float where an int is due is made an int, which NaN and infinity
    # cannot be (ValueError, OverflowError; a fuzzer's finding)
    pytest.param(h('00 53 70 c0 0c 03 40 40 82 7f f8 00 00 00 00 00 00'),
                 'invalid header section: cannot convert float NaN', 0, id='header-ttl-nan'),
    pytest.param(h('00 53 70 c0 0b 02 40 82 7f f0 00 00 00 00 00 00'),
                 'invalid header section: cannot convert float infinity', 0,
                 id='header-priority-infinity'),
    pytest.param(h('00 53 73 c0 15 0c') + h('40') * 11 + h('82 ff f0 00 00 00 00 00 00'),
                 'invalid properties section: cannot convert float infinity', 0,
                 id='properties-group-sequence-infinity'),
    pytest.param(h('00 53 73 c0 05 02 40 a1 01 61'), "invalid properties section: .*'user_id'",
                 0, id='properties-user-id-string'),
    pytest.param(h('00 53 73 c0 06 03 40 40 a3 01 61'), "invalid properties section: .*'to'", 0,
                 id='properties-to-symbol'),
    pytest.param(h('00 53 73 c0 0f 0c') + b'\x40' * 11 + h('a1 01 61'),
                 "invalid properties section: .*'group_sequence'", 0,
                 id='properties-group-sequence-string'),
    pytest.param(h('00 53 77 c0 02 01 01'), 'unknown AMQP constructor 0x01', 6,
                 id='value-bad-constructor'),
]


@pytest.mark.parametrize(('data', 'message', 'offset'), BAD_MESSAGES)
def test_bad_message(data: bytes, message: str, offset: int) -> None:
    """Malformed messages raise AMQPDecodeError naming the problem and its offset."""
    assert decode_error(decode_amqp, data, message).offset == offset

#
# fuzzing
#

def decode_any(data: bytes) -> None:
    """Decode data as a value and as a message; only AMQPDecodeError may escape."""
    for decode in (decode_value, decode_amqp):
        try:
            decode(data)
        except AMQPDecodeError as ex:
            assert 0 <= ex.offset <= len(data)


@settings(max_examples=2000, deadline=None)
@given(st.binary(max_size=64))
def test_fuzz_random_bytes(data: bytes) -> None:
    """Random bytes decode or raise AMQPDecodeError, for values and messages."""
    decode_any(data)


SEEDS = [
    encode_value([1, 'ab', {Symbol('k'): [None, True, 2**40]}, Array([1, 2], AMQPType.INT)]),
    encode_value({b'k': Described(Symbol('d'), [uuid.UUID(int=5), 1.5])}),
    b''.join(SECTIONS),
    encode_message(MessageCtx(SequenceSections([[1], [Array(['a'], AMQPType.STRING)]]))),
]


@settings(max_examples=2000, deadline=None)
@given(st.sampled_from(SEEDS), st.lists(st.tuples(st.integers(0), st.integers(0, 255)),
                                         min_size=1, max_size=4))
def test_fuzz_mutated(seed: bytes, changes: list[tuple[int, int]]) -> None:
    """Valid data with a few bytes changed decodes or raises AMQPDecodeError."""
    data = bytearray(seed)
    for index, byte in changes:
        data[index % len(data)] = byte
    decode_any(bytes(data))

#
# encoding errors
#

@pytest.mark.parametrize(
    ('value', 'name'),
    [
        (object(), 'object'), ({1, 2}, 'set'), (frozenset(), 'frozenset'), (1j, 'complex'),
        (decimal.Decimal(1), 'Decimal'), (type, 'type'), (Ellipsis, 'ellipsis'),
        ([1, object()], 'object'), ({'k': {1}}, 'set'), (Described(Symbol('d'), 1j), 'complex'),
    ],
)
def test_encode_unsupported_type(value: tp.Any, name: str) -> None:
    """Objects without an AMQP mapping raise AMQPEncodeError naming their type."""
    with pytest.raises(AMQPEncodeError, match='cannot encode object of type {} '.format(name)):
        encode_value(value)
    with pytest.raises(AMQPEncodeError, match=name):
        encode_message(MessageCtx(value))


@pytest.mark.parametrize(
    ('value', 'message'),
    [
        (Symbol('ż'), 'symbol must be ASCII'),
        ('\ud800', 'not encodable as UTF-8'),
        (Array(['a'], AMQPType.INT), 'int value must be an integer, got str'),
        (Array([True], AMQPType.LONG), 'value must be an integer, got bool'),
        (Array([2**31], AMQPType.INT), 'int value out of range'),
        (Array([-1], AMQPType.UINT), 'uint value out of range'),
        (Array([1], AMQPType.BOOLEAN), 'boolean value must be bool'),
        (Array([1], AMQPType.NULL), 'null array element must be None'),
        (Array(['ab'], AMQPType.CHAR), 'char value must be one code point'),
        (Array(['a'], AMQPType.SYMBOL), 'symbol value must be Symbol'),
        (Array([Symbol('ż')], AMQPType.SYMBOL), 'symbol must be ASCII'),
        (Array([1], AMQPType.STRING), 'string value must be str'),
        (Array(['a'], AMQPType.BINARY), 'binary value must be bytes'),
        (Array([b'a'], AMQPType.UUID), 'uuid value must be uuid.UUID'),
        (Array([b'a'], AMQPType.DECIMAL128), 'decimal128 value must be 16 bytes'),
        (Array(['a'], AMQPType.DOUBLE), 'float value must be a number'),
        (Array([1], AMQPType.LIST), 'list value must be a list'),
        (Array([1], AMQPType.MAP), 'map value must be a dict'),
        (Array([[1]], AMQPType.ARRAY), 'array value must be an Array'),
    ],
)
def test_encode_invalid_value(value: object, message: str) -> None:
    """Values that do not fit their AMQP type raise AMQPEncodeError."""
    with pytest.raises(AMQPEncodeError, match=message):
        encode_value(value)


@pytest.mark.parametrize(
    ('msg', 'message'),
    [
        (MessageCtx(None, AMQPHeader(priority=256)), 'ubyte value out of range'),
        (MessageCtx(None, AMQPHeader(ttl=-1)), 'uint value out of range'),
        (MessageCtx(None, properties=AMQPProperties(message_id=-1)), 'ulong value out of range'),
        (MessageCtx(None, properties=AMQPProperties(group_sequence=2**32)), 'uint value out of'),
        (MessageCtx(DataSections([b'a', tp.cast(bytes, 'b')])),
         'data section must be bytes, got str'),
        (MessageCtx(SequenceSections([[1], tp.cast(list[int], 2)])), 'must be a list'),
    ],
)
def test_encode_invalid_message(msg: MessageCtx, message: str) -> None:
    """Messages with values out of their field's range raise AMQPEncodeError."""
    with pytest.raises(AMQPEncodeError, match=message):
        encode_message(msg)


def test_encode_invalid_property_type() -> None:
    """String and symbol properties set to other types raise AMQPEncodeError."""
    props = AMQPProperties()
    props.to = tp.cast(str, 1)
    with pytest.raises(AMQPEncodeError, match='message property to must be str'):
        encode_message(MessageCtx(None, properties=props))
    props = AMQPProperties()
    props.content_type = tp.cast(Symbol, 1)
    with pytest.raises(AMQPEncodeError, match='content_type must be Symbol'):
        encode_message(MessageCtx(None, properties=props))


def test_encode_not_a_message() -> None:
    """
    Encoding something other than MessageCtx raises TypeError naming the type
    (Cython's argument check; the codec's own AMQPEncodeError check is never
    reached).
    """
    for value in ('body', None):
        with pytest.raises(TypeError, match=r'MessageCtx, got (str|NoneType)'):
            encode_message(tp.cast(MessageCtx, value))
        with pytest.raises(TypeError, match=r'MessageCtx, got (str|NoneType)'):
            encode_amqp(bytearray(10), tp.cast(MessageCtx, value))
