"""
Codec of requests and one-way commands (keys without the response bit).

Grammar, condensed from PROTOCOL.adoc; every request below starts with
``Key Version CorrelationId``, every one-way command (marked ``*``) with
``Key Version`` only::

    DeclarePublisher     0x0001  PublisherId:uint8 PublisherReference:string
                                 Stream:string
    Publish v1 *         0x0002  PublisherId:uint8
                                 [PublishingId:uint64 Message:bytes]
    Publish v2 *         0x0002  PublisherId:uint8 [PublishingId:uint64
                                 FilterValue:string Message:bytes]
    PublishConfirm *     0x0003  PublisherId:uint8 [PublishingId:uint64]
    PublishError *       0x0004  PublisherId:uint8 [PublishingId:uint64
                                 Code:uint16]
    QueryPublisherSequence
                         0x0005  PublisherReference:string Stream:string
    DeletePublisher      0x0006  PublisherId:uint8
    Subscribe            0x0007  SubscriptionId:uint8 Stream:string
                                 OffsetSpecification Credit:uint16
                                 [Key:string Value:string]
    Deliver v1 *         0x0008  SubscriptionId:uint8 OsirisChunk
    Deliver v2 *         0x0008  SubscriptionId:uint8 CommittedChunkId:uint64
                                 OsirisChunk
    Credit *             0x0009  SubscriptionId:uint8 Credit:uint16
    StoreOffset *        0x000a  Reference:string Stream:string Offset:uint64
    QueryOffset          0x000b  Reference:string Stream:string
    Unsubscribe          0x000c  SubscriptionId:uint8
    Create               0x000d  Stream:string [Key:string Value:string]
    Delete               0x000e  Stream:string
    Metadata             0x000f  [Stream:string]
    MetadataUpdate *     0x0010  Code:uint16 Stream:string
    PeerProperties       0x0011  [Key:string Value:string]
    SaslHandshake        0x0012  (no body)
    SaslAuthenticate     0x0013  Mechanism:string SaslOpaqueData:bytes
    Tune *               0x0014  FrameMax:uint32 Heartbeat:uint32
    Open                 0x0015  VirtualHost:string
    Close                0x0016  ClosingCode:uint16 ClosingReason:string
    Heartbeat *          0x0017  (no body)
    Route                0x0018  RoutingKey:string SuperStream:string
    Partitions           0x0019  SuperStream:string
    ConsumerUpdate       0x001a  SubscriptionId:uint8 Active:uint8
    ExchangeCommandVersions
                         0x001b  [Key:uint16 MinVersion:uint16
                                 MaxVersion:uint16]
    StreamStats          0x001c  Stream:string
    CreateSuperStream    0x001d  Name:string [Partition:string]
                                 [BindingKey:string] [Key:string Value:string]
    DeleteSuperStream    0x001e  Name:string
    ResolveOffsetSpec    0x001f  Stream:string OffsetSpecification
                                 [Key:string Value:string]

    OffsetSpecification => OffsetType:uint16 Offset
      Offset => uint64 (4, offset) | int64 (5, timestamp) | nothing (1-3)

Notes on the broker's reading of the grammar (``rabbit_stream_core.erl``):
`SaslHandshake` has no mechanism field; an empty SASL response is sent as
null bytes (-1); the broker omits the properties array of `Subscribe` when
it is empty, so the decoder accepts both forms.
"""

from .commands import (
    Close,
    ConsumerUpdate,
    Create,
    CreateSuperStream,
    Credit,
    DeclarePublisher,
    Delete,
    DeletePublisher,
    DeleteSuperStream,
    Deliver,
    DeliverV2,
    ExchangeCommandVersions,
    Heartbeat,
    Metadata,
    MetadataUpdate,
    Open,
    Partitions,
    PeerProperties,
    Publish,
    PublishConfirm,
    PublishError,
    PublishingError,
    PublishV2,
    QueryOffset,
    QueryPublisherSequence,
    ResolveOffsetSpec,
    Route,
    SaslAuthenticate,
    SaslHandshake,
    StoreOffset,
    StreamStats,
    Subscribe,
    Tune,
    Unsubscribe,
)
from .constants import MAX_REFERENCE_LENGTH as MAX_REF
from .field_codec import read_offset_spec, read_versions, write_offset_spec, write_versions
from .reader import Reader
from .tables import Decoded, Entry
from .writer import Writer

def _optional_map(r: Reader, what: str) -> dict[str, str]:
    return {} if r.at_end() else r.string_map(what)


# --- encoders (body after Key Version [CorrelationId]) ----------------------

