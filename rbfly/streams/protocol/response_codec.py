"""
Codec of responses (keys with the response bit 0x8000).

Grammar, condensed from PROTOCOL.adoc; every response below starts with
``Key Version CorrelationId ResponseCode:uint16`` unless marked::

    DeclarePublisher, DeletePublisher, Subscribe, Unsubscribe, Create,
    Delete, Close, CreateSuperStream, DeleteSuperStream
                         0x80..  (no more fields)
    QueryPublisherSequence
                         0x8005  Sequence:uint64
    Credit               0x8009  Key Version ResponseCode SubscriptionId:uint8
                                 (no correlation id; sent only on error)
    QueryOffset          0x800b  Offset:uint64
    Metadata             0x800f  Key Version CorrelationId
                                 [Reference:uint16 Host:string Port:uint32]
                                 [StreamName:string ResponseCode:uint16
                                  LeaderReference:uint16
                                  ReplicasReferences:[uint16]]
                                 (no top-level response code)
    PeerProperties       0x8011  [Key:string Value:string]
    SaslHandshake        0x8012  [Mechanism:string]
    SaslAuthenticate     0x8013  SaslOpaqueData:bytes
    Tune                 0x8014  Key Version FrameMax:uint32 Heartbeat:uint32
                                 ("TuneResponse => TuneRequest")
    Open                 0x8015  [Key:string Value:string]
    Route                0x8018  [Stream:string]
    Partitions           0x8019  [Stream:string]
    ConsumerUpdate       0x801a  OffsetSpecification (type 0 = none allowed)
    ExchangeCommandVersions
                         0x801b  [Key:uint16 MinVersion:uint16
                                  MaxVersion:uint16]
    StreamStats          0x801c  [Key:string Value:int64]
    ResolveOffsetSpec    0x801f  OffsetType:uint16 Offset:uint64

Where the broker departs from the grammar, the decoder accepts both forms
and the encoder writes the grammar's form (``rabbit_stream_core.erl``):

- `Open` omits the properties array when it is empty, e.g. on error;
- `SaslAuthenticate` omits the data when it is empty, and writes a
  challenge with an `int16` length (like a string) instead of `int32`; a
  frame has room for only one of the two readings, so the decoder tells
  them apart by the bytes left;
- `Metadata` writes a leader reference of -1 (0xffff) for a stream without
  a leader.

Other responses with a code other than OK may end after the code; their
extra fields then decode as empty or zero.
"""

from .base import Broker, OffsetSpec, StreamMetadata
from .constants import ResponseCode
from .field_codec import read_offset_spec, read_versions, write_offset_spec, write_versions
from .reader import Reader
from .responses import (
    CloseResponse,
    ConsumerUpdateResponse,
    CreateResponse,
    CreateSuperStreamResponse,
    CreditResponse,
    DeclarePublisherResponse,
    DeletePublisherResponse,
    DeleteResponse,
    DeleteSuperStreamResponse,
    ExchangeCommandVersionsResponse,
    MetadataResponse,
    OpenResponse,
    PartitionsResponse,
    PeerPropertiesResponse,
    QueryOffsetResponse,
    QueryPublisherSequenceResponse,
    ResolveOffsetSpecResponse,
    RouteResponse,
    SaslAuthenticateResponse,
    SaslHandshakeResponse,
    StreamStatsResponse,
    SubscribeResponse,
    TuneResponse,
    UnsubscribeResponse,
)
from .tables import Decoded, Decoder, Entry
from .writer import Writer

CodeResponse = (
    DeclarePublisherResponse | DeletePublisherResponse | SubscribeResponse
    | UnsubscribeResponse | CreateResponse | DeleteResponse | CloseResponse
    | CreateSuperStreamResponse | DeleteSuperStreamResponse
)
"""Responses made of a correlation id and a response code only."""


def _header(r: Reader, name: str) -> tuple[int, int]:
    return r.u32(name + '.correlation_id'), r.code(name + '.code')


def _bare(r: Reader, code: int) -> bool:
    """Whether an error response ends after its code."""
    return code != ResponseCode.OK and r.at_end()


def _write_header(w: Writer, c: CodeResponse | QueryOffsetResponse, name: str) -> None:
    w.u32(c.correlation_id, name + '.correlation_id')
    w.u16(c.code, name + '.code')


# --- responses without fields after the code ---------------------------------

