"""
AMQP 1.0 message sections (OASIS AMQP 1.0, part 3.2 "Message Format")
and the RbFly 0.10 compatible message API.
"""

from __future__ import annotations

import asyncio
import contextvars
import typing as tp
import uuid
from datetime import UTC, datetime

import pytest

from rbfly.amqp import (
    AMQPHeader,
    AMQPProperties,
    AMQPType,
    Array,
    Char,
    DataSections,
    Described,
    Float32,
    MessageCtx,
    SequenceSections,
    Symbol,
    UByte,
    UInt,
    ULong,
    decode_amqp,
    encode_amqp,
    encode_message,
    encode_value,
    get_message_ctx,
    msg_ctx,
    set_message_ctx,
)
from rbfly.error import AMQPEncodeError, RbFlyBufferError

from ._helpers import assert_same, expected_decoded

def h(text: str) -> bytes:
    return bytes.fromhex(text)


TS = datetime(2022, 8, 14, 16, 1, 13, 567000, tzinfo=UTC)

#
# RbFly 0.10 decoding behaviour
#

def test_rbfly_010_data() -> None:
    """A data section decodes as the message body bytes."""
    assert_same(decode_amqp(b'\x00Su\xa0\x05abcde').body, b'abcde')


@pytest.mark.parametrize(
    ('data', 'body'),
    [
        (b'\x00Sw\xa1\x05abcde', 'abcde'),
        (b'\x00Sw\xa3\x05abcde', Symbol('abcde')),
        (b'\x00SwA', True),
        (b'\x00Sw\x71\x7f\xff\xff\xff', 2**31 - 1),
        (b'\x00Sw\x80\xff\xff\xff\xff\xff\xff\xff\xff', ULong(2**64 - 1)),
        (b'\x00Sw\x83\x00\x00\x01\x82\x9d\x16\x7f_', TS),
    ],
)
def test_rbfly_010_value(data: bytes, body: object) -> None:
    """An amqp-value section decodes as the value of its body."""
    assert_same(decode_amqp(data).body, body)


def test_rbfly_010_header() -> None:
    """A header with 3 of its 5 fields gets defaults for the others."""
    msg = decode_amqp(b'\x00Sp\xc0\t\x03AP\x06p\x00\x02\x03\xa0\x00SwA')
    assert msg.header == AMQPHeader(True, 6, 132000, False, 0)
    assert msg.header.durable is True
    assert msg.header.priority == 6
    assert msg.header.ttl == 132000
    assert msg.header.first_acquirer is False
    assert msg.header.delivery_count == 0
    assert msg.body is True


RBFLY_010_PROPERTIES = b'\x00Ss\xc0\x19\x0cS\x1f@@@@@@@@@\xa1\np-group-idC\x00SwA'


def test_rbfly_010_properties() -> None:
    """Properties decode with their types; absent fields are None."""
    props = decode_amqp(RBFLY_010_PROPERTIES).properties
    assert_same(props.message_id, ULong(31))
    assert_same(props.group_id, 'p-group-id')
    assert props.group_sequence == 0
    assert props == AMQPProperties(message_id=31, group_id='p-group-id', group_sequence=0)
    for name in ('user_id', 'to', 'subject', 'reply_to', 'correlation_id', 'content_type',
                 'content_encoding', 'absolute_expiry_time', 'creation_time',
                 'reply_to_group_id'):
        assert getattr(props, name) is None, name


def test_rbfly_010_properties_encode() -> None:
    """An int message id is a ulong (message-id-ulong), group sequence a uint."""
    props = AMQPProperties(message_id=31, group_id='p-group-id', group_sequence=0)
    assert encode_message(MessageCtx(True, properties=props)) == RBFLY_010_PROPERTIES


def test_rbfly_010_annotations() -> None:
    """Message annotations decode as a map with symbol keys."""
    msg = decode_amqp(b'\x00Sr\xc1\x0d\x04\xa3\x01a\xa1\x01b\xa3\x01c\xa1\x01d\x00Sw\xa1\x02ab')
    assert_same(msg.annotations, {Symbol('a'): 'b', Symbol('c'): 'd'})
    assert msg.body == 'ab'