def _enc_declare_publisher(w: Writer, c: DeclarePublisher) -> None:
    w.u8(c.publisher_id, 'DeclarePublisher.publisher_id')
    w.string(c.reference, 'DeclarePublisher.reference', MAX_REF)
    w.string(c.stream, 'DeclarePublisher.stream')


def _enc_publish(w: Writer, c: Publish) -> None:
    w.u8(c.publisher_id, 'Publish.publisher_id')
    w.array_size(len(c.messages), 'Publish.messages')
    for publishing_id, message in c.messages:
        w.u64(publishing_id, 'Publish publishing id')
        w.bytes_(message, 'Publish message')


def _enc_publish_v2(w: Writer, c: PublishV2) -> None:
    w.u8(c.publisher_id, 'PublishV2.publisher_id')
    w.array_size(len(c.messages), 'PublishV2.messages')
    for publishing_id, filter_value, message in c.messages:
        w.u64(publishing_id, 'PublishV2 publishing id')
        w.string(filter_value, 'PublishV2 filter value')
        w.bytes_(message, 'PublishV2 message')


def _enc_publish_confirm(w: Writer, c: PublishConfirm) -> None:
    w.u8(c.publisher_id, 'PublishConfirm.publisher_id')
    w.array_size(len(c.publishing_ids), 'PublishConfirm.publishing_ids')
    for publishing_id in c.publishing_ids:
        w.u64(publishing_id, 'PublishConfirm publishing id')


def _enc_publish_error(w: Writer, c: PublishError) -> None:
    w.u8(c.publisher_id, 'PublishError.publisher_id')
    w.array_size(len(c.errors), 'PublishError.errors')
    for error in c.errors:
        w.u64(error.publishing_id, 'PublishError publishing id')
        w.u16(error.code, 'PublishError code')


def _enc_query_publisher_sequence(w: Writer, c: QueryPublisherSequence) -> None:
    w.string(c.reference, 'QueryPublisherSequence.reference', MAX_REF)
    w.string(c.stream, 'QueryPublisherSequence.stream')


def _enc_delete_publisher(w: Writer, c: DeletePublisher) -> None:
    w.u8(c.publisher_id, 'DeletePublisher.publisher_id')


def _enc_subscribe(w: Writer, c: Subscribe) -> None:
    w.u8(c.subscription_id, 'Subscribe.subscription_id')
    w.string(c.stream, 'Subscribe.stream')
    write_offset_spec(w, c.offset_spec, 'Subscribe.offset_spec', False)
    w.u16(c.credit, 'Subscribe.credit')
    w.string_map(c.properties, 'Subscribe.properties')


def _enc_deliver(w: Writer, c: Deliver) -> None:
    w.u8(c.subscription_id, 'Deliver.subscription_id')
    w.raw(c.chunk, 'Deliver.chunk')


def _enc_deliver_v2(w: Writer, c: DeliverV2) -> None:
    w.u8(c.subscription_id, 'DeliverV2.subscription_id')
    w.u64(c.committed_chunk_id, 'DeliverV2.committed_chunk_id')
    w.raw(c.chunk, 'DeliverV2.chunk')


def _enc_credit(w: Writer, c: Credit) -> None:
    w.u8(c.subscription_id, 'Credit.subscription_id')
    w.u16(c.credit, 'Credit.credit')


def _enc_store_offset(w: Writer, c: StoreOffset) -> None:
    w.string(c.reference, 'StoreOffset.reference', MAX_REF)
    w.string(c.stream, 'StoreOffset.stream')
    w.u64(c.offset, 'StoreOffset.offset')


def _enc_query_offset(w: Writer, c: QueryOffset) -> None:
    w.string(c.reference, 'QueryOffset.reference', MAX_REF)
    w.string(c.stream, 'QueryOffset.stream')


def _enc_unsubscribe(w: Writer, c: Unsubscribe) -> None:
    w.u8(c.subscription_id, 'Unsubscribe.subscription_id')


def _enc_create(w: Writer, c: Create) -> None:
    w.string(c.stream, 'Create.stream')
    w.string_map(c.arguments, 'Create.arguments')


def _enc_delete(w: Writer, c: Delete) -> None:
    w.string(c.stream, 'Delete.stream')


def _enc_metadata(w: Writer, c: Metadata) -> None:
    w.array_size(len(c.streams), 'Metadata.streams')
    for stream in c.streams:
        w.string(stream, 'Metadata stream')


def _enc_metadata_update(w: Writer, c: MetadataUpdate) -> None:
    w.u16(c.code, 'MetadataUpdate.code')
    w.string(c.stream, 'MetadataUpdate.stream')


