"""
Shared helpers of the AMQP codec tests: strict comparison of decoded values
and Hypothesis strategies of encodable values.
"""

from __future__ import annotations

import math
import typing as tp
from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st

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
)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MIN_MS = -62135596800000  # 0001-01-01T00:00:00Z
MAX_MS = 253402300799999  # 9999-12-31T23:59:59.999Z


def assert_same(actual: object, expected: object, path: str = '$') -> None:
    """
    Assert that ``actual`` equals ``expected`` and has exactly the same
    Python type, recursively; NaN equals NaN, and -0.0 differs from 0.0.
    """
    assert type(actual) is type(expected), '{}: {!r} is {}, expected {!r} of {}'.format(
        path, actual, type(actual).__name__, expected, type(expected).__name__,
    )
    if isinstance(expected, float):
        assert isinstance(actual, float)
        if math.isnan(expected):
            assert math.isnan(actual), '{}: {!r} is not NaN'.format(path, actual)
        else:
            assert actual == expected, '{}: {!r} != {!r}'.format(path, actual, expected)
            assert math.copysign(1, actual) == math.copysign(1, expected), path
    elif isinstance(expected, Array):
        assert isinstance(actual, Array)
        assert actual.type == expected.type, '{}: array type {!r} != {!r}'.format(
            path, actual.type, expected.type,
        )
        assert_same(actual.descriptor, expected.descriptor, path + '.descriptor')
        assert_items(actual, expected, path)
    elif isinstance(expected, list):
        assert isinstance(actual, list)
        assert_items(actual, expected, path)
    elif isinstance(expected, dict):
        assert isinstance(actual, dict)
        assert len(actual) == len(expected), path
        keys = {k: k for k in actual}
        assert list(keys) == list(expected), '{}: keys {!r} != {!r}'.format(
            path, list(keys), list(expected),
        )
        for key, value in expected.items():
            assert_same(keys[key], key, '{}[{!r}] key'.format(path, key))
            assert_same(actual[key], value, '{}[{!r}]'.format(path, key))
    elif isinstance(expected, Described):
        assert isinstance(actual, Described)
        assert_same(actual.descriptor, expected.descriptor, path + '.descriptor')
        assert_same(actual.value, expected.value, path + '.value')
    elif isinstance(expected, datetime):
        assert isinstance(actual, datetime)
        assert actual == expected, '{}: {!r} != {!r}'.format(path, actual, expected)
        assert actual.utcoffset() == timedelta(0), '{}: {!r} not in UTC'.format(path, actual)
    else:
        assert actual == expected, '{}: {!r} != {!r}'.format(path, actual, expected)


def assert_items(actual: list[tp.Any], expected: list[tp.Any], path: str) -> None:
    """Compare two lists element by element with :py:func:`assert_same`."""
    assert len(actual) == len(expected), '{}: length {} != {}'.format(
        path, len(actual), len(expected),
    )
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert_same(a, e, '{}[{}]'.format(path, i))


def expected_decoded(value: object) -> object:
    """
    Value that decoding the encoding of ``value`` must give, following the
    mapping documented in :py:mod:`rbfly.amqp.types`.
    """
    t = type(value)
    if t in (Int, Long):
        return int(tp.cast(int, value))
    if t is int:
        number = tp.cast(int, value)
        return ULong(number) if number > 2**63 - 1 else value
    if t is bytearray or t is memoryview:
        return bytes(tp.cast(bytes, value))
    if t is datetime:
        assert isinstance(value, datetime)
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if isinstance(value, Array):
        return Array(
            [expected_decoded(v) for v in value], value.type,
            expected_decoded(value.descriptor),
        )
    if isinstance(value, (list, tuple)):
        return [expected_decoded(v) for v in value]
    if isinstance(value, dict):
        return {expected_decoded(k): expected_decoded(v) for k, v in value.items()}
    if isinstance(value, Described):
        return Described(expected_decoded(value.descriptor), expected_decoded(value.value))
    return value


#
# Hypothesis strategies
#

ascii_text = st.text(st.characters(max_codepoint=0x7f), max_size=300)
symbols = ascii_text.map(Symbol)
# UTC timestamps with millisecond precision (AMQP timestamps are in ms)
datetimes = st.integers(MIN_MS, MAX_MS).map(lambda ms: EPOCH + timedelta(milliseconds=ms))
# text without surrogates (not encodable as UTF-8), incl. non-ASCII and astral
texts = st.text(st.characters(exclude_categories=['Cs']), max_size=300)

