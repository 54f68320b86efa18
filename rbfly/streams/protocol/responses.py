"""
Responses of the RabbitMQ Streams protocol.

Responses carry `correlation_id` and `code`, except `CreditResponse` and
`TuneResponse`, which have no correlation id on the wire, and
`MetadataResponse`, which has no top-level response code. Response codes
are plain integers, decoded into
:py:class:`~rbfly.streams.protocol.constants.ResponseCode` members when the
code is known, so an unknown code from a newer broker is not an error.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from .base import Broker, CommandBase, CommandVersion, OffsetSpec, Properties, StreamMetadata
from .constants import RESPONSE_FLAG, Key

_R = RESPONSE_FLAG


@dataclass(frozen=True, slots=True)
class DeclarePublisherResponse(CommandBase):
    """Answer to `DeclarePublisher`."""

    KEY: ClassVar[int] = _R | Key.DECLARE_PUBLISHER
    correlation_id: int
    code: int


@dataclass(frozen=True, slots=True)
class QueryPublisherSequenceResponse(CommandBase):
    """
    :param sequence: Last publishing id stored for the reference.
    """

    KEY: ClassVar[int] = _R | Key.QUERY_PUBLISHER_SEQUENCE
    correlation_id: int
    code: int
    sequence: int


@dataclass(frozen=True, slots=True)
class DeletePublisherResponse(CommandBase):
    """Answer to `DeletePublisher`."""

    KEY: ClassVar[int] = _R | Key.DELETE_PUBLISHER
    correlation_id: int
    code: int


@dataclass(frozen=True, slots=True)
class SubscribeResponse(CommandBase):
    """Answer to `Subscribe`."""

    KEY: ClassVar[int] = _R | Key.SUBSCRIBE
    correlation_id: int
    code: int


@dataclass(frozen=True, slots=True)
class CreditResponse(CommandBase):
    """Error answer to `Credit`; it has no correlation id on the wire."""

    KEY: ClassVar[int] = _R | Key.CREDIT
    code: int
    subscription_id: int


@dataclass(frozen=True, slots=True)
class QueryOffsetResponse(CommandBase):
    """Answer to `QueryOffset`; code 0x13 (no offset) if none is stored."""

    KEY: ClassVar[int] = _R | Key.QUERY_OFFSET
    correlation_id: int
    code: int
    offset: int


@dataclass(frozen=True, slots=True)
class UnsubscribeResponse(CommandBase):
    """Answer to `Unsubscribe`."""

    KEY: ClassVar[int] = _R | Key.UNSUBSCRIBE
    correlation_id: int
    code: int


@dataclass(frozen=True, slots=True)
class ConsumerUpdateResponse(CommandBase):
    """
    Client answer to `ConsumerUpdate`, with the offset to resume from.
    """

    KEY: ClassVar[int] = _R | Key.CONSUMER_UPDATE
    correlation_id: int
    code: int
    offset_spec: OffsetSpec


@dataclass(frozen=True, slots=True)
class CreateResponse(CommandBase):
    """Answer to `Create`."""

    KEY: ClassVar[int] = _R | Key.CREATE
    correlation_id: int
    code: int


@dataclass(frozen=True, slots=True)
class DeleteResponse(CommandBase):
    """Answer to `Delete`."""

    KEY: ClassVar[int] = _R | Key.DELETE
    correlation_id: int
    code: int


@dataclass(frozen=True, slots=True)
class MetadataResponse(CommandBase):
    """Answer to `Metadata`; each stream has its own response code."""

    KEY: ClassVar[int] = _R | Key.METADATA
    correlation_id: int
    brokers: Sequence[Broker]
    streams: Sequence[StreamMetadata]


@dataclass(frozen=True, slots=True)
class RouteResponse(CommandBase):
    """Answer to `Route`."""

    KEY: ClassVar[int] = _R | Key.ROUTE
    correlation_id: int
    code: int
    streams: Sequence[str]


@dataclass(frozen=True, slots=True)
class PartitionsResponse(CommandBase):
    """Answer to `Partitions`."""

    KEY: ClassVar[int] = _R | Key.PARTITIONS
    correlation_id: int
    code: int
    streams: Sequence[str]


@dataclass(frozen=True, slots=True)
class StreamStatsResponse(CommandBase):
    """
    :param stats: E.g. ``first_chunk_id``, ``committed_chunk_id``,
        ``committed_offset`` (RabbitMQ 4.3).
    """

    KEY: ClassVar[int] = _R | Key.STREAM_STATS
    correlation_id: int
    code: int
    stats: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class CreateSuperStreamResponse(CommandBase):
    """Answer to `CreateSuperStream`."""

    KEY: ClassVar[int] = _R | Key.CREATE_SUPER_STREAM
    correlation_id: int
    code: int


@dataclass(frozen=True, slots=True)
class DeleteSuperStreamResponse(CommandBase):
    """Answer to `DeleteSuperStream`."""

    KEY: ClassVar[int] = _R | Key.DELETE_SUPER_STREAM
    correlation_id: int
    code: int


@dataclass(frozen=True, slots=True)
class ResolveOffsetSpecResponse(CommandBase):
    """
    :param offset_type: Type of the resolved value; always 4 (offset) so
        far, kept as an integer for newer brokers.
    """

    KEY: ClassVar[int] = _R | Key.RESOLVE_OFFSET_SPEC
    correlation_id: int
    code: int
    offset_type: int
    offset: int


@dataclass(frozen=True, slots=True)
class PeerPropertiesResponse(CommandBase):
    """Broker properties; ``version`` tells the broker version."""

    KEY: ClassVar[int] = _R | Key.PEER_PROPERTIES
    correlation_id: int
    code: int
    properties: Properties


@dataclass(frozen=True, slots=True)
class SaslHandshakeResponse(CommandBase):
    """Answer to `SaslHandshake` with the supported mechanisms."""

    KEY: ClassVar[int] = _R | Key.SASL_HANDSHAKE
    correlation_id: int
    code: int
    mechanisms: Sequence[str]


@dataclass(frozen=True, slots=True)
class SaslAuthenticateResponse(CommandBase):
    """
    :param data: SASL challenge with code 0x0a, otherwise usually `None`.
    """

    KEY: ClassVar[int] = _R | Key.SASL_AUTHENTICATE
    correlation_id: int
    code: int
    data: bytes | None


@dataclass(frozen=True, slots=True)
class TuneResponse(CommandBase):
    """
    Client answer to `Tune` with the settings it agrees on. It has the same
    body as `Tune`, no correlation id and no response code; the key has the
    response bit set (0x8014) as the Java reference client sends it.
    """

    KEY: ClassVar[int] = _R | Key.TUNE
    frame_max: int
    heartbeat: int


@dataclass(frozen=True, slots=True)
class OpenResponse(CommandBase):
    """
    :param properties: E.g. ``advertised_host``, ``advertised_port``.
    """

    KEY: ClassVar[int] = _R | Key.OPEN
    correlation_id: int
    code: int
    properties: Properties


@dataclass(frozen=True, slots=True)
class CloseResponse(CommandBase):
    """Answer to `Close`."""

    KEY: ClassVar[int] = _R | Key.CLOSE
    correlation_id: int
    code: int


@dataclass(frozen=True, slots=True)
class ExchangeCommandVersionsResponse(CommandBase):
    """Answer to `ExchangeCommandVersions` with the broker's versions."""

    KEY: ClassVar[int] = _R | Key.EXCHANGE_COMMAND_VERSIONS
    correlation_id: int
    code: int
    versions: Sequence[CommandVersion]


__all__ = [
    'CloseResponse',
    'ConsumerUpdateResponse',
    'CreateResponse',
    'CreateSuperStreamResponse',
    'CreditResponse',
    'DeclarePublisherResponse',
    'DeletePublisherResponse',
    'DeleteResponse',
    'DeleteSuperStreamResponse',
    'ExchangeCommandVersionsResponse',
    'MetadataResponse',
    'OpenResponse',
    'PartitionsResponse',
    'PeerPropertiesResponse',
    'QueryOffsetResponse',
    'QueryPublisherSequenceResponse',
    'ResolveOffsetSpecResponse',
    'RouteResponse',
    'SaslAuthenticateResponse',
    'SaslHandshakeResponse',
    'StreamStatsResponse',
    'SubscribeResponse',
    'TuneResponse',
    'UnsubscribeResponse',
]
