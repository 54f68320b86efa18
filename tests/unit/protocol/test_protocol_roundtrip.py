"""
Property tests: every command survives an encode/decode round trip.

Values are drawn at the boundaries of their wire types (0, the maximum, -1
and the minimum of signed types), strings include non-ASCII characters, and
maps have several entries, so that lengths counted in characters instead of
UTF-8 bytes, or signed/unsigned mix-ups, break the round trip.
"""

import struct
import typing
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

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
    decode_frame,
    encode,
)
from rbfly.streams.protocol.codec import _ENCODERS

def _int(low: int, high: int) -> st.SearchStrategy[int]:
    # boundaries first, then anything in range
    edges = sorted({low, high, 0 if low <= 0 <= high else low, -1 if low < 0 else high})
    return st.one_of(st.sampled_from(edges), st.integers(low, high))


u8 = _int(0, 2**8 - 1)
u16 = _int(0, 2**16 - 1)
u32 = _int(0, 2**32 - 1)
u64 = _int(0, 2**64 - 1)
i64 = _int(-(2**63), 2**63 - 1)
corr = u32
code = u16

# any Unicode text except lone surrogates, which UTF-8 cannot encode
no_surrogates = st.characters(exclude_categories=['Cs'])
text = st.text(no_surrogates, max_size=20)
reference = st.text(no_surrogates, max_size=256)
props = st.dictionaries(text, text, max_size=5)
data = st.binary(max_size=64)
strings = st.lists(text, max_size=5).map(tuple)

subscribe_spec = st.one_of(
    st.sampled_from([OffsetSpec.first(), OffsetSpec.last(), OffsetSpec.next()]),
    u64.map(OffsetSpec.offset),
    i64.map(OffsetSpec.timestamp),
)
any_spec = st.one_of(st.just(OffsetSpec.none()), subscribe_spec)
versions = st.lists(st.builds(CommandVersion, u16, u16, u16), max_size=4).map(tuple)


