"""
Golden byte vectors of every RabbitMQ Streams command.

Each vector was written by hand from the grammar of PROTOCOL.adoc, field by
field, size prefix included; the comment above it names the fields. The
test encodes the command and compares the bytes, then decodes the bytes and
compares the command, so that a bug shared by the encoder and the decoder
cannot hide behind a round trip.
"""

import typing

import pytest

from rbfly.streams.protocol import (
    Broker,
    Close,
    CloseResponse,
    Command,
    CommandVersion,
    ConsumerUpdate,
    ConsumerUpdateResponse,
    Create,
    CreateResponse,
    CreateSuperStream,
    CreateSuperStreamResponse,
    Credit,
    CreditResponse,
    DeclarePublisher,
    DeclarePublisherResponse,
    DecodedFrame,
    Delete,
    DeletePublisher,
    DeletePublisherResponse,
    DeleteResponse,
    DeleteSuperStream,
    DeleteSuperStreamResponse,
    Deliver,
    DeliverV2,
    ExchangeCommandVersions,
    ExchangeCommandVersionsResponse,
    Heartbeat,
    Metadata,
    MetadataResponse,
    MetadataUpdate,
    OffsetSpec,
    Open,
    OpenResponse,
    Partitions,
    PartitionsResponse,
    PeerProperties,
    PeerPropertiesResponse,
    Publish,
    PublishConfirm,
    PublishError,
    PublishingError,
    PublishV2,
    QueryOffset,
    QueryOffsetResponse,
    QueryPublisherSequence,
    QueryPublisherSequenceResponse,
    ResolveOffsetSpec,
    ResolveOffsetSpecResponse,
    ResponseCode,
    Route,
    RouteResponse,
    SaslAuthenticate,
    SaslAuthenticateResponse,
    SaslHandshake,
    SaslHandshakeResponse,
    StoreOffset,
    StreamMetadata,
    StreamStats,
    StreamStatsResponse,
    Subscribe,
    SubscribeResponse,
    Tune,
    TuneResponse,
    Unsubscribe,
    UnsubscribeResponse,
    decode,
    decode_frame,
    encode,
)

def h(text: str) -> bytes:
    """Bytes from hex digits; spaces and newlines only help reading."""
    return bytes.fromhex(''.join(text.split()))


