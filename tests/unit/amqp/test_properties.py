"""
Property-based tests of the AMQP 1.0 codec: every encodable value and
message round-trips, and the encoder picks the smallest encoding.
"""

from __future__ import annotations

import typing as tp

from hypothesis import given, settings
from hypothesis import strategies as st

from rbfly.amqp import (
    AMQPHeader,
    AMQPProperties,
    DataSections,
    MessageCtx,
    SequenceSections,
    Symbol,
    UByte,
    UInt,
    ULong,
    decode_amqp,
    decode_value,
    encode_amqp,
    encode_message,
    encode_value,
)

from ._helpers import (
    assert_same,
    datetimes,
    expected_decoded,
    keys,
    scalars,
    symbols,
    texts,
    values,
)

EXAMPLES = settings(max_examples=300, deadline=None)
FEWER = settings(max_examples=150, deadline=None)
# elements of varied size, so that compounds cross the 8-bit size limit
elements = st.one_of(st.none(), st.integers(-2**63, 2**64 - 1), st.binary(max_size=60), values)


@EXAMPLES
@given(values)
def test_value_roundtrip(value: tp.Any) -> None:
    """decode_value(encode_value(v)) equals v, with the documented decoded type."""
    assert_same(decode_value(encode_value(value)), expected_decoded(value))


@EXAMPLES
@given(values)
def test_value_reencode(value: tp.Any) -> None:
    """Encoding a decoded value gives the same bytes again (Int and Long decode as int)."""
    data = encode_value(value)
    assert encode_value(decode_value(data)) == encode_value(expected_decoded(value))


@EXAMPLES
@given(values, st.sampled_from([bytes, bytearray, memoryview]))
def test_decode_buffer_types(value: tp.Any, kind: tp.Callable[[bytes], tp.Any]) -> None:
    """decode_value accepts bytes, bytearray and memoryview alike."""
    data = encode_value(value)
    assert_same(decode_value(kind(data)), expected_decoded(value))

#
# messages
#

message_ids = st.one_of(
    st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1).map(ULong), st.uuids(),
    st.binary(max_size=40), texts,
)
optional_text = st.none() | texts
headers = st.builds(
    AMQPHeader,
    durable=st.booleans(),
    priority=st.integers(0, 255),
    ttl=st.none() | st.integers(0, 2**32 - 1),
    first_acquirer=st.booleans(),
    delivery_count=st.integers(0, 2**32 - 1),
)
properties = st.builds(
    AMQPProperties,
    message_id=st.none() | message_ids,
    user_id=st.none() | st.binary(max_size=20),
    to=optional_text,
    subject=optional_text,
    reply_to=optional_text,
    correlation_id=st.none() | message_ids,
    content_type=st.none() | symbols,
    content_encoding=st.none() | symbols,
    absolute_expiry_time=st.none() | datetimes,
    creation_time=st.none() | datetimes,
    group_id=optional_text,
    group_sequence=st.none() | st.integers(0, 2**32 - 1),
    reply_to_group_id=optional_text,
)
annotation_maps = st.dictionaries(
    st.one_of(symbols, st.integers(0, 2**64 - 1).map(ULong)), values, max_size=4,
)
bodies = st.one_of(
    st.binary(max_size=600),
    st.lists(st.binary(max_size=300), min_size=2, max_size=4).map(DataSections),
    st.lists(st.lists(values, max_size=4), min_size=1, max_size=3).map(SequenceSections),
    values.filter(lambda v: not isinstance(v, (bytes, bytearray, memoryview))),
)
messages = st.builds(
    MessageCtx,
    bodies,
    header=st.none() | headers,
    delivery_annotations=st.none() | annotation_maps,
    annotations=st.none() | annotation_maps,
    properties=st.none() | properties,
    app_properties=st.none() | st.dictionaries(texts, scalars, max_size=4),
    footer=st.none() | annotation_maps,
)


@EXAMPLES
@given(messages)
def test_message_roundtrip(msg: MessageCtx) -> None:
    """Every section of a message survives encode_message and decode_amqp."""
    decoded = decode_amqp(encode_message(msg))
    body = msg.body
    if isinstance(body, SequenceSections):
        expected: object = SequenceSections(tp.cast(list[tp.Any], expected_decoded(body)))
    elif isinstance(body, DataSections):
        expected = body
    else:
        expected = expected_decoded(body)
    assert_same(decoded.body, expected)
    assert decoded.header == msg.header
    assert decoded.properties == msg.properties
    for name in ('delivery_annotations', 'annotations', 'app_properties', 'footer'):
        assert_same(getattr(decoded, name), expected_decoded(getattr(msg, name)), name)
    if msg.properties.message_id is not None:
        assert_same(decoded.properties.message_id, expected_id(msg.properties.message_id))
    if msg.properties.correlation_id is not None:
        assert_same(decoded.properties.correlation_id,
                    expected_id(msg.properties.correlation_id))