def _enc_code(w: Writer, c: CodeResponse) -> None:
    _write_header(w, c, type(c).__name__)


def _code_decoder(cls: type[CodeResponse]) -> Decoder:
    name = cls.__name__

    def decode(r: Reader) -> Decoded:
        corr, code = _header(r, name)
        return cls(corr, code), corr

    return decode


# --- responses with fields ---------------------------------------------------

def _enc_query_publisher_sequence(w: Writer, c: QueryPublisherSequenceResponse) -> None:
    w.u32(c.correlation_id, 'QueryPublisherSequenceResponse.correlation_id')
    w.u16(c.code, 'QueryPublisherSequenceResponse.code')
    w.u64(c.sequence, 'QueryPublisherSequenceResponse.sequence')


def _dec_query_publisher_sequence(r: Reader) -> Decoded:
    corr, code = _header(r, 'QueryPublisherSequenceResponse')
    sequence = 0 if _bare(r, code) else r.u64('QueryPublisherSequenceResponse.sequence')
    return QueryPublisherSequenceResponse(corr, code, sequence), corr


def _enc_credit(w: Writer, c: CreditResponse) -> None:
    w.u16(c.code, 'CreditResponse.code')
    w.u8(c.subscription_id, 'CreditResponse.subscription_id')


def _dec_credit(r: Reader) -> Decoded:
    code = r.code('CreditResponse.code')
    return CreditResponse(code, r.u8('CreditResponse.subscription_id')), None


def _enc_query_offset(w: Writer, c: QueryOffsetResponse) -> None:
    _write_header(w, c, 'QueryOffsetResponse')
    w.u64(c.offset, 'QueryOffsetResponse.offset')


def _dec_query_offset(r: Reader) -> Decoded:
    corr, code = _header(r, 'QueryOffsetResponse')
    offset = 0 if _bare(r, code) else r.u64('QueryOffsetResponse.offset')
    return QueryOffsetResponse(corr, code, offset), corr


def _enc_metadata(w: Writer, c: MetadataResponse) -> None:
    what = 'MetadataResponse'
    w.u32(c.correlation_id, what + '.correlation_id')
    w.array_size(len(c.brokers), what + '.brokers')
    for b in c.brokers:
        w.u16(b.reference, what + ' broker reference')
        w.string(b.host, what + ' broker host')
        w.u32(b.port, what + ' broker port')
    w.array_size(len(c.streams), what + '.streams')
    for s in c.streams:
        w.string(s.stream, what + ' stream name')
        w.u16(s.code, what + ' stream code')
        w.u16(s.leader_reference, what + ' stream leader reference')
        w.array_size(len(s.replica_references), what + ' stream replicas')
        for ref in s.replica_references:
            w.u16(ref, what + ' stream replica reference')


def _dec_metadata(r: Reader) -> Decoded:
    what = 'MetadataResponse'
    corr = r.u32(what + '.correlation_id')
    u16, u32, string = r.u16, r.u32, r.string
    count = r.array_size(what + '.brokers', 8)
    brokers = tuple(
        Broker(
            u16(what + ' broker reference'),
            string(what + ' broker host'),
            u32(what + ' broker port'),
        )
        for _ in range(count)
    )
    count = r.array_size(what + '.streams', 10)
    streams = tuple(
        StreamMetadata(
            string(what + ' stream name'),
            r.code(what + ' stream code'),
            u16(what + ' stream leader reference'),
            r.u16_array(what + ' stream replicas'),
        )
        for _ in range(count)
    )
    return MetadataResponse(corr, brokers, streams), corr


def _enc_peer_properties(w: Writer, c: PeerPropertiesResponse) -> None:
    w.u32(c.correlation_id, 'PeerPropertiesResponse.correlation_id')
    w.u16(c.code, 'PeerPropertiesResponse.code')
    w.string_map(c.properties, 'PeerPropertiesResponse.properties')


def _dec_peer_properties(r: Reader) -> Decoded:
    corr, code = _header(r, 'PeerPropertiesResponse')
    props = {} if _bare(r, code) else r.string_map('PeerPropertiesResponse.properties')
    return PeerPropertiesResponse(corr, code, props), corr


def _enc_sasl_handshake(w: Writer, c: SaslHandshakeResponse) -> None:
    what = 'SaslHandshakeResponse'
    w.u32(c.correlation_id, what + '.correlation_id')
    w.u16(c.code, what + '.code')
    w.array_size(len(c.mechanisms), what + '.mechanisms')
    for mechanism in c.mechanisms:
        w.string(mechanism, what + ' mechanism')