def _enc_peer_properties(w: Writer, c: PeerProperties) -> None:
    w.string_map(c.properties, 'PeerProperties.properties')


def _enc_nothing(w: Writer, c: SaslHandshake | Heartbeat) -> None:
    pass


def _enc_sasl_authenticate(w: Writer, c: SaslAuthenticate) -> None:
    w.string(c.mechanism, 'SaslAuthenticate.mechanism')
    w.bytes_(c.data, 'SaslAuthenticate.data')


def _enc_tune(w: Writer, c: Tune) -> None:
    w.u32(c.frame_max, 'Tune.frame_max')
    w.u32(c.heartbeat, 'Tune.heartbeat')


def _enc_open(w: Writer, c: Open) -> None:
    w.string(c.virtual_host, 'Open.virtual_host')


def _enc_close(w: Writer, c: Close) -> None:
    w.u16(c.code, 'Close.code')
    w.string(c.reason, 'Close.reason')


def _enc_route(w: Writer, c: Route) -> None:
    w.string(c.routing_key, 'Route.routing_key')
    w.string(c.super_stream, 'Route.super_stream')


def _enc_partitions(w: Writer, c: Partitions) -> None:
    w.string(c.super_stream, 'Partitions.super_stream')


def _enc_consumer_update(w: Writer, c: ConsumerUpdate) -> None:
    w.u8(c.subscription_id, 'ConsumerUpdate.subscription_id')
    w.u8(1 if c.active else 0, 'ConsumerUpdate.active')


def _enc_exchange_command_versions(w: Writer, c: ExchangeCommandVersions) -> None:
    write_versions(w, c.versions, 'ExchangeCommandVersions.versions')


def _enc_stream_stats(w: Writer, c: StreamStats) -> None:
    w.string(c.stream, 'StreamStats.stream')


def _enc_create_super_stream(w: Writer, c: CreateSuperStream) -> None:
    w.string(c.name, 'CreateSuperStream.name')
    w.array_size(len(c.partitions), 'CreateSuperStream.partitions')
    for partition in c.partitions:
        w.string(partition, 'CreateSuperStream partition')
    w.array_size(len(c.binding_keys), 'CreateSuperStream.binding_keys')
    for binding_key in c.binding_keys:
        w.string(binding_key, 'CreateSuperStream binding key')
    w.string_map(c.arguments, 'CreateSuperStream.arguments')


def _enc_delete_super_stream(w: Writer, c: DeleteSuperStream) -> None:
    w.string(c.name, 'DeleteSuperStream.name')


def _enc_resolve_offset_spec(w: Writer, c: ResolveOffsetSpec) -> None:
    w.string(c.stream, 'ResolveOffsetSpec.stream')
    write_offset_spec(w, c.offset_spec, 'ResolveOffsetSpec.offset_spec', False)
    w.string_map(c.properties, 'ResolveOffsetSpec.properties')


# --- decoders (body after Key Version) --------------------------------------

def _corr(r: Reader) -> int:
    return r.u32('correlation id')


def _dec_declare_publisher(r: Reader) -> Decoded:
    corr = _corr(r)
    publisher_id = r.u8('DeclarePublisher.publisher_id')
    # a null reference (-1) is read as anonymous, like an empty one
    reference = r.optional_string('DeclarePublisher.reference') or ''
    return DeclarePublisher(publisher_id, reference, r.string('DeclarePublisher.stream')), corr


def _dec_publish(r: Reader) -> Decoded:
    publisher_id = r.u8('Publish.publisher_id')
    count = r.array_size('Publish.messages', 12)
    u64, data = r.u64, r.bytes_view
    messages = tuple(
        (u64('Publish publishing id'), data('Publish message')) for _ in range(count)
    )
    return Publish(publisher_id, messages), None


def _dec_publish_v2(r: Reader) -> Decoded:
    publisher_id = r.u8('PublishV2.publisher_id')
    count = r.array_size('PublishV2.messages', 14)
    u64, string, data = r.u64, r.optional_string, r.bytes_view
    messages = tuple(
        (
            u64('PublishV2 publishing id'),
            string('PublishV2 filter value'),
            data('PublishV2 message'),
        )
        for _ in range(count)
    )
    return PublishV2(publisher_id, messages), None


def _dec_publish_confirm(r: Reader) -> Decoded:
    publisher_id = r.u8('PublishConfirm.publisher_id')
    return PublishConfirm(publisher_id, r.u64_array('PublishConfirm.publishing_ids')), None


