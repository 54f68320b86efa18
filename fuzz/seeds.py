"""
Seed corpora of the fuzz targets, made by rbfly's own encoders.

Run from the repository's root to (re)write ``fuzz/corpus/<target>/``::

    python -m fuzz.seeds

Each seed is named by the SHA-1 of its bytes, as libFuzzer names the
inputs it keeps, so that writing them again changes nothing.
"""

import hashlib
import struct
import uuid
from datetime import UTC, datetime
from pathlib import Path

from rbfly.amqp import (
    AMQPHeader,
    AMQPProperties,
    AMQPType,
    Array,
    Described,
    MessageCtx,
    SequenceSections,
    Symbol,
    UInt,
    encode_message,
    encode_value,
)
from rbfly.streams.protocol import (
    Broker,
    Close,
    CommandVersion,
    ConsumerUpdate,
    ConsumerUpdateResponse,
    CreditResponse,
    Deliver,
    DeliverV2,
    ExchangeCommandVersionsResponse,
    Heartbeat,
    MetadataResponse,
    MetadataUpdate,
    OffsetSpec,
    OffsetSpecType,
    PartitionsResponse,
    PublishConfirm,
    PublishError,
    PublishingError,
    QueryOffsetResponse,
    QueryPublisherSequenceResponse,
    ResolveOffsetSpecResponse,
    ResponseCode,
    RouteResponse,
    SaslAuthenticateResponse,
    StreamMetadata,
    StreamStatsResponse,
    SubscribeResponse,
    encode,
)
from rbfly.streams.protocol.compression import Compression, compress
from rbfly.streams.protocol.request_codec import TABLE as REQUESTS
from rbfly.streams.protocol.response_codec import TABLE as RESPONSES
from rbfly.streams.protocol.tables import Entry

from .targets import HANDSHAKE, OK, chunk_bytes, codec_entries

CORPUS = Path(__file__).parent / 'corpus'

MESSAGES = [
    encode_message(MessageCtx(b'body')),
    encode_message(MessageCtx('text \u00e9\u4e2d')),
    encode_message(MessageCtx(
        {'k': [1, 2.5, None]},
        header=AMQPHeader(durable=True, priority=7, ttl=1000, delivery_count=2),
        delivery_annotations={Symbol('x-d'): 1},
        annotations={Symbol('x-stream-filter-value'): 'f', Symbol('x-n'): UInt(3)},
        properties=AMQPProperties(
            message_id='id-1', user_id=b'u', to='/q', subject='s', correlation_id=7,
            content_type=Symbol('text/plain'), creation_time=datetime(2024, 1, 2, tzinfo=UTC),
            group_id='g', group_sequence=5,
        ),
        app_properties={'a': 1, 'b': 'c', 'u': uuid.UUID(int=1)},
        footer={Symbol('x-f'): b'\x01'},
    )),
    encode_message(MessageCtx(SequenceSections([[1], [Array(['a'], AMQPType.STRING)]]))),
]
"""Encoded AMQP messages, every section present in one of them."""

VALUES = [
    encode_value([1, 'ab', {Symbol('k'): [None, True, 2**40]}, Array([1, 2], AMQPType.INT)]),
    encode_value({b'k': Described(Symbol('d'), [uuid.UUID(int=5), 1.5])}),
    encode_value([-1, 2**63 - 1, 2**64 - 1, 'x' * 300, b'\0' * 260, {}]),
]

def records(items: list[bytes]) -> bytes:
    """Records of a sub-entry batch's body: each with its uint32 size."""
    return b''.join(struct.pack('>I', len(item)) + item for item in items)

def _frame_seeds(frames: list[bytes], table: list[Entry]) -> list[bytes]:
    """Inputs of a codec target: the decoder's index, then the frame's body."""
    entries = [(key, version) for key, version, _ in codec_entries(table)]
    seeds = []
    for frame in frames:
        key, version = struct.unpack_from('>HH', frame, 4)
        if (key, version) in entries:
            seeds.append(bytes([entries.index((key, version))]) + frame[8:])
    return seeds

def _sub_batch(code: int, body: bytes, payload: bytes) -> bytes:
    return struct.pack('>BHII', 0x80 | code << 4, len(MESSAGES), len(body), len(payload)) + payload

def _chunks() -> list[bytes]:
    amqp = records(MESSAGES)
    gzip_batch = compress(Compression.GZIP, amqp)
    entries = amqp + _sub_batch(0, amqp, amqp) + _sub_batch(Compression.GZIP, amqp, gzip_batch)
    return [
        chunk_bytes(amqp, len(MESSAGES), len(MESSAGES), 100),
        chunk_bytes(entries, len(MESSAGES) + 2, 3 * len(MESSAGES)),
        chunk_bytes(records([b'raw', b'']), 2, 2),
        chunk_bytes(records([b'\x01' * 20]), 1, 1, chunk_type=1),
    ]