def _dec_sasl_handshake(r: Reader) -> Decoded:
    corr, code = _header(r, 'SaslHandshakeResponse')
    mechanisms = () if _bare(r, code) else r.string_array('SaslHandshakeResponse.mechanisms')
    return SaslHandshakeResponse(corr, code, mechanisms), corr


def _enc_sasl_authenticate(w: Writer, c: SaslAuthenticateResponse) -> None:
    w.u32(c.correlation_id, 'SaslAuthenticateResponse.correlation_id')
    w.u16(c.code, 'SaslAuthenticateResponse.code')
    w.bytes_(c.data, 'SaslAuthenticateResponse.data')


def _dec_sasl_authenticate(r: Reader) -> Decoded:
    what = 'SaslAuthenticateResponse.data'
    corr, code = _header(r, 'SaslAuthenticateResponse')
    left = r.remaining()
    head = r.peek(2)
    data: bytes | None
    if left == 0:
        data = None
    elif head is not None and int.from_bytes(head, 'big') == left - 2:
        data = bytes(r.view(r.u16(what + ' length'), what))  # broker's int16 length
    else:
        data = r.optional_bytes(what)  # the specification's int32 length
    return SaslAuthenticateResponse(corr, code, data), corr


def _enc_tune(w: Writer, c: TuneResponse) -> None:
    w.u32(c.frame_max, 'TuneResponse.frame_max')
    w.u32(c.heartbeat, 'TuneResponse.heartbeat')


def _dec_tune(r: Reader) -> Decoded:
    frame_max = r.u32('TuneResponse.frame_max')
    return TuneResponse(frame_max, r.u32('TuneResponse.heartbeat')), None


def _enc_open(w: Writer, c: OpenResponse) -> None:
    w.u32(c.correlation_id, 'OpenResponse.correlation_id')
    w.u16(c.code, 'OpenResponse.code')
    w.string_map(c.properties, 'OpenResponse.properties')


def _dec_open(r: Reader) -> Decoded:
    corr, code = _header(r, 'OpenResponse')
    props = {} if r.at_end() else r.string_map('OpenResponse.properties')
    return OpenResponse(corr, code, props), corr


def _enc_streams(w: Writer, c: RouteResponse | PartitionsResponse) -> None:
    what = type(c).__name__
    w.u32(c.correlation_id, what + '.correlation_id')
    w.u16(c.code, what + '.code')
    w.array_size(len(c.streams), what + '.streams')
    for stream in c.streams:
        w.string(stream, what + ' stream')


def _dec_route(r: Reader) -> Decoded:
    corr, code = _header(r, 'RouteResponse')
    streams = () if _bare(r, code) else r.string_array('RouteResponse.streams')
    return RouteResponse(corr, code, streams), corr


def _dec_partitions(r: Reader) -> Decoded:
    corr, code = _header(r, 'PartitionsResponse')
    streams = () if _bare(r, code) else r.string_array('PartitionsResponse.streams')
    return PartitionsResponse(corr, code, streams), corr


def _enc_consumer_update(w: Writer, c: ConsumerUpdateResponse) -> None:
    w.u32(c.correlation_id, 'ConsumerUpdateResponse.correlation_id')
    w.u16(c.code, 'ConsumerUpdateResponse.code')
    write_offset_spec(w, c.offset_spec, 'ConsumerUpdateResponse.offset_spec', True)


def _dec_consumer_update(r: Reader) -> Decoded:
    corr, code = _header(r, 'ConsumerUpdateResponse')
    spec = (
        OffsetSpec.none() if _bare(r, code)
        else read_offset_spec(r, 'ConsumerUpdateResponse.offset_spec', True)
    )
    return ConsumerUpdateResponse(corr, code, spec), corr


def _enc_exchange_command_versions(w: Writer, c: ExchangeCommandVersionsResponse) -> None:
    w.u32(c.correlation_id, 'ExchangeCommandVersionsResponse.correlation_id')
    w.u16(c.code, 'ExchangeCommandVersionsResponse.code')
    write_versions(w, c.versions, 'ExchangeCommandVersionsResponse.versions')


def _dec_exchange_command_versions(r: Reader) -> Decoded:
    corr, code = _header(r, 'ExchangeCommandVersionsResponse')
    versions = (
        () if _bare(r, code)
        else read_versions(r, 'ExchangeCommandVersionsResponse.versions')
    )
    return ExchangeCommandVersionsResponse(corr, code, versions), corr