# (command, correlation id given to encode, frame with its size prefix)
GOLDEN: list[tuple[Command, int | None, bytes]] = [
    # size, key, version, corr, publisher id, reference 'ref', stream 's1'
    (DeclarePublisher(1, 'ref', 's1'), 7,
     h('00000012 0001 0001 00000007 01 0003 726566 0002 7331')),
    # size, key, version, corr, code OK
    (DeclarePublisherResponse(7, ResponseCode.OK), None,
     h('0000000a 8001 0001 00000007 0001')),
    # size, key, version 1, publisher id, 2 messages: (id, bytes)
    (Publish(2, ((1, b'ab'), (2, b''))), None,
     h('00000023 0002 0001 02 00000002'
       '0000000000000001 00000002 6162'
       '0000000000000002 00000000')),
    # version 2: (id, filter value string or null, bytes)
    (PublishV2(2, ((1, 'f', b'ab'), (2, None, b'c'))), None,
     h('00000029 0002 0002 02 00000002'
       '0000000000000001 0001 66 00000002 6162'
       '0000000000000002 ffff 00000001 63')),
    # publisher id, [uint64] with the largest value
    (PublishConfirm(3, (1, 2**64 - 1)), None,
     h('00000019 0003 0001 03 00000002 0000000000000001 ffffffffffffffff')),
    # publisher id, [publishing id, code]
    (PublishError(3, (PublishingError(5, ResponseCode.PUBLISHER_DOES_NOT_EXIST),)), None,
     h('00000013 0004 0001 03 00000001 0000000000000005 0012')),
    (QueryPublisherSequence('ref', 's1'), 7,
     h('00000011 0005 0001 00000007 0003 726566 0002 7331')),
    (QueryPublisherSequenceResponse(7, ResponseCode.OK, 42), None,
     h('00000012 8005 0001 00000007 0001 000000000000002a')),
    (DeletePublisher(1), 7, h('00000009 0006 0001 00000007 01')),
    (DeletePublisherResponse(7, ResponseCode.PUBLISHER_DOES_NOT_EXIST), None,
     h('0000000a 8006 0001 00000007 0012')),
    # subscription id, stream, offset type 4 + uint64, credit, [key, value]
    (Subscribe(1, 's1', OffsetSpec.offset(100), 10, {'k': 'v'}), 7,
     h('00000023 0007 0001 00000007 01 0002 7331 0004 0000000000000064 000a'
       '00000001 0001 6b 0001 76')),
    # offset type 1 has no value; empty properties array
    (Subscribe(0, 's', OffsetSpec.first(), 5, {}), 7,
     h('00000014 0007 0001 00000007 00 0001 73 0001 0005 00000000')),
    # offset type 5 with int64 -1
    (Subscribe(255, 's', OffsetSpec.timestamp(-1), 0xFFFF, {}), 7,
     h('0000001c 0007 0001 00000007 ff 0001 73 0005 ffffffffffffffff ffff 00000000')),
    (SubscribeResponse(7, ResponseCode.OK), None, h('0000000a 8007 0001 00000007 0001')),
    # subscription id, then the chunk, with no length
    (Deliver(1, b'\x50\x00chunk'), None, h('0000000c 0008 0001 01 5000 6368756e6b')),
    # version 2: subscription id, committed chunk id, chunk
    (DeliverV2(1, 99, b'\x50'), None, h('0000000e 0008 0002 01 0000000000000063 50')),
    (Credit(1, 5), None, h('00000007 0009 0001 01 0005')),
    # no correlation id: code, subscription id
    (CreditResponse(ResponseCode.SUBSCRIPTION_ID_DOES_NOT_EXIST, 1), None,
     h('00000007 8009 0001 0004 01')),
    (StoreOffset('ref', 's1', 2**64 - 1), None,
     h('00000015 000a 0001 0003 726566 0002 7331 ffffffffffffffff')),
    (QueryOffset('ref', 's1'), 7, h('00000011 000b 0001 00000007 0003 726566 0002 7331')),
    (QueryOffsetResponse(7, ResponseCode.NO_OFFSET, 0), None,
     h('00000012 800b 0001 00000007 0013 0000000000000000')),
    (Unsubscribe(1), 7, h('00000009 000c 0001 00000007 01')),
    (UnsubscribeResponse(7, ResponseCode.SUBSCRIPTION_ID_DOES_NOT_EXIST), None,
     h('0000000a 800c 0001 00000007 0004')),
    # stream, [key 'max-age', value '1h']
    (Create('s1', {'max-age': '1h'}), 7,
     h('0000001d 000d 0001 00000007 0002 7331 00000001 0007 6d61782d616765 0002 3168')),
    (CreateResponse(7, ResponseCode.STREAM_ALREADY_EXISTS), None,
     h('0000000a 800d 0001 00000007 0005')),
    (Delete('s1'), 7, h('0000000c 000e 0001 00000007 0002 7331')),
    (DeleteResponse(7, ResponseCode.OK), None, h('0000000a 800e 0001 00000007 0001')),
    # [stream]; 'é' is 2 bytes in UTF-8, so its length is 2, not 1
    (Metadata(('s1', 'é')), 7, h('00000014 000f 0001 00000007 00000002 0002 7331 0002 c3a9')),
    # no top-level code; [reference, host, port 5552]; [stream, code, leader, [replica]]
    (MetadataResponse(
        7,
        (Broker(0, 'h', 5552),),
        (
            StreamMetadata('s1', ResponseCode.OK, 0, (0, 1)),
            StreamMetadata('x', ResponseCode.STREAM_DOES_NOT_EXIST, 0xFFFF, ()),
        ),
     ), None,
     h('00000034 800f 0001 00000007'
       '00000001 0000 0001 68 000015b0'
       '00000002'
       '0002 7331 0001 0000 00000002 0000 0001'
       '0001 78 0002 ffff 00000000')),
    # no correlation id: code, stream
    (MetadataUpdate(ResponseCode.STREAM_NOT_AVAILABLE, 's1'), None,
     h('0000000a 0010 0001 0006 0002 7331')),
    (PeerProperties({'product': 'rbfly'}), 7,
     h('0000001c 0011 0001 00000007 00000001 0007 70726f64756374 0005 7262666c79')),
    (PeerPropertiesResponse(7, ResponseCode.OK, {'version': '4.3.5'}), None,
     h('0000001e 8011 0001 00000007 0001 00000001 0007 76657273696f6e 0005 342e332e35')),
    # no body after the correlation id
    (SaslHandshake(), 7, h('00000008 0012 0001 00000007')),
    (SaslHandshakeResponse(7, ResponseCode.OK, ('PLAIN', 'AMQPLAIN')), None,
     h('0000001f 8012 0001 00000007 0001 00000002 0005 504c41494e 0008 414d51504c41494e')),
    # mechanism, bytes with int32 length
    (SaslAuthenticate('PLAIN', b'\x00u\x00p'), 7,
     h('00000017 0013 0001 00000007 0005 504c41494e 00000004 00750070')),
    # null bytes: length -1
    (SaslAuthenticate('PLAIN', None), 7,
     h('00000013 0013 0001 00000007 0005 504c41494e ffffffff')),
    (SaslAuthenticateResponse(7, ResponseCode.OK, None), None,
     h('0000000e 8013 0001 00000007 0001 ffffffff')),
    (SaslAuthenticateResponse(7, ResponseCode.SASL_CHALLENGE, b'abc'), None,
     h('00000011 8013 0001 00000007 000a 00000003 616263')),
    # no correlation id: frame max 1 MiB, heartbeat 60 s
    (Tune(1048576, 60), None, h('0000000c 0014 0001 00100000 0000003c')),
    (TuneResponse(1048576, 60), None, h('0000000c 8014 0001 00100000 0000003c')),
    (Open('/'), 7, h('0000000b 0015 0001 00000007 0001 2f')),
    (OpenResponse(7, ResponseCode.OK, {'advertised_host': 'h'}), None,
     h('00000022 8015 0001 00000007 0001 00000001'
       '000f 616476657274697365645f686f7374 0001 68')),
    (Close(1, 'bye'), 7, h('0000000f 0016 0001 00000007 0001 0003 627965')),
    # reason 'ü€' is 2 characters and 5 bytes
    (Close(ResponseCode.INTERNAL_ERROR, 'ü€'), 9,
     h('00000011 0016 0001 00000009 000f 0005 c3bce282ac')),
    (CloseResponse(7, ResponseCode.OK), None, h('0000000a 8016 0001 00000007 0001')),
    (Heartbeat(), None, h('00000004 0017 0001')),
    (Route('rk', 'ss'), 7, h('00000010 0018 0001 00000007 0002 726b 0002 7373')),
    (RouteResponse(7, ResponseCode.OK, ('ss-0',)), None,
     h('00000014 8018 0001 00000007 0001 00000001 0004 73732d30')),
    (Partitions('ss'), 7, h('0000000c 0019 0001 00000007 0002 7373')),
    (PartitionsResponse(7, ResponseCode.OK, ('ss-0', 'ss-1')), None,
     h('0000001a 8019 0001 00000007 0001 00000002 0004 73732d30 0004 73732d31')),
    # sent by the broker: corr, subscription id, active
    (ConsumerUpdate(1, True), 7, h('0000000a 001a 0001 00000007 01 01')),
    (ConsumerUpdate(2, False), 8, h('0000000a 001a 0001 00000008 02 00')),
    # client answer; offset type 0 (none) has no value
    (ConsumerUpdateResponse(7, ResponseCode.OK, OffsetSpec.none()), None,
     h('0000000c 801a 0001 00000007 0001 0000')),
    (ConsumerUpdateResponse(7, ResponseCode.OK, OffsetSpec.offset(10)), None,
     h('00000014 801a 0001 00000007 0001 0004 000000000000000a')),
    # [key, min version, max version]
    (ExchangeCommandVersions((CommandVersion(2, 1, 2), CommandVersion(8, 1, 2))), 7,
     h('00000018 001b 0001 00000007 00000002 0002 0001 0002 0008 0001 0002')),
    (ExchangeCommandVersionsResponse(7, ResponseCode.OK, (CommandVersion(2, 1, 2),)), None,
     h('00000014 801b 0001 00000007 0001 00000001 0002 0001 0002')),
    (StreamStats('s1'), 7, h('0000000c 001c 0001 00000007 0002 7331')),
    # [key string, value int64]
    (StreamStatsResponse(7, ResponseCode.OK, {'committed_offset': -1}), None,
     h('00000028 801c 0001 00000007 0001 00000001'
       '0010 636f6d6d69747465645f6f6666736574 ffffffffffffffff')),
    # name, [partition], [binding key], [argument]
    (CreateSuperStream('ss', ('ss-0',), ('0',), {}), 7,
     h('00000021 001d 0001 00000007 0002 7373 00000001 0004 73732d30'
       '00000001 0001 30 00000000')),
    (CreateSuperStreamResponse(7, ResponseCode.OK), None,
     h('0000000a 801d 0001 00000007 0001')),
    (DeleteSuperStream('ss'), 7, h('0000000c 001e 0001 00000007 0002 7373')),
    (DeleteSuperStreamResponse(7, ResponseCode.ACCESS_REFUSED), None,
     h('0000000a 801e 0001 00000007 0010')),
    # stream, offset type 5 + int64 -2, [key, value]
    (ResolveOffsetSpec('s1', OffsetSpec.timestamp(-2), {'chunk_selector': 'all'}), 7,
     h('0000002f 001f 0001 00000007 0002 7331 0005 fffffffffffffffe'
       '00000001 000e 6368756e6b5f73656c6563746f72 0003 616c6c')),
    # offset type, offset
    (ResolveOffsetSpecResponse(7, ResponseCode.OK, 4, 1000), None,
     h('00000014 801f 0001 00000007 0001 0004 00000000000003e8')),
]