SERVER_COMMANDS = [
    encode(Deliver(1, chunk_bytes(records(MESSAGES[:2]), 2, 2))),
    encode(DeliverV2(2, 7, chunk_bytes(records(MESSAGES[:1]), 1, 1, 7))),
    encode(PublishConfirm(1, (1, 2, 3))),
    encode(PublishError(1, (PublishingError(5, ResponseCode(2)),))),
    encode(MetadataUpdate(ResponseCode(6), 's')),
    encode(Heartbeat()),
    encode(ConsumerUpdate(1, True), 9),
    encode(Close(OK, 'bye'), 10),
    encode(CreditResponse(ResponseCode(4), 1)),
]

RESPONSE_FRAMES = [
    *HANDSHAKE,
    encode(QueryPublisherSequenceResponse(5, OK, 42)),
    encode(QueryOffsetResponse(6, OK, 2**63)),
    encode(SubscribeResponse(7, OK)),
    encode(MetadataResponse(8, (Broker(0, 'host-\u00e9', 5552), Broker(1, 'b', 5553)), (
        StreamMetadata('s1', OK, 0, (1,)), StreamMetadata('s2', ResponseCode(2), 0xffff, ()),
    ))),
    encode(RouteResponse(9, OK, ('p1', 'p2'))),
    encode(PartitionsResponse(10, OK, ('p1',))),
    encode(ConsumerUpdateResponse(11, OK, OffsetSpec(OffsetSpecType.OFFSET, 5))),
    encode(ConsumerUpdateResponse(11, OK, OffsetSpec(OffsetSpecType.TIMESTAMP, -5))),
    encode(ExchangeCommandVersionsResponse(12, OK, (CommandVersion(1, 1, 2),))),
    encode(StreamStatsResponse(13, OK, {'first_chunk_id': 0, 'committed_chunk_id': -1})),
    encode(ResolveOffsetSpecResponse(14, OK, 4, 77)),
    encode(SaslAuthenticateResponse(3, OK, b'challenge')),
    encode(CreditResponse(ResponseCode(4), 1)),
]

def seeds() -> dict[str, list[bytes]]:
    """The seed inputs of each target."""
    stream = b''.join(SERVER_COMMANDS)
    chunks = _chunks()
    amqp = records(MESSAGES)
    result: dict[str, list[bytes]] = {
        # flags: maximum frame size 64 MiB (3), no pieces or 3 piece sizes
        'frames': [b'\x03' + stream, b'\x63\x00\x07\x40' + stream,
                   *(b'\x02' + frame for frame in SERVER_COMMANDS + RESPONSE_FRAMES)],
        # flags: bit 0 opens the connection first
        'core': [b'\x01' + stream, b'\x61\x03\x00\x10' + stream, b'\x00' + b''.join(HANDSHAKE),
                 b'\x40\x05\x02' + b''.join(HANDSHAKE) + stream],
        'responses': _frame_seeds(RESPONSE_FRAMES, RESPONSES),
        'commands': _frame_seeds(SERVER_COMMANDS, REQUESTS),
        # flags: 0 as is, 3 data length and CRC fixed, 4 raw records
        'chunk': [bytes([flags, start]) + chunk for chunk in chunks
                  for flags, start in ((0, 0), (3, 101), (4, 0))],
        'amqp': [b'\x00' + m for m in MESSAGES] + [b'\x01' + v for v in VALUES],
        # flags (bit 0: a count of its own), publisher id, slice, [count,] ids
        'confirm_ids': [
            b'\x00\x01' + struct.pack('>bbb', 1, -1, 1) + struct.pack('>3Q', 1, 2, 3),
            b'\x00\xff' + struct.pack('>bbb', -2, 0, -1)
            + struct.pack('>4Q', 0, 2**63, 2**64 - 1, 2**63 - 1),
            b'\x00\x00\x00\x00\x00',
            b'\x01\x02' + struct.pack('>bbbI', 0, 2, 0, 2) + struct.pack('>3Q', 7, 7, 8),
        ],
    }
    for code in (Compression.GZIP, Compression.ZSTD, Compression.LZ4, Compression.SNAPPY):
        payload = compress(code, amqp)
        head = struct.pack('>HI', len(MESSAGES), len(amqp))
        result['chunk_' + code.name.lower()] = [
            b'\x01' + head + amqp,  # compressed by the target
            b'\x00' + head + payload,  # compressed here, mutated by the fuzzer
            b'\x05' + struct.pack('>HI', 2, 0) + records([b'ab', b'']),
        ]
    return result

def main() -> None:
    for target, inputs in seeds().items():
        folder = CORPUS / target
        folder.mkdir(parents=True, exist_ok=True)
        for data in inputs:
            (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)
        print('{}: {} seeds'.format(target, len(inputs)))

if __name__ == '__main__':
    main()
