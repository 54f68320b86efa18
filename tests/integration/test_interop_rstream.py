"""
Interoperability with rstream (RabbitMQ's Python streams client) through
the real brokers, RabbitMQ 3.10 and 4.x: what one client publishes, the
other reads with every AMQP 1.0 section intact, at the same offsets; raw
binary messages and rstream's sub-entry batches (gzip too) as well.

rstream's decoder (a copy of Azure's pyamqp) represents AMQP values in its
own way; the tests map rbfly's values to it explicitly (:py:func:`rs_value`
and the comments at each expected value):

- string and symbol -> UTF-8 ``bytes``: on the rstream side a string, a
  symbol and a binary are indistinguishable;
- timestamp -> ``int``, milliseconds since the Unix epoch;
- null, boolean, integers, double, binary, uuid, list, map -> the same
  Python value (list and map elements mapped the same way).

rstream quirks found, each asserted below (so a change in rstream shows):

- of several data sections, ``AMQPMessage.body`` keeps only the last one;
- its encoder writes the delivery-annotations section *last*, after the
  body and the footer, against the section order of AMQP 1.0 (3.2); the
  broker stores the record as it is, and rbfly's decoder rejects it;
- a falsy amqp-value (``0``, ``''``, ``False``, ...) is not encoded at all:
  the record has no section, rbfly reads its body as ``None``.

The brokers keep delivery annotations: a stream stores each message
byte for byte, as its publisher encoded it.
"""

from __future__ import annotations

import asyncio
import contextlib
import typing as tp
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime, timedelta
from urllib.parse import unquote, urlsplit

import pytest
from rstream import (
    AMQPMessage,
    CompressionType,
    ConfirmationStatus,
    Consumer,
    ConsumerOffsetSpecification,
    Header,
    MessageContext,
    OffsetType,
    Producer,
    Properties,
    amqp_decoder,
)

from rbfly.amqp import (
    AMQPHeader,
    AMQPProperties,
    DataSections,
    MessageCtx,
    SequenceSections,
    Symbol,
    decode_amqp,
    encode_message,
)
from rbfly.streams import (
    Offset,
    PublisherBatchFast,
    PublisherBin,
    PublisherBinBatch,
    StreamsClient,
    get_message_ctx,
)
from rbfly.types import AMQPBody

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
CREATED = datetime(2024, 2, 29, 12, 30, 15, 123000, tzinfo=UTC)
EXPIRES = datetime(2030, 1, 1, 0, 0, 0, 1000, tzinfo=UTC)
ID = uuid.UUID('6f1c7f0e-3a5b-4c2d-9e8f-0a1b2c3d4e5f')
TEXT = 'żółw ∑ 日本語 🐢'
PROPERTY_NAMES = (
    'message_id', 'user_id', 'to', 'subject', 'reply_to', 'correlation_id',
    'content_type', 'content_encoding', 'absolute_expiry_time', 'creation_time',
    'group_id', 'group_sequence', 'reply_to_group_id',
)
# binary payloads, not AMQP messages (the last one only looks like one)
PAYLOADS = [b'', b'\x00\xff', b'plain text', bytes(range(256)), b'x' * 100_000,
            b'\x00Sw\xa1\x01x']

def ms(value: datetime) -> int:
    """An AMQP timestamp: milliseconds since the Unix epoch."""
    return (value - EPOCH) // timedelta(milliseconds=1)

def rs_value(value: object) -> object:
    """How rstream's decoder represents a value rbfly encoded."""
    if isinstance(value, str):  # string -> UTF-8 bytes
        return value.encode()
    if isinstance(value, Symbol):  # symbol -> bytes, like a string
        return value.name.encode()
    if isinstance(value, datetime):  # timestamp -> int milliseconds
        return ms(value)
    if isinstance(value, dict):  # map -> dict, keys and values mapped
        return {rs_value(k): rs_value(v) for k, v in value.items()}
    if isinstance(value, list):  # list -> list, elements mapped
        return [rs_value(v) for v in value]
    return value  # null, bool, int, float, bytes, uuid: the same

def rs_body(body: AMQPBody) -> tuple[object, object, object]:
    """``(body, sequence, value)`` of rstream's message for an rbfly body."""
    if isinstance(body, DataSections):  # quirk: only the last data section
        return body[-1], None, None
    if isinstance(body, bytes):  # one data section
        return body, None, None
    if isinstance(body, SequenceSections):  # amqp-sequence sections, in a list
        return None, rs_value(list(body)), None
    return None, None, rs_value(body)  # amqp-value

