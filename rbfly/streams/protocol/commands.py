"""
Typed commands of the RabbitMQ Streams protocol.

One frozen, slotted dataclass per frame kind. This module defines requests
and one-way commands and re-exports the responses of
:py:mod:`rbfly.streams.protocol.responses` and the field values of
:py:mod:`rbfly.streams.protocol.base`, so every command class can be
imported from here. :py:mod:`rbfly.streams.protocol.codec` turns commands
into bytes and back.

Requests carry no correlation id: the caller allocates it and passes it to
:py:func:`~rbfly.streams.protocol.codec.encode`; decoding returns it beside
the command in :py:class:`~rbfly.streams.protocol.codec.DecodedFrame`.

Collection fields accept any sequence or mapping when encoding; decoding
produces tuples and dicts.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from .base import (
    Broker,
    BytesLike,
    CommandBase,
    CommandVersion,
    OffsetSpec,
    Properties,
    PublishingError,
    Request,
    StreamMetadata,
)
from .constants import Key
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

@dataclass(frozen=True, slots=True)
class DeclarePublisher(Request[DeclarePublisherResponse]):
    """
    Declare a publisher.

    :param reference: Publisher name for deduplication; an empty string
        declares an anonymous publisher (the broker ignores ``""``).
    """

    KEY: ClassVar[int] = Key.DECLARE_PUBLISHER
    publisher_id: int
    reference: str
    stream: str


@dataclass(frozen=True, slots=True)
class Publish(CommandBase):
    """
    Publish messages, version 1.

    :param messages: Pairs of publishing id and encoded message.
    """

    KEY: ClassVar[int] = Key.PUBLISH
    publisher_id: int
    messages: Sequence[tuple[int, BytesLike]]


@dataclass(frozen=True, slots=True)
class PublishV2(CommandBase):
    """
    Publish messages with filter values, version 2 (RabbitMQ 3.13).

    :param messages: Triples of publishing id, filter value (`None` for a
        message without one) and encoded message.
    """

    KEY: ClassVar[int] = Key.PUBLISH
    VERSION: ClassVar[int] = 2
    publisher_id: int
    messages: Sequence[tuple[int, str | None, BytesLike]]


@dataclass(frozen=True, slots=True)
class PublishConfirm(CommandBase):
    """Broker confirmation that messages were stored, by publishing id."""

    KEY: ClassVar[int] = Key.PUBLISH_CONFIRM
    publisher_id: int
    publishing_ids: Sequence[int]


@dataclass(frozen=True, slots=True)
class PublishError(CommandBase):
    """Broker rejection of messages, with a code per publishing id."""

    KEY: ClassVar[int] = Key.PUBLISH_ERROR
    publisher_id: int
    errors: Sequence[PublishingError]


@dataclass(frozen=True, slots=True)
class QueryPublisherSequence(Request[QueryPublisherSequenceResponse]):
    """Ask for the last publishing id stored for a publisher reference,
    so that a restarted publisher resumes deduplication."""

    KEY: ClassVar[int] = Key.QUERY_PUBLISHER_SEQUENCE
    reference: str
    stream: str


@dataclass(frozen=True, slots=True)
class DeletePublisher(Request[DeletePublisherResponse]):
    """Delete a publisher declared on the connection."""

    KEY: ClassVar[int] = Key.DELETE_PUBLISHER
    publisher_id: int


@dataclass(frozen=True, slots=True)
class Subscribe(Request[SubscribeResponse]):
    """
    Subscribe to a stream.

    :param credit: Number of chunks the broker may send before more credit
        is granted.
    :param properties: E.g. ``single-active-consumer``, ``name``,
        ``super-stream``, ``filter.N``, ``match-unfiltered``.
    """

    KEY: ClassVar[int] = Key.SUBSCRIBE
    subscription_id: int
    stream: str
    offset_spec: OffsetSpec
    credit: int
    properties: Properties


@dataclass(frozen=True, slots=True)
class Deliver(CommandBase):
    """
    Chunk of messages, version 1.

    :param chunk: Osiris chunk, header included, left undecoded; decoding
        returns a view of the received frame, without a copy.
    """

    KEY: ClassVar[int] = Key.DELIVER
    subscription_id: int
    chunk: BytesLike


@dataclass(frozen=True, slots=True)
class DeliverV2(CommandBase):
    """
    Chunk of messages, version 2 (RabbitMQ 3.11), sent only when the client
    advertised `Deliver` version 2 with `ExchangeCommandVersions`.

    :param committed_chunk_id: Id of the last chunk committed by a quorum
        of stream members.
    :param chunk: Osiris chunk, as in `Deliver`.
    """

    KEY: ClassVar[int] = Key.DELIVER
    VERSION: ClassVar[int] = 2
    subscription_id: int
    committed_chunk_id: int
    chunk: BytesLike


@dataclass(frozen=True, slots=True)
class Credit(CommandBase):
    """
    Grant credit, in chunks, to a subscription. The broker answers only on
    error, with `CreditResponse`.
    """

    KEY: ClassVar[int] = Key.CREDIT
    subscription_id: int
    credit: int


@dataclass(frozen=True, slots=True)
class StoreOffset(CommandBase):
    """Store the offset of a consumer reference; the broker does not answer."""

    KEY: ClassVar[int] = Key.STORE_OFFSET
    reference: str
    stream: str
    offset: int


@dataclass(frozen=True, slots=True)
class QueryOffset(Request[QueryOffsetResponse]):
    """Ask for the offset stored for a consumer reference."""

    KEY: ClassVar[int] = Key.QUERY_OFFSET
    reference: str
    stream: str


@dataclass(frozen=True, slots=True)
class Unsubscribe(Request[UnsubscribeResponse]):
    """Cancel a subscription."""

    KEY: ClassVar[int] = Key.UNSUBSCRIBE
    subscription_id: int


@dataclass(frozen=True, slots=True)
class ConsumerUpdate(Request[ConsumerUpdateResponse]):
    """
    Broker request telling a single active consumer whether it is active;
    the client answers with `ConsumerUpdateResponse`.
    """

    KEY: ClassVar[int] = Key.CONSUMER_UPDATE
    subscription_id: int
    active: bool


@dataclass(frozen=True, slots=True)
class Create(Request[CreateResponse]):
    """
    Create a stream.

    :param arguments: E.g. ``max-length-bytes``, ``max-age``,
        ``stream-max-segment-size-bytes``, ``initial-cluster-size``,
        ``queue-leader-locator``, ``stream-filter-size-bytes``.
    """

    KEY: ClassVar[int] = Key.CREATE
    stream: str
    arguments: Properties


@dataclass(frozen=True, slots=True)
class Delete(Request[DeleteResponse]):
    """Delete a stream."""

    KEY: ClassVar[int] = Key.DELETE
    stream: str


@dataclass(frozen=True, slots=True)
class Metadata(Request[MetadataResponse]):
    """Ask for the leader and replicas of streams."""

    KEY: ClassVar[int] = Key.METADATA
    streams: Sequence[str]


@dataclass(frozen=True, slots=True)
class MetadataUpdate(CommandBase):
    """
    Broker notice that a stream changed, e.g. code 0x06 when it was deleted
    or its leader moved.
    """

    KEY: ClassVar[int] = Key.METADATA_UPDATE
    code: int
    stream: str


@dataclass(frozen=True, slots=True)
class Route(Request[RouteResponse]):
    """Ask for the partitions of a super stream a routing key maps to."""

    KEY: ClassVar[int] = Key.ROUTE
    routing_key: str
    super_stream: str


@dataclass(frozen=True, slots=True)
class Partitions(Request[PartitionsResponse]):
    """Ask for the partitions of a super stream."""

    KEY: ClassVar[int] = Key.PARTITIONS
    super_stream: str


@dataclass(frozen=True, slots=True)
class StreamStats(Request[StreamStatsResponse]):
    """Ask for the statistics of a stream (RabbitMQ 3.11)."""

    KEY: ClassVar[int] = Key.STREAM_STATS
    stream: str


@dataclass(frozen=True, slots=True)
class CreateSuperStream(Request[CreateSuperStreamResponse]):
    """Create a super stream, its partitions and bindings (RabbitMQ 3.13)."""

    KEY: ClassVar[int] = Key.CREATE_SUPER_STREAM
    name: str
    partitions: Sequence[str]
    binding_keys: Sequence[str]
    arguments: Properties


@dataclass(frozen=True, slots=True)
class DeleteSuperStream(Request[DeleteSuperStreamResponse]):
    """Delete a super stream and its partitions (RabbitMQ 3.13)."""

    KEY: ClassVar[int] = Key.DELETE_SUPER_STREAM
    name: str


@dataclass(frozen=True, slots=True)
class ResolveOffsetSpec(Request[ResolveOffsetSpecResponse]):
    """
    Resolve an offset specification to an offset (RabbitMQ 4.3).

    :param properties: E.g. ``filter.N``, ``match-unfiltered``,
        ``chunk_selector``.
    """

    KEY: ClassVar[int] = Key.RESOLVE_OFFSET_SPEC
    stream: str
    offset_spec: OffsetSpec
    properties: Properties


@dataclass(frozen=True, slots=True)
class PeerProperties(Request[PeerPropertiesResponse]):
    """Client properties (product, version...), first frame of a connection."""

    KEY: ClassVar[int] = Key.PEER_PROPERTIES
    properties: Properties


@dataclass(frozen=True, slots=True)
class SaslHandshake(Request[SaslHandshakeResponse]):
    """Ask for the SASL mechanisms of the broker; the request has no body."""

    KEY: ClassVar[int] = Key.SASL_HANDSHAKE


@dataclass(frozen=True, slots=True)
class SaslAuthenticate(Request[SaslAuthenticateResponse]):
    """
    :param data: SASL response, e.g. ``\\0user\\0password`` for PLAIN;
        `None` is sent as a null (-1 length) byte string. The value is
        secret: the class hides it from `repr`.
    """

    KEY: ClassVar[int] = Key.SASL_AUTHENTICATE
    mechanism: str
    data: BytesLike | None

    def __repr__(self) -> str:
        return 'SaslAuthenticate(mechanism={!r}, data=<{}>)'.format(
            self.mechanism, 'null' if self.data is None else 'hidden'
        )


@dataclass(frozen=True, slots=True)
class Tune(CommandBase):
    """
    Broker proposal of connection settings, sent after authentication.

    :param frame_max: Maximum frame size in bytes; 0 means no limit.
    :param heartbeat: Heartbeat interval in seconds; 0 means none.
    """

    KEY: ClassVar[int] = Key.TUNE
    frame_max: int
    heartbeat: int


@dataclass(frozen=True, slots=True)
class Open(Request[OpenResponse]):
    """Open the connection on a virtual host, last step of the handshake."""

    KEY: ClassVar[int] = Key.OPEN
    virtual_host: str


@dataclass(frozen=True, slots=True)
class Close(Request[CloseResponse]):
    """Close the connection; either peer may send it."""

    KEY: ClassVar[int] = Key.CLOSE
    code: int
    reason: str


@dataclass(frozen=True, slots=True)
class Heartbeat(CommandBase):
    """Heartbeat; either peer sends it when idle."""

    KEY: ClassVar[int] = Key.HEARTBEAT


@dataclass(frozen=True, slots=True)
class ExchangeCommandVersions(Request[ExchangeCommandVersionsResponse]):
    """Advertise the versions of commands the client supports
    (RabbitMQ 3.11); the broker sends `DeliverV2` only if asked."""

    KEY: ClassVar[int] = Key.EXCHANGE_COMMAND_VERSIONS
    versions: Sequence[CommandVersion]


Command = (
    DeclarePublisher | DeclarePublisherResponse | Publish | PublishV2
    | PublishConfirm | PublishError | QueryPublisherSequence
    | QueryPublisherSequenceResponse | DeletePublisher
    | DeletePublisherResponse | Subscribe | SubscribeResponse | Deliver
    | DeliverV2 | Credit | CreditResponse | StoreOffset | QueryOffset
    | QueryOffsetResponse | Unsubscribe | UnsubscribeResponse
    | ConsumerUpdate | ConsumerUpdateResponse | Create | CreateResponse
    | Delete | DeleteResponse | Metadata | MetadataResponse
    | MetadataUpdate | Route | RouteResponse | Partitions
    | PartitionsResponse | StreamStats | StreamStatsResponse
    | CreateSuperStream | CreateSuperStreamResponse | DeleteSuperStream
    | DeleteSuperStreamResponse | ResolveOffsetSpec
    | ResolveOffsetSpecResponse | PeerProperties | PeerPropertiesResponse
    | SaslHandshake | SaslHandshakeResponse | SaslAuthenticate
    | SaslAuthenticateResponse | Tune | TuneResponse | Open | OpenResponse
    | Close | CloseResponse | Heartbeat | ExchangeCommandVersions
    | ExchangeCommandVersionsResponse
)
"""Any command of the RabbitMQ Streams protocol."""

__all__ = [
    'Broker', 'BytesLike', 'Close', 'CloseResponse', 'Command', 'CommandBase',
    'CommandVersion', 'ConsumerUpdate', 'ConsumerUpdateResponse', 'Create',
    'CreateResponse', 'CreateSuperStream', 'CreateSuperStreamResponse',
    'Credit', 'CreditResponse', 'DeclarePublisher',
    'DeclarePublisherResponse', 'Delete', 'DeletePublisher',
    'DeletePublisherResponse', 'DeleteResponse', 'DeleteSuperStream',
    'DeleteSuperStreamResponse', 'Deliver', 'DeliverV2',
    'ExchangeCommandVersions', 'ExchangeCommandVersionsResponse',
    'Heartbeat', 'Metadata', 'MetadataResponse', 'MetadataUpdate',
    'OffsetSpec', 'Open', 'OpenResponse', 'Partitions',
    'PartitionsResponse', 'PeerProperties', 'PeerPropertiesResponse',
    'Properties', 'Publish', 'PublishConfirm', 'PublishError', 'PublishV2',
    'PublishingError', 'QueryOffset', 'QueryOffsetResponse',
    'QueryPublisherSequence', 'QueryPublisherSequenceResponse', 'Request',
    'ResolveOffsetSpec', 'ResolveOffsetSpecResponse', 'Route',
    'RouteResponse', 'SaslAuthenticate', 'SaslAuthenticateResponse',
    'SaslHandshake', 'SaslHandshakeResponse', 'StoreOffset', 'StreamMetadata',
    'StreamStats', 'StreamStatsResponse', 'Subscribe', 'SubscribeResponse',
    'Tune', 'TuneResponse', 'Unsubscribe', 'UnsubscribeResponse',
]