def _enc_stream_stats(w: Writer, c: StreamStatsResponse) -> None:
    what = 'StreamStatsResponse'
    w.u32(c.correlation_id, what + '.correlation_id')
    w.u16(c.code, what + '.code')
    w.array_size(len(c.stats), what + '.stats')
    for key, value in c.stats.items():
        w.string(key, what + ' key')
        w.i64(value, what + ' value')


def _dec_stream_stats(r: Reader) -> Decoded:
    what = 'StreamStatsResponse'
    corr, code = _header(r, what)
    stats: dict[str, int] = {}
    if not _bare(r, code):
        count = r.array_size(what + '.stats', 10)
        string, i64 = r.string, r.i64
        stats = {string(what + ' key'): i64(what + ' value') for _ in range(count)}
    return StreamStatsResponse(corr, code, stats), corr


def _enc_resolve_offset_spec(w: Writer, c: ResolveOffsetSpecResponse) -> None:
    w.u32(c.correlation_id, 'ResolveOffsetSpecResponse.correlation_id')
    w.u16(c.code, 'ResolveOffsetSpecResponse.code')
    w.u16(c.offset_type, 'ResolveOffsetSpecResponse.offset_type')
    w.u64(c.offset, 'ResolveOffsetSpecResponse.offset')


def _dec_resolve_offset_spec(r: Reader) -> Decoded:
    what = 'ResolveOffsetSpecResponse'
    corr, code = _header(r, what)
    if _bare(r, code):
        return ResolveOffsetSpecResponse(corr, code, 0, 0), corr
    offset_type = r.u16(what + '.offset_type')
    return ResolveOffsetSpecResponse(corr, code, offset_type, r.u64(what + '.offset')), corr


# --- table ------------------------------------------------------------------

TABLE: list[Entry] = [
    # command class, correlated (takes a correlation id), encoder, decoder
    (DeclarePublisherResponse, False, _enc_code, _code_decoder(DeclarePublisherResponse)),
    (QueryPublisherSequenceResponse, False, _enc_query_publisher_sequence,
     _dec_query_publisher_sequence),
    (DeletePublisherResponse, False, _enc_code, _code_decoder(DeletePublisherResponse)),
    (SubscribeResponse, False, _enc_code, _code_decoder(SubscribeResponse)),
    (CreditResponse, False, _enc_credit, _dec_credit),
    (QueryOffsetResponse, False, _enc_query_offset, _dec_query_offset),
    (UnsubscribeResponse, False, _enc_code, _code_decoder(UnsubscribeResponse)),
    (CreateResponse, False, _enc_code, _code_decoder(CreateResponse)),
    (DeleteResponse, False, _enc_code, _code_decoder(DeleteResponse)),
    (MetadataResponse, False, _enc_metadata, _dec_metadata),
    (PeerPropertiesResponse, False, _enc_peer_properties, _dec_peer_properties),
    (SaslHandshakeResponse, False, _enc_sasl_handshake, _dec_sasl_handshake),
    (SaslAuthenticateResponse, False, _enc_sasl_authenticate, _dec_sasl_authenticate),
    (TuneResponse, False, _enc_tune, _dec_tune),
    (OpenResponse, False, _enc_open, _dec_open),
    (CloseResponse, False, _enc_code, _code_decoder(CloseResponse)),
    (RouteResponse, False, _enc_streams, _dec_route),
    (PartitionsResponse, False, _enc_streams, _dec_partitions),
    (ConsumerUpdateResponse, False, _enc_consumer_update, _dec_consumer_update),
    (ExchangeCommandVersionsResponse, False, _enc_exchange_command_versions,
     _dec_exchange_command_versions),
    (StreamStatsResponse, False, _enc_stream_stats, _dec_stream_stats),
    (CreateSuperStreamResponse, False, _enc_code, _code_decoder(CreateSuperStreamResponse)),
    (DeleteSuperStreamResponse, False, _enc_code, _code_decoder(DeleteSuperStreamResponse)),
    (ResolveOffsetSpecResponse, False, _enc_resolve_offset_spec, _dec_resolve_offset_spec),
]
"""
Responses: class, whether the caller gives a correlation id (never: a
response carries its own), encoder and decoder.
"""

__all__ = ['TABLE']