def rb_props(props: AMQPProperties) -> dict[str, object]:
    """rbfly's properties section as a dict, for readable differences."""
    return {name: getattr(props, name) for name in PROPERTY_NAMES}

def rs_params(url: str) -> dict[str, tp.Any]:
    """rstream's connection parameters for a broker URL."""
    p = urlsplit(url)
    return {
        'host': p.hostname or 'localhost', 'port': p.port or 5552,
        'username': unquote(p.username or 'guest'),
        'password': unquote(p.password or 'guest'),
    }

@contextlib.asynccontextmanager
async def rs_producer(url: str) -> AsyncIterator[Producer]:
    """An rstream producer, closed at the end."""
    producer = Producer(**rs_params(url))
    await producer.start()
    try:
        yield producer
    finally:
        await producer.close()

async def rs_publish(url: str, stream: str, messages: Sequence[AMQPMessage | bytes]) -> list[int]:
    """
    Publish with rstream's ``send_batch``, 500 messages a frame; return the
    publishing ids the broker confirmed, once all are confirmed.
    """
    confirmed: list[ConfirmationStatus] = []
    done = asyncio.Event()

    def on_confirm(status: ConfirmationStatus) -> None:
        confirmed.append(status)
        if len(confirmed) == len(messages):
            done.set()

    async with rs_producer(url) as producer:
        for i in range(0, len(messages), 500):
            await producer.send_batch(stream, messages[i:i + 500], on_publish_confirm=on_confirm)
        async with asyncio.timeout(10):
            await done.wait()
    assert all(s.is_confirmed and s.response_code == 0 for s in confirmed)
    # rstream's confirmation callbacks do not always come in publishing order
    return sorted(s.message_id for s in confirmed)

async def rs_read(
        url: str, stream: str, count: int, decoder: Callable[[bytes], tp.Any] | None = None,
) -> list[tuple[int, tp.Any]]:
    """
    Read ``count`` messages from the first offset with an rstream consumer
    (raw bytes without a decoder); return their offsets and messages.
    """
    received: list[tuple[int, tp.Any]] = []
    done = asyncio.Event()

    def on_message(message: tp.Any, ctx: MessageContext) -> None:
        received.append((ctx.offset, message))
        if len(received) >= count:
            done.set()

    consumer = Consumer(**rs_params(url))
    try:
        await consumer.subscribe(
            stream, on_message, decoder=decoder,
            offset_specification=ConsumerOffsetSpecification(OffsetType.FIRST, None),
        )
        try:
            async with asyncio.timeout(10):
                await done.wait()
        except TimeoutError:
            pytest.fail('rstream received {} of {} messages'.format(len(received), count))
    finally:
        await consumer.close()
    return received

def raw_and_amqp(data: bytes) -> tuple[bytes, AMQPMessage]:
    """rstream decoder keeping the record's bytes too."""
    return data, amqp_decoder(data)

async def rb_read(
        client: StreamsClient, stream: str, count: int, *,
        amqp: bool = True, offset: Offset = Offset.FIRST,
) -> list[MessageCtx]:
    """Read ``count`` messages with rbfly; fail on a 5 s silence."""
    result: list[MessageCtx] = []
    async for _ in client.subscribe(stream, offset=offset, amqp=amqp, timeout=5):
        result.append(get_message_ctx())
        if len(result) == count:
            break
    return result

async def last_offset(client: StreamsClient, stream: str) -> int:
    """Offset of the last message of a stream (the end of its last chunk)."""
    async for chunk in client.subscribe_chunks(stream, offset=Offset.LAST, timeout=5):
        return chunk[-1].stream_offset
    raise AssertionError('not reached')

#
# rbfly publishes, rstream reads
#