def b(cls: Callable[..., Any], *args: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.builds(cls, *args)


STRATEGIES: dict[type, st.SearchStrategy[Any]] = {
    DeclarePublisher: b(DeclarePublisher, u8, reference, text),
    DeclarePublisherResponse: b(DeclarePublisherResponse, corr, code),
    Publish: b(Publish, u8, st.lists(st.tuples(u64, data), max_size=5).map(tuple)),
    PublishV2: b(
        PublishV2, u8,
        st.lists(st.tuples(u64, st.none() | text, data), max_size=5).map(tuple),
    ),
    PublishConfirm: b(PublishConfirm, u8, st.lists(u64, max_size=10).map(tuple)),
    PublishError: b(
        PublishError, u8,
        st.lists(st.builds(PublishingError, u64, code), max_size=5).map(tuple),
    ),
    QueryPublisherSequence: b(QueryPublisherSequence, reference, text),
    QueryPublisherSequenceResponse: b(QueryPublisherSequenceResponse, corr, code, u64),
    DeletePublisher: b(DeletePublisher, u8),
    DeletePublisherResponse: b(DeletePublisherResponse, corr, code),
    Subscribe: b(Subscribe, u8, text, subscribe_spec, u16, props),
    SubscribeResponse: b(SubscribeResponse, corr, code),
    Deliver: b(Deliver, u8, data),
    DeliverV2: b(DeliverV2, u8, u64, data),
    Credit: b(Credit, u8, u16),
    CreditResponse: b(CreditResponse, code, u8),
    StoreOffset: b(StoreOffset, reference, text, u64),
    QueryOffset: b(QueryOffset, reference, text),
    QueryOffsetResponse: b(QueryOffsetResponse, corr, code, u64),
    Unsubscribe: b(Unsubscribe, u8),
    UnsubscribeResponse: b(UnsubscribeResponse, corr, code),
    ConsumerUpdate: b(ConsumerUpdate, u8, st.booleans()),
    ConsumerUpdateResponse: b(ConsumerUpdateResponse, corr, code, any_spec),
    Create: b(Create, text, props),
    CreateResponse: b(CreateResponse, corr, code),
    Delete: b(Delete, text),
    DeleteResponse: b(DeleteResponse, corr, code),
    Metadata: b(Metadata, strings),
    MetadataResponse: b(
        MetadataResponse, corr,
        st.lists(st.builds(Broker, u16, text, u32), max_size=3).map(tuple),
        st.lists(
            st.builds(StreamMetadata, text, code, u16, st.lists(u16, max_size=3).map(tuple)),
            max_size=3,
        ).map(tuple),
    ),
    MetadataUpdate: b(MetadataUpdate, code, text),
    Route: b(Route, text, text),
    RouteResponse: b(RouteResponse, corr, code, strings),
    Partitions: b(Partitions, text),
    PartitionsResponse: b(PartitionsResponse, corr, code, strings),
    StreamStats: b(StreamStats, text),
    StreamStatsResponse: b(
        StreamStatsResponse, corr, code, st.dictionaries(text, i64, max_size=5)
    ),
    CreateSuperStream: b(CreateSuperStream, text, strings, strings, props),
    CreateSuperStreamResponse: b(CreateSuperStreamResponse, corr, code),
    DeleteSuperStream: b(DeleteSuperStream, text),
    DeleteSuperStreamResponse: b(DeleteSuperStreamResponse, corr, code),
    ResolveOffsetSpec: b(ResolveOffsetSpec, text, subscribe_spec, props),
    ResolveOffsetSpecResponse: b(ResolveOffsetSpecResponse, corr, code, u16, u64),
    PeerProperties: b(PeerProperties, props),
    PeerPropertiesResponse: b(PeerPropertiesResponse, corr, code, props),
    SaslHandshake: st.just(SaslHandshake()),
    SaslHandshakeResponse: b(SaslHandshakeResponse, corr, code, strings),
    SaslAuthenticate: b(SaslAuthenticate, text, st.none() | data),
    SaslAuthenticateResponse: b(SaslAuthenticateResponse, corr, code, st.none() | data),
    Tune: b(Tune, u32, u32),
    TuneResponse: b(TuneResponse, u32, u32),
    Open: b(Open, text),
    OpenResponse: b(OpenResponse, corr, code, props),
    Close: b(Close, code, text),
    CloseResponse: b(CloseResponse, corr, code),
    Heartbeat: st.just(Heartbeat()),
    ExchangeCommandVersions: b(ExchangeCommandVersions, versions),
    ExchangeCommandVersionsResponse: b(ExchangeCommandVersionsResponse, corr, code, versions),
}

commands = st.one_of(*STRATEGIES.values())


def test_strategies_cover_every_command() -> None:
    """Test that the property tests draw every command class."""
    assert set(STRATEGIES) == set(typing.get_args(Command))


def test_codec_covers_every_command() -> None:
    """Test that the codec tables have an entry for every command class."""
    assert set(_ENCODERS) == set(typing.get_args(Command))


def _correlated(command: Command) -> bool:
    return _ENCODERS[type(command)][0]


@settings(max_examples=2000)
@given(commands, corr)
def test_roundtrip(command: Command, correlation_id: int) -> None:
    """Test that decoding an encoded command gives it back."""
    given_corr = correlation_id if _correlated(command) else None
    frame = encode(command, given_corr)

    (size,) = struct.unpack_from('>I', frame)
    assert size == len(frame) - 4

    decoded = decode_frame(frame[4:])
    assert decoded.command == command
    assert type(decoded.command) is type(command)
    expected_corr = given_corr if given_corr is not None else getattr(
        command, 'correlation_id', None
    )
    assert decoded.correlation_id == expected_corr


@given(commands, corr)
def test_roundtrip_memoryview(command: Command, correlation_id: int) -> None:
    """Test decoding a frame given as a view into a larger buffer."""
    given_corr = correlation_id if _correlated(command) else None
    frame = encode(command, given_corr)
    buffer = b'garbage' + frame + b'trailing'
    view = memoryview(buffer)[7 + 4:7 + len(frame)]
    assert decode_frame(view).command == command


@given(text)
def test_string_length_is_utf8_size(value: str) -> None:
    """Test that a string length prefix counts UTF-8 bytes, not characters."""
    frame = encode(Delete(value), 1)
    encoded = value.encode('utf-8')
    assert frame[12:14] == struct.pack('>h', len(encoded))
    assert frame[14:] == encoded


@given(props)
def test_properties_map(value: dict[str, str]) -> None:
    """Test the array size of a properties map and its round trip."""
    frame = encode(PeerProperties(value), 1)
    assert frame[12:16] == struct.pack('>i', len(value))
    decoded = decode_frame(frame[4:]).command
    assert isinstance(decoded, PeerProperties)
    assert decoded.properties == value
    assert list(decoded.properties) == list(value)


def test_big_publish_roundtrip() -> None:
    """Test a publish frame with many messages and a 1 MiB message."""
    messages = tuple((i, bytes([i % 256]) * (i % 7)) for i in range(10_000))
    messages += ((2**64 - 1, b'x' * 2**20),)
    command = Publish(0, messages)
    assert decode_frame(encode(command)[4:]).command == command