# frames the broker sends in a form other than the encoder's (see
# response_codec), decoded only: (frame without size, command)
DECODE_ONLY: list[tuple[bytes, Command]] = [
    # Open response on error, without the properties array
    (h('8015 0001 00000007 000c'), OpenResponse(7, ResponseCode.VIRTUAL_HOST_ACCESS_FAILURE, {})),
    # SASL response without data
    (h('8013 0001 00000007 0001'), SaslAuthenticateResponse(7, ResponseCode.OK, None)),
    # SASL challenge with an int16 length, as the broker writes it
    (h('8013 0001 00000007 000a 0003 616263'),
     SaslAuthenticateResponse(7, ResponseCode.SASL_CHALLENGE, b'abc')),
    # Subscribe without the properties array, accepted by the broker
    (h('0007 0001 00000007 01 0001 73 0002 0001'), Subscribe(1, 's', OffsetSpec.last(), 1, {})),
    # error response ending after its code
    (h('800b 0001 00000007 0002'), QueryOffsetResponse(7, ResponseCode.STREAM_DOES_NOT_EXIST, 0)),
    (h('8018 0001 00000007 0002'), RouteResponse(7, ResponseCode.STREAM_DOES_NOT_EXIST, ())),
    (h('801c 0001 00000007 0006'), StreamStatsResponse(7, ResponseCode.STREAM_NOT_AVAILABLE, {})),
    # ConsumerUpdate active byte other than 0 and 1
    (h('001a 0001 00000007 01 02'), ConsumerUpdate(1, True)),
    # null publisher reference reads as anonymous
    (h('0001 0001 00000007 01 ffff 0001 73'), DeclarePublisher(1, '', 's')),
]