def full_message(message_id: str | int | bytes | uuid.UUID,
                 correlation_id: str | int | bytes | uuid.UUID) -> MessageCtx:
    """A message with every section and every property."""
    return MessageCtx(
        TEXT,
        header=AMQPHeader(
            durable=True, priority=9, ttl=60_000, first_acquirer=True, delivery_count=3,
        ),
        delivery_annotations={Symbol('x-opt-hop'): 'eu-1', Symbol('x-opt-n'): 2},
        annotations={Symbol('x-opt-routing'): 'orders', Symbol('x-opt-n'): 7},
        properties=AMQPProperties(
            message_id=message_id, user_id=b'guest', to='/queues/orders',
            subject='new order', reply_to='/queues/replies', correlation_id=correlation_id,
            content_type=Symbol('application/json'), content_encoding=Symbol('gzip'),
            absolute_expiry_time=EXPIRES, creation_time=CREATED, group_id='group-ż',
            group_sequence=42, reply_to_group_id='replies',
        ),
        app_properties={
            'str': 'żółw', 'int': -5, 'long': 2**40, 'bool': True, 'false': False,
            'float': 2.5, 'none': None, 'bytes': b'\x00\xff', 'symbol': Symbol('sym'),
            'datetime': CREATED, 'uuid': ID,
        },
        footer={Symbol('x-opt-hmac'): b'\x01\x02', Symbol('x-opt-alg'): 'sha256'},
    )

async def test_rbfly_to_rstream_all_sections(
        client: StreamsClient, any_url: str, stream: str,
) -> None:
    """
    Every section and property rbfly sends reaches rstream, delivery
    annotations included, and the record is stored byte for byte.
    """
    ids: list[tuple[str | int | bytes | uuid.UUID, str | int | bytes | uuid.UUID]] = [
        ('order-1', ID), (2**64 - 1, b'\x00corr'), (ID, 'corr'), (b'\x01id', 12),
    ]
    messages = [full_message(m, c) for m, c in ids]
    async with client.publisher(stream, cls=PublisherBatchFast) as publisher:
        for msg in messages:
            publisher.batch(msg)
        await publisher.flush()

    received = await rs_read(any_url, stream, len(messages), raw_and_amqp)
    assert [offset for offset, _ in received] == list(range(len(messages)))
    cases = zip(ids, messages, received, strict=True)
    for (message_id, correlation_id), msg, (_, (raw, m)) in cases:
        assert raw == encode_message(msg)  # the broker stored the record verbatim
        assert m.header == Header(
            durable=True, priority=9, ttl=60_000, first_acquirer=True, delivery_count=3,
        )
        # delivery annotations survive a stream: symbol keys and string
        # values -> bytes, int -> int
        assert m.delivery_annotations == {b'x-opt-hop': b'eu-1', b'x-opt-n': 2}
        assert m.message_annotations == {b'x-opt-routing': b'orders', b'x-opt-n': 7}
        assert m.properties is not None
        assert m.properties._asdict() == {
            'message_id': rs_value(message_id),  # str -> bytes; ulong, binary, uuid same
            'user_id': b'guest',  # binary
            'to': b'/queues/orders',  # string -> bytes
            'subject': b'new order',  # string -> bytes
            'reply_to': b'/queues/replies',  # string -> bytes
            'correlation_id': rs_value(correlation_id),  # like message_id
            'content_type': b'application/json',  # symbol -> bytes
            'content_encoding': b'gzip',  # symbol -> bytes
            'absolute_expiry_time': ms(EXPIRES),  # timestamp -> int ms
            'creation_time': ms(CREATED),  # timestamp -> int ms
            'group_id': 'group-ż'.encode(),  # string -> bytes
            'group_sequence': 42,  # uint -> int
            'reply_to_group_id': b'replies',  # string -> bytes
        }
        assert m.application_properties == {
            b'str': 'żółw'.encode(),  # keys: string -> bytes; string -> bytes
            b'int': -5,
            b'long': 2**40,
            b'bool': True,
            b'false': False,
            b'float': 2.5,
            b'none': None,
            b'bytes': b'\x00\xff',  # binary
            b'symbol': b'sym',  # symbol -> bytes (same as a string)
            b'datetime': ms(CREATED),  # timestamp -> int ms
            b'uuid': ID,
        }
        assert m.footer == {b'x-opt-hmac': b'\x01\x02', b'x-opt-alg': b'sha256'}
        assert (m.body, m.sequence, m.value) == (None, None, TEXT.encode())

BODIES: list[AMQPBody] = [
    b'\x00binary\xff',
    b'',
    DataSections([b'one', b'\x00two', b'three']),
    SequenceSections([[1, 'a'], [True, None, 2.5]]),
    SequenceSections([[]]),
    'text',
    TEXT,
    '',
    'ż' * 200,  # str32
    0,
    -1,
    2**40,
    2**64 - 1,  # ulong
    -2**63,
    1.5,
    True,
    False,
    None,
    ID,
    CREATED,
    Symbol('a-symbol'),
    [1, 'two', 3.5, None, [b'\x00', []]],
    [],
    {},
    {'a': 1, 'b': 'c', 'ż': TEXT},
    {
        'nested': [{'deep': [1, [2, [3, {'x': 'ŷ'}]]]}], 'uuid': ID, 'when': CREATED,
        'sym': Symbol('s'), 'bin': b'\x00', 'big': list(range(100)),  # list32, map32
    },
]