def _dec_publish_error(r: Reader) -> Decoded:
    publisher_id = r.u8('PublishError.publisher_id')
    count = r.array_size('PublishError.errors', 10)
    u64, code = r.u64, r.code
    errors = tuple(
        PublishingError(u64('PublishError publishing id'), code('PublishError code'))
        for _ in range(count)
    )
    return PublishError(publisher_id, errors), None


def _dec_query_publisher_sequence(r: Reader) -> Decoded:
    corr = _corr(r)
    reference = r.string('QueryPublisherSequence.reference')
    return QueryPublisherSequence(reference, r.string('QueryPublisherSequence.stream')), corr


def _dec_delete_publisher(r: Reader) -> Decoded:
    corr = _corr(r)
    return DeletePublisher(r.u8('DeletePublisher.publisher_id')), corr


def _dec_subscribe(r: Reader) -> Decoded:
    corr = _corr(r)
    subscription_id = r.u8('Subscribe.subscription_id')
    stream = r.string('Subscribe.stream')
    spec = read_offset_spec(r, 'Subscribe.offset_spec', False)
    credit = r.u16('Subscribe.credit')
    properties = _optional_map(r, 'Subscribe.properties')
    return Subscribe(subscription_id, stream, spec, credit, properties), corr


def _dec_deliver(r: Reader) -> Decoded:
    subscription_id = r.u8('Deliver.subscription_id')
    return Deliver(subscription_id, r.rest()), None


def _dec_deliver_v2(r: Reader) -> Decoded:
    subscription_id = r.u8('DeliverV2.subscription_id')
    committed = r.u64('DeliverV2.committed_chunk_id')
    return DeliverV2(subscription_id, committed, r.rest()), None


def _dec_credit(r: Reader) -> Decoded:
    subscription_id = r.u8('Credit.subscription_id')
    return Credit(subscription_id, r.u16('Credit.credit')), None


def _dec_store_offset(r: Reader) -> Decoded:
    reference = r.string('StoreOffset.reference')
    stream = r.string('StoreOffset.stream')
    return StoreOffset(reference, stream, r.u64('StoreOffset.offset')), None


def _dec_query_offset(r: Reader) -> Decoded:
    corr = _corr(r)
    reference = r.string('QueryOffset.reference')
    return QueryOffset(reference, r.string('QueryOffset.stream')), corr


def _dec_unsubscribe(r: Reader) -> Decoded:
    corr = _corr(r)
    return Unsubscribe(r.u8('Unsubscribe.subscription_id')), corr


def _dec_create(r: Reader) -> Decoded:
    corr = _corr(r)
    stream = r.string('Create.stream')
    return Create(stream, r.string_map('Create.arguments')), corr


def _dec_delete(r: Reader) -> Decoded:
    corr = _corr(r)
    return Delete(r.string('Delete.stream')), corr


def _dec_metadata(r: Reader) -> Decoded:
    corr = _corr(r)
    return Metadata(r.string_array('Metadata.streams')), corr


def _dec_metadata_update(r: Reader) -> Decoded:
    code = r.code('MetadataUpdate.code')
    return MetadataUpdate(code, r.string('MetadataUpdate.stream')), None


def _dec_peer_properties(r: Reader) -> Decoded:
    corr = _corr(r)
    return PeerProperties(r.string_map('PeerProperties.properties')), corr


def _dec_sasl_handshake(r: Reader) -> Decoded:
    return SaslHandshake(), _corr(r)


def _dec_sasl_authenticate(r: Reader) -> Decoded:
    corr = _corr(r)
    mechanism = r.string('SaslAuthenticate.mechanism')
    return SaslAuthenticate(mechanism, r.optional_bytes('SaslAuthenticate.data')), corr


def _dec_tune(r: Reader) -> Decoded:
    frame_max = r.u32('Tune.frame_max')
    return Tune(frame_max, r.u32('Tune.heartbeat')), None


def _dec_open(r: Reader) -> Decoded:
    corr = _corr(r)
    return Open(r.string('Open.virtual_host')), corr


def _dec_close(r: Reader) -> Decoded:
    corr = _corr(r)
    code = r.code('Close.code')
    return Close(code, r.string('Close.reason')), corr


def _dec_heartbeat(r: Reader) -> Decoded:
    return Heartbeat(), None


def _dec_route(r: Reader) -> Decoded:
    corr = _corr(r)
    routing_key = r.string('Route.routing_key')
    return Route(routing_key, r.string('Route.super_stream')), corr


def _dec_partitions(r: Reader) -> Decoded:
    corr = _corr(r)
    return Partitions(r.string('Partitions.super_stream')), corr