#
# golden messages
#

FULL = MessageCtx(
    'ab',
    header=AMQPHeader(durable=True, priority=6, ttl=132000, first_acquirer=True, delivery_count=3),
    delivery_annotations={Symbol('x-d'): 1},
    annotations={Symbol('x-a'): 'v'},
    properties=AMQPProperties(message_id=31, content_type=Symbol('text/plain'), group_sequence=5),
    app_properties={'k': 'v'},
    footer={Symbol('x-f'): b'\x01'},
)
FULL_BYTES = h(
    '00 53 70 c0 0c 05 41 50 06 70 00 02 03 a0 41 52 03'  # header
    ' 00 53 71 c1 08 02 a3 03 78 2d 64 54 01'  # delivery-annotations
    ' 00 53 72 c1 09 02 a3 03 78 2d 61 a1 01 76'  # message-annotations
    ' 00 53 73 c0 1a 0c 53 1f 40 40 40 40 40 a3 0a 74 65 78 74 2f 70 6c 61 69 6e'
    ' 40 40 40 40 52 05'  # properties
    ' 00 53 74 c1 07 02 a1 01 6b a1 01 76'  # application-properties
    ' 00 53 77 a1 02 61 62'  # amqp-value
    ' 00 53 78 c1 09 02 a3 03 78 2d 66 a0 01 01'  # footer
)


@pytest.mark.parametrize(
    ('msg', 'data'),
    [
        pytest.param(MessageCtx(b'abcde'), b'\x00Su\xa0\x05abcde', id='data'),
        pytest.param(MessageCtx('abcde'), b'\x00Sw\xa1\x05abcde', id='value'),
        pytest.param(MessageCtx(None), b'\x00Sw\x40', id='null'),
        pytest.param(MessageCtx(DataSections([b'a', b''])), h('00 53 75 a0 01 61 00 53 75 a0 00'),
                     id='data-sections'),
        pytest.param(MessageCtx(SequenceSections([[1], []])),
                     h('00 53 76 c0 03 01 54 01 00 53 76 45'), id='sequence-sections'),
        pytest.param(MessageCtx(b'', AMQPHeader(durable=True)),
                     h('00 53 70 c0 07 05 41 50 04 40 42 43 00 53 75 a0 00'), id='header'),
        pytest.param(FULL, FULL_BYTES, id='all-sections'),
    ],
)
def test_golden_message(msg: MessageCtx, data: bytes) -> None:
    """Messages encode as exact bytes, in section order, and decode back."""
    assert encode_message(msg) == data
    assert decode_amqp(data) == msg


def test_default_sections_not_encoded() -> None:
    """A default header, empty properties and empty maps are left out."""
    msg = MessageCtx(b'x', AMQPHeader(), {}, {}, AMQPProperties(), {}, {})
    assert encode_message(msg) == b'\x00Su\xa0\x01x'

#
# section descriptors
#

SECTIONS = [
    (0x70, 'amqp:header:list', [True, UByte(7)]),
    (0x71, 'amqp:delivery-annotations:map', {Symbol('x-d'): 1}),
    (0x72, 'amqp:message-annotations:map', {Symbol('x-a'): 2}),
    (0x73, 'amqp:properties:list', ['id', b'user']),
    (0x74, 'amqp:application-properties:map', {'k': 'v'}),
    (0x75, 'amqp:data:binary', b'body'),
    (0x78, 'amqp:footer:map', {Symbol('x-f'): 3}),
]


def section(descriptor: bytes, value: object) -> bytes:
    return b'\x00' + descriptor + encode_value(value)


@pytest.mark.parametrize('form', ['ulong', 'sym8', 'sym32'])
def test_section_descriptors(form: str) -> None:
    """Sections with ulong or symbol descriptors decode like smallulong ones."""
    small = b''.join(section(bytes([0x53, code]), v) for code, _, v in SECTIONS)
    if form == 'ulong':
        data = b''.join(section(b'\x80' + code.to_bytes(8, 'big'), v) for code, _, v in SECTIONS)
    elif form == 'sym8':
        data = b''.join(section(b'\xa3' + bytes([len(n)]) + n.encode(), v)
                        for _, n, v in SECTIONS)
    else:
        data = b''.join(section(b'\xb3' + len(n).to_bytes(4, 'big') + n.encode(), v)
                        for _, n, v in SECTIONS)
    expected = decode_amqp(small)
    assert expected.header == AMQPHeader(durable=True, priority=7)
    assert expected.properties == AMQPProperties(message_id='id', user_id=b'user')
    assert expected.footer == {Symbol('x-f'): 3}
    assert decode_amqp(data) == expected