async def test_rbfly_to_rstream_bodies(
        client: StreamsClient, any_url: str, stream: str,
) -> None:
    """
    Bodies of every kind (data, several data sections, amqp-sequence,
    amqp-value of scalars and nested structures) reach rstream.
    """
    async with client.publisher(stream, cls=PublisherBatchFast) as publisher:
        for body in BODIES:
            publisher.batch(body)
        await publisher.flush()

    received = await rs_read(any_url, stream, len(BODIES), raw_and_amqp)
    assert [offset for offset, _ in received] == list(range(len(BODIES)))
    for body, (_, (raw, m)) in zip(BODIES, received, strict=True):
        assert (m.body, m.sequence, m.value) == rs_body(body), body
        assert m.header is None and m.properties is None
        # rstream drops all data sections but the last, the record has them all
        decoded = decode_amqp(raw).body
        assert decoded == body
        assert isinstance(decoded, type(body))  # 2**64 - 1 is read as ULong, an int

#
# rstream publishes, rbfly reads
#

async def test_rstream_to_rbfly_all_sections(
        client: StreamsClient, any_url: str, stream: str,
) -> None:
    """
    A message with header, message annotations, all 13 properties,
    application properties and footer, sent with rstream's ``send_wait``,
    is read by rbfly with every section intact.
    """
    message = AMQPMessage(
        header=Header(durable=True, priority=9, ttl=60_000, first_acquirer=True,
                      delivery_count=3),
        # str keys -> symbol, int keys -> ulong
        message_annotations={'x-opt-routing': 'orders', 'x-opt-n': 7, 42: 'ulong key'},
        properties=Properties(
            message_id='order-1', user_id=b'guest', to='/queues/orders',
            subject='new order', reply_to='/queues/replies',
            correlation_id=12345,  # ulong
            content_type='application/json', content_encoding='gzip',  # symbols
            absolute_expiry_time=ms(EXPIRES),  # int ms, or a datetime
            creation_time=CREATED, group_id='group-ż', group_sequence=42,
            reply_to_group_id='replies',
        ),
        application_properties={
            'str': 'żółw', 'int': -5, 'long': 2**40, 'bool': True, 'false': False,
            'float': 2.5, 'none': None, 'bytes': b'\x00\xff', 'datetime': CREATED, 'uuid': ID,
        },
        footer={'x-opt-hmac': b'\x01\x02', 'x-opt-alg': 'sha256'},
        value={'order': 1, 'items': ['book', TEXT]},
    )
    async with rs_producer(any_url) as producer:
        assert await producer.send_wait(stream, message) == 1

    [ctx] = await rb_read(client, stream, 1)
    assert ctx.stream_offset == 0
    assert ctx.body == {'order': 1, 'items': ['book', TEXT]}
    assert ctx.header == AMQPHeader(
        durable=True, priority=9, ttl=60_000, first_acquirer=True, delivery_count=3,
    )
    assert ctx.delivery_annotations == {}
    assert ctx.annotations == {
        Symbol('x-opt-routing'): 'orders', Symbol('x-opt-n'): 7, 42: 'ulong key',
    }
    assert rb_props(ctx.properties) == {
        'message_id': 'order-1', 'user_id': b'guest', 'to': '/queues/orders',
        'subject': 'new order', 'reply_to': '/queues/replies', 'correlation_id': 12345,
        'content_type': Symbol('application/json'), 'content_encoding': Symbol('gzip'),
        'absolute_expiry_time': EXPIRES, 'creation_time': CREATED,  # aware UTC datetimes
        'group_id': 'group-ż', 'group_sequence': 42, 'reply_to_group_id': 'replies',
    }
    assert ctx.app_properties == {
        'str': 'żółw', 'int': -5, 'long': 2**40, 'bool': True, 'false': False,
        'float': 2.5, 'none': None, 'bytes': b'\x00\xff', 'datetime': CREATED, 'uuid': ID,
    }
    assert ctx.footer == {Symbol('x-opt-hmac'): b'\x01\x02', Symbol('x-opt-alg'): 'sha256'}