def _dec_consumer_update(r: Reader) -> Decoded:
    corr = _corr(r)
    subscription_id = r.u8('ConsumerUpdate.subscription_id')
    # any non-zero byte is true, as a boolean is read leniently
    return ConsumerUpdate(subscription_id, r.u8('ConsumerUpdate.active') != 0), corr


def _dec_exchange_command_versions(r: Reader) -> Decoded:
    corr = _corr(r)
    versions = read_versions(r, 'ExchangeCommandVersions.versions')
    return ExchangeCommandVersions(versions), corr


def _dec_stream_stats(r: Reader) -> Decoded:
    corr = _corr(r)
    return StreamStats(r.string('StreamStats.stream')), corr


def _dec_create_super_stream(r: Reader) -> Decoded:
    corr = _corr(r)
    name = r.string('CreateSuperStream.name')
    partitions = r.string_array('CreateSuperStream.partitions')
    binding_keys = r.string_array('CreateSuperStream.binding_keys')
    arguments = r.string_map('CreateSuperStream.arguments')
    return CreateSuperStream(name, partitions, binding_keys, arguments), corr


def _dec_delete_super_stream(r: Reader) -> Decoded:
    corr = _corr(r)
    return DeleteSuperStream(r.string('DeleteSuperStream.name')), corr


def _dec_resolve_offset_spec(r: Reader) -> Decoded:
    corr = _corr(r)
    stream = r.string('ResolveOffsetSpec.stream')
    spec = read_offset_spec(r, 'ResolveOffsetSpec.offset_spec', False)
    properties = _optional_map(r, 'ResolveOffsetSpec.properties')
    return ResolveOffsetSpec(stream, spec, properties), corr


# --- tables -----------------------------------------------------------------

TABLE: list[Entry] = [
    # command class, correlated (takes a correlation id), encoder, decoder
    (DeclarePublisher, True, _enc_declare_publisher, _dec_declare_publisher),
    (Publish, False, _enc_publish, _dec_publish),
    (PublishV2, False, _enc_publish_v2, _dec_publish_v2),
    (PublishConfirm, False, _enc_publish_confirm, _dec_publish_confirm),
    (PublishError, False, _enc_publish_error, _dec_publish_error),
    (QueryPublisherSequence, True, _enc_query_publisher_sequence,
     _dec_query_publisher_sequence),
    (DeletePublisher, True, _enc_delete_publisher, _dec_delete_publisher),
    (Subscribe, True, _enc_subscribe, _dec_subscribe),
    (Deliver, False, _enc_deliver, _dec_deliver),
    (DeliverV2, False, _enc_deliver_v2, _dec_deliver_v2),
    (Credit, False, _enc_credit, _dec_credit),
    (StoreOffset, False, _enc_store_offset, _dec_store_offset),
    (QueryOffset, True, _enc_query_offset, _dec_query_offset),
    (Unsubscribe, True, _enc_unsubscribe, _dec_unsubscribe),
    (Create, True, _enc_create, _dec_create),
    (Delete, True, _enc_delete, _dec_delete),
    (Metadata, True, _enc_metadata, _dec_metadata),
    (MetadataUpdate, False, _enc_metadata_update, _dec_metadata_update),
    (PeerProperties, True, _enc_peer_properties, _dec_peer_properties),
    (SaslHandshake, True, _enc_nothing, _dec_sasl_handshake),
    (SaslAuthenticate, True, _enc_sasl_authenticate, _dec_sasl_authenticate),
    (Tune, False, _enc_tune, _dec_tune),
    (Open, True, _enc_open, _dec_open),
    (Close, True, _enc_close, _dec_close),
    (Heartbeat, False, _enc_nothing, _dec_heartbeat),
    (Route, True, _enc_route, _dec_route),
    (Partitions, True, _enc_partitions, _dec_partitions),
    (ConsumerUpdate, True, _enc_consumer_update, _dec_consumer_update),
    (ExchangeCommandVersions, True, _enc_exchange_command_versions,
     _dec_exchange_command_versions),
    (StreamStats, True, _enc_stream_stats, _dec_stream_stats),
    (CreateSuperStream, True, _enc_create_super_stream, _dec_create_super_stream),
    (DeleteSuperStream, True, _enc_delete_super_stream, _dec_delete_super_stream),
    (ResolveOffsetSpec, True, _enc_resolve_offset_spec, _dec_resolve_offset_spec),
]
"""
Requests and one-way commands: class, whether the caller gives a
correlation id, encoder and decoder.
"""

__all__ = ['TABLE']