@pytest.mark.parametrize(
    ('name', 'value', 'body'),
    [
        ('amqp:amqp-sequence:list', [1], SequenceSections([[1]])),
        ('amqp:amqp-value:*', 'v', 'v'),
    ],
)
def test_body_section_symbols(name: str, value: object, body: object) -> None:
    """The amqp-sequence and amqp-value sections may be named by symbols."""
    data = section(encode_value(Symbol(name)), value)
    assert_same(decode_amqp(data).body, body)

#
# header and properties
#

def test_header_all_fields() -> None:
    """All 5 header fields round-trip with their AMQP types."""
    header = AMQPHeader(durable=True, priority=9, ttl=2**32 - 1, first_acquirer=True,
                        delivery_count=7)
    msg = decode_amqp(encode_message(MessageCtx(None, header)))
    assert msg.header == header
    # AMQPHeader stores its integer fields as plain int
    assert_same(msg.header.priority, 9)
    assert_same(msg.header.ttl, 2**32 - 1)
    assert_same(msg.header.delivery_count, 7)


def test_header_defaults() -> None:
    """Without a header section, the header has the AMQP defaults."""
    header = decode_amqp(b'\x00Sw\x40').header
    assert header == AMQPHeader()
    assert (header.durable, header.priority, header.ttl, header.first_acquirer,
            header.delivery_count) == (False, 4, None, False, 0)


@pytest.mark.parametrize(
    'message_id',
    [ULong(2**64 - 1), 31, uuid.UUID(int=0x1234), b'\x00id', 'id-1'],
    ids=['ulong', 'int', 'uuid', 'binary', 'string'],
)
def test_properties_all_fields(message_id: tp.Any) -> None:
    """All 13 properties round-trip with their AMQP types."""
    props = AMQPProperties(
        message_id=message_id, user_id=b'user', to='/queues/q', subject='subj',
        reply_to='/queues/r', correlation_id=message_id, content_type=Symbol('text/plain'),
        content_encoding=Symbol('gzip'), absolute_expiry_time=TS,
        creation_time=datetime(2000, 1, 2, tzinfo=UTC), group_id='g', group_sequence=2**32 - 1,
        reply_to_group_id='rg',
    )
    decoded = decode_amqp(encode_message(MessageCtx(b'', properties=props))).properties
    assert decoded == props
    expected_id = ULong(message_id) if type(message_id) is int else message_id
    assert_same(decoded.message_id, expected_id)
    assert_same(decoded.correlation_id, expected_id)
    assert_same(decoded.user_id, b'user')
    assert_same(decoded.content_type, Symbol('text/plain'))
    assert_same(decoded.content_encoding, Symbol('gzip'))
    assert_same(decoded.absolute_expiry_time, TS)
    assert_same(decoded.creation_time, datetime(2000, 1, 2, tzinfo=UTC))
    assert_same(decoded.group_sequence, 2**32 - 1)  # a plain int, like header fields
    for name in ('to', 'subject', 'reply_to', 'group_id', 'reply_to_group_id'):
        assert type(getattr(decoded, name)) is str


def test_properties_content_type_str() -> None:
    """A content type given as str is encoded as a symbol."""
    props = AMQPProperties(content_type=tp.cast(Symbol, 'text/plain'))
    data = encode_message(MessageCtx(b'', properties=props))
    assert data.startswith(h('00 53 73 c0 13 07 40 40 40 40 40 40 a3 0a'))
    assert_same(decode_amqp(data).properties.content_type, Symbol('text/plain'))

#
# body
#