def rs_bodies() -> list[tuple[AMQPMessage, AMQPBody]]:
    """
    rstream messages and the bodies rbfly reads; new messages for each
    test, as rstream's producer sets their publishing ids.
    """
    nested: AMQPBody = {'a': 1, 'nested': {'list': [1, [2, [3]]], 'when': CREATED, 'id': ID},
              'big': list(range(100))}
    return [
        (AMQPMessage(body=b'\x00data\xff'), b'\x00data\xff'),  # data section
        (AMQPMessage(value='text'), 'text'),  # amqp-value from here on
        (AMQPMessage(value=TEXT), TEXT),
        (AMQPMessage(value='ż' * 200), 'ż' * 200),
        (AMQPMessage(value=42), 42),
        (AMQPMessage(value=-2**40), -2**40),
        (AMQPMessage(value=1.5), 1.5),
        (AMQPMessage(value=True), True),
        (AMQPMessage(value=ID), ID),
        (AMQPMessage(value=CREATED), CREATED),
        (AMQPMessage(value=[1, 'two', None, b'\x00']), [1, 'two', None, b'\x00']),
        (AMQPMessage(value=nested), nested),
        (AMQPMessage(sequence=[[1, 'a'], [2, 'b']]), SequenceSections([[1, 'a'], [2, 'b']])),
        # quirk: a falsy amqp-value is not encoded, the record is empty
        (AMQPMessage(value=0), None),
        (AMQPMessage(value=''), None),
        (AMQPMessage(value=False), None),
    ]

async def test_rstream_to_rbfly_bodies(
        client: StreamsClient, any_url: str, stream: str,
) -> None:
    """
    Data, amqp-sequence and amqp-value bodies sent with rstream's
    ``send_batch`` are read by rbfly as they were sent.
    """
    cases = rs_bodies()
    assert await rs_publish(any_url, stream, [m for m, _ in cases]) \
        == list(range(1, len(cases) + 1))
    messages = await rb_read(client, stream, len(cases))
    assert [m.stream_offset for m in messages] == list(range(len(cases)))
    for (sent, expected), msg in zip(cases, messages, strict=True):
        assert msg.body == expected, sent
        assert type(msg.body) is type(expected)
        assert msg.annotations == {} and msg.app_properties == {}

async def test_rstream_delivery_annotations(
        client: StreamsClient, any_url: str, stream: str,
) -> None:
    """
    rstream encodes delivery annotations after the body, out of the order
    of AMQP 1.0, 3.2; the broker keeps the record as it is and rbfly reads
    it, delivery annotations included (as RbFly 0.10 read the body).
    """
    bad = AMQPMessage(value='x', delivery_annotations={'x-opt-hop': 'eu-1'})
    raw = bytes(bad)
    assert raw.startswith(b'\x00\x53\x77')  # amqp-value first, then 0x71
    assert raw.index(b'\x00\x53\x71') > 0
    await rs_publish(any_url, stream, [bad, AMQPMessage(value='after')])

    records = await rb_read(client, stream, 2, amqp=False)
    assert [r.body for r in records] == [raw, bytes(AMQPMessage(value='after'))]
    first, after = await rb_read(client, stream, 2)
    assert first.body == 'x'
    assert first.delivery_annotations == {Symbol('x-opt-hop'): 'eu-1'}
    assert (after.stream_offset, after.body) == (1, 'after')

#
# raw binary messages
#

async def test_rstream_raw_to_rbfly(client: StreamsClient, any_url: str, stream: str) -> None:
    """rstream's raw binary messages are read by rbfly with ``amqp=False``, unchanged."""
    assert await rs_publish(any_url, stream, PAYLOADS) == list(range(1, len(PAYLOADS) + 1))
    messages = await rb_read(client, stream, len(PAYLOADS), amqp=False)
    assert [(m.stream_offset, m.body) for m in messages] == list(enumerate(PAYLOADS))

async def test_rbfly_bin_to_rstream_raw(client: StreamsClient, any_url: str, stream: str) -> None:
    """
    Messages of rbfly's binary publishers are read by an rstream consumer
    without a decoder (raw bytes), unchanged.
    """
    async with client.publisher(stream, cls=PublisherBin) as single:
        for payload in PAYLOADS:
            await single.send(payload)
    async with client.publisher(stream, cls=PublisherBinBatch) as batch:
        for payload in PAYLOADS:
            batch.batch(payload)
        await batch.flush()
    received = await rs_read(any_url, stream, 2 * len(PAYLOADS))
    assert received == list(enumerate(PAYLOADS + PAYLOADS))