def expected_id(value: object) -> object:
    """A message id given as an int is a ulong (message-id-ulong)."""
    return ULong(value) if type(value) is int else value


@FEWER
@given(messages)
def test_encode_amqp_matches_encode_message(msg: MessageCtx) -> None:
    """encode_amqp writes the bytes of encode_message; a buffer of that size suffices."""
    data = encode_message(msg)
    buffer = bytearray(len(data))
    assert encode_amqp(buffer, msg) == len(data)
    assert buffer == data

#
# smallest encoding
#

def variable_size(size: int) -> int:
    """Size of a variable-width value's encoding: constructor and size field."""
    return (2 if size <= 255 else 5) + size


@EXAMPLES
@given(texts)
def test_smallest_string(value: str) -> None:
    """A string uses str8 while its UTF-8 bytes (not characters) fit 255."""
    size = len(value.encode())
    data = encode_value(value)
    assert data[0] == (0xa1 if size <= 255 else 0xb1)
    assert len(data) == variable_size(size)


@EXAMPLES
@given(st.binary(max_size=600))
def test_smallest_binary(value: bytes) -> None:
    """Binary uses vbin8 up to 255 bytes, vbin32 above."""
    data = encode_value(value)
    assert data[0] == (0xa0 if len(value) <= 255 else 0xb0)
    assert len(data) == variable_size(len(value))


@EXAMPLES
@given(st.text(st.characters(max_codepoint=0x7f), max_size=600))
def test_smallest_symbol(value: str) -> None:
    """A symbol uses sym8 up to 255 bytes, sym32 above."""
    data = encode_value(Symbol(value))
    assert data[0] == (0xa3 if len(value) <= 255 else 0xb3)
    assert len(data) == variable_size(len(value))


def compound_code(items: int, count: int, small: int) -> tuple[int, int]:
    """Expected constructor and total size of a compound's encoding."""
    if items + 1 <= 255 and count <= 255:
        return small, 3 + items
    return small + 0x10, 9 + items


@FEWER
@given(st.lists(elements, max_size=300))
def test_smallest_list(value: list[tp.Any]) -> None:
    """A list uses list0 when empty, list8 while size and count fit a byte."""
    data = encode_value(value)
    if not value:
        assert data == b'\x45'
        return
    items = sum(len(encode_value(v)) for v in value)
    code, size = compound_code(items, len(value), 0xc0)
    assert (data[0], len(data)) == (code, size)


@FEWER
@given(st.dictionaries(keys, elements, max_size=150))
def test_smallest_map(value: dict[tp.Any, tp.Any]) -> None:
    """A map uses map8 while size and count fit a byte."""
    data = encode_value(value)
    items = sum(len(encode_value(k)) + len(encode_value(v)) for k, v in value.items())
    code, size = compound_code(items, 2 * len(value), 0xc1)
    assert (data[0], len(data)) == (code, size)


@EXAMPLES
@given(st.integers(-2**63, 2**64 - 1))
def test_smallest_int(value: int) -> None:
    """An int uses smallint, int, long or ulong, whichever is smallest."""
    data = encode_value(value)
    if -128 <= value <= 127:
        assert (data[0], len(data)) == (0x54, 2)
    elif -2**31 <= value < 2**31:
        assert (data[0], len(data)) == (0x71, 5)
    elif value < 2**63:
        assert (data[0], len(data)) == (0x81, 9)
    else:
        assert (data[0], len(data)) == (0x80, 9)


@EXAMPLES
@given(st.integers(0, 2**64 - 1))
def test_smallest_unsigned(value: int) -> None:
    """uint and ulong use their zero-width and 8-bit forms where the value allows."""
    if value < 2**32:
        data = encode_value(UInt(value))
        expected = 0x43 if value == 0 else 0x52 if value <= 255 else 0x70
        assert data[0] == expected
        assert len(data) == {0x43: 1, 0x52: 2, 0x70: 5}[expected]
    data = encode_value(ULong(value))
    expected = 0x44 if value == 0 else 0x53 if value <= 255 else 0x80
    assert data[0] == expected
    assert len(data) == {0x44: 1, 0x53: 2, 0x80: 9}[expected]
    if value <= 255:
        assert encode_value(UByte(value)) == bytes([0x50, value])