@pytest.mark.parametrize(
    ('body', 'expected'),
    [
        pytest.param(b'abc', b'abc', id='data'),
        pytest.param(bytearray(b'abc'), b'abc', id='data-bytearray'),
        pytest.param(memoryview(b'abc'), b'abc', id='data-memoryview'),
        pytest.param(DataSections([b'a', b'b', b'c']), DataSections([b'a', b'b', b'c']),
                     id='data-sections'),
        pytest.param(DataSections([b'a']), b'a', id='data-sections-one'),
        pytest.param(SequenceSections([[1, 'a'], [], [None]]),
                     SequenceSections([[1, 'a'], [], [None]]), id='sequence-sections'),
        pytest.param(SequenceSections([tp.cast(list[int], (1,))]), SequenceSections([[1]]),
                     id='sequence-tuple'),
    ],
)
def test_body_sections(body: tp.Any, expected: object) -> None:
    """Bytes, DataSections and SequenceSections map to data and amqp-sequence sections."""
    assert_same(decode_amqp(encode_message(MessageCtx(body))).body, expected)


VALUES = [
    None, True, False, 0, -1, 2**31, -2**63, 2**64 - 1, 1.5, 'text ż \U0001f600', Symbol('sym'),
    TS, uuid.UUID(int=1), [b'a', 'b'], [], {'k': [1, {Symbol('n'): None}]}, {}, UByte(1),
    UInt(0), ULong(2**63), Float32(0.25), Char('c'), Array([1, 2], AMQPType.LONG),
    Array([Symbol('a')], AMQPType.SYMBOL, ULong(9)), Described(Symbol('d'), [1]),
]


@pytest.mark.parametrize('value', VALUES, ids=repr)
def test_body_value(value: tp.Any) -> None:
    """Any other body is a single amqp-value section."""
    data = encode_message(MessageCtx(value))
    assert data[:3] == b'\x00\x53\x77'
    assert_same(decode_amqp(data).body, expected_decoded(value))


def test_empty_body_sections() -> None:
    """DataSections and SequenceSections need at least one section."""
    with pytest.raises(AMQPEncodeError, match='at least one section'):
        encode_message(MessageCtx(DataSections()))
    with pytest.raises(AMQPEncodeError, match='at least one section'):
        encode_message(MessageCtx(SequenceSections()))

#
# RbFly 0.10 API
#

def test_positional_construction() -> None:
    """MessageCtx(body, header, ...) takes the 6 sections positionally."""
    msg = MessageCtx(b'body', None, None, None, None, None, None)
    assert msg.body == b'body'
    assert msg.header == AMQPHeader()
    assert msg.properties == AMQPProperties()
    assert msg.delivery_annotations == {}
    assert msg.annotations == {}
    assert msg.app_properties == {}
    assert msg.footer == {}
    assert (msg.stream_offset, msg.stream_timestamp, msg.stream_publish_id) == (0, 0, 0)


def test_msg_ctx() -> None:
    """msg_ctx creates a message with annotations, properties and stream data."""
    msg = msg_ctx('b', annotations={Symbol('a'): 1}, app_properties={'p': 2}, stream_offset=5,
                  stream_timestamp=1.5, stream_publish_id=7)
    assert msg == MessageCtx('b', annotations={Symbol('a'): 1}, app_properties={'p': 2},
                             stream_offset=5, stream_timestamp=1.5, stream_publish_id=7)
    assert msg_ctx('b').stream_publish_id == 0


def test_encode_amqp() -> None:
    """encode_amqp writes into a caller's buffer and returns the size."""
    buffer = bytearray(200)
    size = encode_amqp(buffer, FULL)
    assert size == len(FULL_BYTES)
    assert buffer[:size] == FULL_BYTES
    assert len(buffer) == 200
    view = memoryview(bytearray(200))
    assert encode_amqp(view, FULL) == size
    assert bytes(view[:size]) == FULL_BYTES


@pytest.mark.parametrize('size', [0, 1, len(FULL_BYTES) - 1])
def test_encode_amqp_buffer_too_small(size: int) -> None:
    """A too small buffer raises RbFlyBufferError and is not resized."""
    buffer = bytearray(size)
    with pytest.raises(RbFlyBufferError, match='buffer too small'):
        encode_amqp(buffer, FULL)
    assert len(buffer) == size