def _ids(vectors: list[tuple[Command, int | None, bytes]]) -> list[str]:
    return [f'{type(c).__name__}-{i}' for i, (c, _, _) in enumerate(vectors)]


@pytest.mark.parametrize(('command', 'corr', 'frame'), GOLDEN, ids=_ids(GOLDEN))
def test_encode_golden(command: Command, corr: int | None, frame: bytes) -> None:
    """Test encoding a command into its hand-written frame."""
    assert encode(command, corr).hex(' ', 2) == frame.hex(' ', 2)


@pytest.mark.parametrize(('command', 'corr', 'frame'), GOLDEN, ids=_ids(GOLDEN))
def test_decode_golden(command: Command, corr: int | None, frame: bytes) -> None:
    """Test decoding a hand-written frame, without its size prefix."""
    decoded = decode_frame(frame[4:])
    expected_corr = corr if corr is not None else getattr(command, 'correlation_id', None)
    assert decoded == DecodedFrame(command, expected_corr)
    assert decode(frame[4:]) == command
    assert type(decoded.command) is type(command)


@pytest.mark.parametrize(('frame', 'command'), DECODE_ONLY)
def test_decode_broker_forms(frame: bytes, command: Command) -> None:
    """Test decoding the broker's departures from the grammar."""
    assert decode(frame) == command


def test_golden_covers_every_command() -> None:
    """Test that every command class has a golden vector."""
    classes = set(typing.get_args(Command))
    assert {type(c) for c, _, _ in GOLDEN} == classes
    assert len(classes) == 57  # 33 requests and one-way commands, 24 responses


def test_size_prefix_matches_frame() -> None:
    """Test that every golden vector's size prefix was counted right."""
    for _, _, frame in GOLDEN:
        assert int.from_bytes(frame[:4], 'big') == len(frame) - 4


def test_decoded_codes_are_named() -> None:
    """Test that known response codes decode into `ResponseCode` members."""
    response = decode(h('8007 0001 00000007 0002'))
    assert isinstance(response, SubscribeResponse)
    assert response.code is ResponseCode.STREAM_DOES_NOT_EXIST
    assert 'STREAM_DOES_NOT_EXIST' in repr(response)


def test_decoded_unknown_code_is_int() -> None:
    """Test that an unknown response code decodes as a plain integer."""
    response = decode(h('8007 0001 00000007 00ff'))
    assert isinstance(response, SubscribeResponse)
    assert response.code == 0xFF
    assert type(response.code) is int


def test_deliver_chunk_is_view() -> None:
    """Test that a decoded chunk is a view of the frame, not a copy."""
    frame = bytearray(h('0008 0001 01 50 00 01 02'))
    deliver = decode(frame)
    assert isinstance(deliver, Deliver)
    assert isinstance(deliver.chunk, memoryview)
    frame[-1] = 0xFF
    assert bytes(deliver.chunk) == h('50 00 01 ff')