async def test_rstream_sub_entries_to_rbfly(
        client: StreamsClient, any_url: str, stream: str,
) -> None:
    """
    rstream's sub-entry batches, gzip-compressed and plain, are read by
    rbfly message by message, at consecutive offsets.
    """
    confirmed: list[ConfirmationStatus] = []
    done = asyncio.Event()

    def on_confirm(status: ConfirmationStatus) -> None:
        confirmed.append(status)
        if len(confirmed) == 2:  # one confirmation per sub-entry batch
            done.set()

    async with rs_producer(any_url) as producer:
        for compression in (CompressionType.Gzip, CompressionType.No):
            batch = [AMQPMessage(value='{}-{}'.format(compression.name, i)) for i in range(100)]
            await producer.send_sub_entry(stream, batch, compression, on_publish_confirm=on_confirm)
        async with asyncio.timeout(10):
            await done.wait()
    assert all(s.is_confirmed for s in confirmed)

    messages = await rb_read(client, stream, 200)
    assert [(m.stream_offset, m.body) for m in messages] == list(enumerate(
        ['Gzip-{}'.format(i) for i in range(100)] + ['No-{}'.format(i) for i in range(100)]
    ))

async def test_rbfly_sub_entries_to_rstream(
        client: StreamsClient, any_url: str, stream: str,
) -> None:
    """
    rbfly's sub-entry batches, gzip-compressed and plain, are read by an
    rstream consumer message by message, at consecutive offsets.
    """
    async with client.publisher(
            stream, cls=PublisherBatchFast, sub_entry_size=40, compression='gzip') as publisher:
        for i in range(100):
            publisher.batch('gzip-{}'.format(i))
        await publisher.flush()
        assert publisher.message_id == 3  # batches of 40, 40 and 20
    async with client.publisher(stream, cls=PublisherBinBatch, sub_entry_size=100) as binary:
        for i in range(100):
            binary.batch(b'raw-%d' % i)
        await binary.flush()
    def decoder(data: bytes) -> tuple[bytes, AMQPMessage | None]:
        # AMQP records start with a described type (0x00); raw ones do not
        return data, amqp_decoder(data) if data[:1] == b'\x00' else None

    received = await rs_read(any_url, stream, 200, decoder)
    assert [offset for offset, _ in received] == list(range(200))
    assert [m.value for _, (_, m) in received[:100]] == [
        b'gzip-%d' % i for i in range(100)
    ]
    assert [raw for _, (raw, _) in received[100:]] == [b'raw-%d' % i for i in range(100)]

#
# offsets and counts
#

async def test_counts_rbfly_to_rstream(client: StreamsClient, any_url: str, stream: str) -> None:
    """2,000 messages from rbfly: rstream reads each once, at offsets 0..1999."""
    n = 2000
    async with client.publisher(stream, cls=PublisherBatchFast) as publisher:
        for i in range(n):
            publisher.batch(MessageCtx('msg-{:06d}'.format(i), app_properties={'n': i}))
            if i % 300 == 299:
                await publisher.flush()
        await publisher.flush()
        assert publisher.message_id == n
    assert await last_offset(client, stream) == n - 1  # nothing more in the stream

    received = await rs_read(any_url, stream, n, amqp_decoder)
    assert [offset for offset, _ in received] == list(range(n))
    assert [m.value for _, m in received] == [b'msg-%06d' % i for i in range(n)]
    assert [m.application_properties for _, m in received] == [{b'n': i} for i in range(n)]

async def test_counts_rstream_to_rbfly(client: StreamsClient, any_url: str, stream: str) -> None:
    """2,000 messages from rstream: rbfly reads each once, at offsets 0..1999."""
    n = 2000
    messages = [
        AMQPMessage(value='msg-{:06d}'.format(i), application_properties={'n': i})
        for i in range(n)
    ]
    confirmed = await rs_publish(any_url, stream, messages)
    assert sorted(confirmed) == list(range(1, n + 1))  # rstream's ids start at 1
    assert await last_offset(client, stream) == n - 1  # nothing more in the stream

    received = await rb_read(client, stream, n)
    assert [m.stream_offset for m in received] == list(range(n))
    assert [m.body for m in received] == ['msg-{:06d}'.format(i) for i in range(n)]
    assert [m.app_properties for m in received] == [{'n': i} for i in range(n)]