@pytest.mark.parametrize('body', [[1] * 10, [[b'x' * 200]], {'k': [[[1]]]}, FULL.body])
def test_encode_amqp_exact_buffer(body: tp.Any) -> None:
    """A message fits into a buffer of exactly its size (8-bit compounds included)."""
    msg = MessageCtx(body, FULL.header, FULL.delivery_annotations, FULL.annotations,
                     FULL.properties, FULL.app_properties, FULL.footer)
    data = encode_message(msg)
    buffer = bytearray(len(data))
    assert encode_amqp(buffer, msg) == len(data)
    assert buffer == data


@pytest.mark.parametrize('kind', [bytes, bytearray, memoryview])
def test_decode_amqp_buffers(kind: tp.Callable[[bytes], tp.Any]) -> None:
    """decode_amqp accepts bytes, bytearray and memoryview."""
    assert decode_amqp(kind(FULL_BYTES)) == FULL


def test_message_ctx_var() -> None:
    """get_message_ctx returns the message set with set_message_ctx."""
    def run() -> None:
        with pytest.raises(LookupError):
            get_message_ctx()
        msg = MessageCtx('x')
        set_message_ctx(msg)
        assert get_message_ctx() is msg

    contextvars.Context().run(run)


def test_message_ctx_isolated_between_tasks() -> None:
    """Each asyncio task sees the message context it set itself."""
    async def worker(n: int) -> int:
        set_message_ctx(MessageCtx(n))
        await asyncio.sleep(0)
        await asyncio.sleep(0.001 * (5 - n))
        return tp.cast(int, get_message_ctx().body)

    async def main() -> list[int]:
        return await asyncio.gather(*(worker(i) for i in range(5)))

    assert asyncio.run(main()) == list(range(5))


def test_repr() -> None:
    """Reprs name the body (shortened), stream data and sections."""
    msg = MessageCtx(b'0123456789abc', annotations={Symbol('a'): 1}, stream_offset=3)
    text = repr(msg)
    assert text.startswith("MessageCtx(body=b'0123456789...', stream_offset=3,")
    assert 'annotations={Symbol<a>: 1}' in text
    assert repr(MessageCtx('short')).startswith("MessageCtx(body='short',")
    assert repr(AMQPHeader()) == (
        'AMQPHeader(durable=False, priority=4, ttl=None, first_acquirer=False,'
        ' delivery_count=0)'
    )
    assert repr(AMQPProperties(subject='s')) == "AMQPProperties(subject='s')"


def test_equality() -> None:
    """Messages compare by body, sections and stream data; they are not hashable."""
    assert MessageCtx('a') == MessageCtx('a', AMQPHeader(), {}, {}, AMQPProperties(), {}, {})
    assert MessageCtx('a') != MessageCtx('b')
    assert MessageCtx('a') != MessageCtx('a', AMQPHeader(durable=True))
    assert MessageCtx('a') != MessageCtx('a', stream_offset=1)
    assert MessageCtx('a') != MessageCtx('a', properties=AMQPProperties(subject='s'))
    other: object = 'a'
    assert MessageCtx('a') != other
    fields: object = (False, 4, None, False, 0)
    assert AMQPHeader() != fields
    with pytest.raises(TypeError):
        hash(MessageCtx('a'))


def test_decoded_message_sections_lazy() -> None:
    """Sections absent from a decoded message read as empty and can be set."""
    msg = decode_amqp(b'\x00Sw\x40')
    assert msg.app_properties == {}
    msg.app_properties['k'] = 'v'
    assert decode_amqp(encode_message(msg)).app_properties == {'k': 'v'}


@pytest.mark.parametrize('data', [
    h('00 53 73 45 00 53 70 45 00 53 77 41'),  # properties before header
    h('00 53 77 41 00 53 72 c1 01 00'),  # annotations after the body
    h('00 53 77 41 00 53 78 c1 01 00 00 53 71 c1 01 00'),  # rstream: delivery annotations last
])
def test_sections_in_any_order(data: bytes) -> None:
    """Sections out of the grammar's order are accepted (other clients write them)."""
    assert decode_amqp(data).body is True