uint_types: dict[AMQPType, st.SearchStrategy[tp.Any]] = {
    AMQPType.UBYTE: st.integers(0, 0xff).map(UByte),
    AMQPType.USHORT: st.integers(0, 0xffff).map(UShort),
    AMQPType.UINT: st.integers(0, 2**32 - 1).map(UInt),
    AMQPType.ULONG: st.integers(0, 2**64 - 1).map(ULong),
    AMQPType.BYTE: st.integers(-0x80, 0x7f).map(Byte),
    AMQPType.SHORT: st.integers(-0x8000, 0x7fff).map(Short),
    AMQPType.INT: st.integers(-2**31, 2**31 - 1),
    AMQPType.LONG: st.integers(-2**63, 2**63 - 1),
}

# element strategies of array types; elements are given in their decoded type
array_elements: dict[AMQPType, st.SearchStrategy[tp.Any]] = {
    **uint_types,
    AMQPType.NULL: st.none(),
    AMQPType.BOOLEAN: st.booleans(),
    AMQPType.FLOAT: st.floats(width=32).map(Float32),
    AMQPType.DOUBLE: st.floats(),
    AMQPType.DECIMAL32: st.integers(0, 2**32 - 1).map(Decimal32),
    AMQPType.DECIMAL64: st.integers(0, 2**64 - 1).map(Decimal64),
    AMQPType.DECIMAL128: st.binary(min_size=16, max_size=16).map(Decimal128),
    AMQPType.CHAR: st.characters().map(Char),
    AMQPType.TIMESTAMP: datetimes,
    AMQPType.UUID: st.uuids(),
    AMQPType.BINARY: st.binary(max_size=300),
    AMQPType.STRING: texts,
    AMQPType.SYMBOL: symbols,
}

scalars: st.SearchStrategy[tp.Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2**63, 2**64 - 1),
    st.floats(),
    texts,
    st.binary(max_size=300),
    symbols,
    datetimes,
    st.uuids(),
    *uint_types.values(),
    st.integers(-2**31, 2**31 - 1).map(Int),
    st.integers(-2**63, 2**63 - 1).map(Long),
    st.floats(width=32).map(Float32),
    st.characters().map(Char),
    st.integers(0, 2**32 - 1).map(Decimal32),
    st.integers(0, 2**64 - 1).map(Decimal64),
    st.binary(min_size=16, max_size=16).map(Decimal128),
    st.one_of(
        st.integers(-2**63, MIN_MS - 1), st.integers(MAX_MS + 1, 2**63 - 1),
    ).map(Timestamp),
)

# map keys: hashable and equal to themselves (no NaN)
keys: st.SearchStrategy[tp.Any] = st.one_of(
    st.none(), st.booleans(), st.integers(-2**63, 2**64 - 1), texts, st.binary(max_size=20),
    symbols, st.uuids(), datetimes, st.integers(0, 2**64 - 1).map(ULong),
)
descriptors: st.SearchStrategy[tp.Any] = st.one_of(
    st.integers(0, 2**64 - 1).map(ULong), symbols,
)


@st.composite
def arrays(draw: st.DrawFn, values: st.SearchStrategy[tp.Any]) -> Array:
    """An array of one AMQP type, possibly described."""
    kind = draw(st.sampled_from([*array_elements, AMQPType.LIST, AMQPType.MAP, AMQPType.ARRAY]))
    if kind == AMQPType.LIST:
        elements: st.SearchStrategy[tp.Any] = st.lists(values, max_size=3)
    elif kind == AMQPType.MAP:
        elements = st.dictionaries(keys, values, max_size=3)
    elif kind == AMQPType.ARRAY:
        elements = st.sampled_from(list(array_elements)).flatmap(
            lambda t: st.lists(array_elements[t], max_size=3).map(lambda v: Array(v, t))
        )
    else:
        elements = array_elements[kind]
    items = draw(st.lists(elements, max_size=8))
    descriptor = draw(st.one_of(st.none(), descriptors))
    return Array(items, kind, descriptor)


def compounds(values: st.SearchStrategy[tp.Any]) -> st.SearchStrategy[tp.Any]:
    """Lists, tuples, maps, arrays and described values of ``values``."""
    return st.one_of(
        st.lists(values, max_size=8),
        st.lists(values, max_size=4).map(tuple),
        st.dictionaries(keys, values, max_size=8),
        arrays(values),
        st.builds(Described, descriptors, values),
    )


values: st.SearchStrategy[tp.Any] = st.recursive(scalars, compounds, max_leaves=20)
