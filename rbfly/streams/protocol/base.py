"""
Base class and field values of RabbitMQ Streams commands.

The command classes live in :py:mod:`rbfly.streams.protocol.commands`
(requests and one-way commands) and
:py:mod:`rbfly.streams.protocol.responses`; the former re-exports all of
them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from .constants import OffsetType

BytesLike = bytes | bytearray | memoryview
"""Binary data accepted by the encoder."""

Properties = Mapping[str, str]
"""Key/value string pairs (peer properties, subscription properties...)."""


class CommandBase:
    """
    Base class of the command dataclasses.

    :cvar KEY: Wire key, with the response bit for a response.
    :cvar VERSION: Wire version; a version-2 command is a class of its own,
        so that every class has exactly one wire layout.
    """

    __slots__ = ()
    KEY: ClassVar[int]
    VERSION: ClassVar[int] = 1


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """
    Offset specification of `Subscribe`, `ConsumerUpdateResponse` and
    `ResolveOffsetSpec`.

    Use the class methods to build a valid value.

    :param type: Offset type.
    :param value: `uint64` offset for `OffsetType.OFFSET`, `int64` Erlang
        system time in milliseconds for `OffsetType.TIMESTAMP`, `None` for
        the other types (they carry no value on the wire).
    """

    type: OffsetType
    value: int | None = None

    @classmethod
    def none(cls) -> OffsetSpec:
        """Let the broker choose (`ConsumerUpdateResponse` only)."""
        return cls(OffsetType.NONE)

    @classmethod
    def first(cls) -> OffsetSpec:
        """Start at the first message of a stream."""
        return cls(OffsetType.FIRST)

    @classmethod
    def last(cls) -> OffsetSpec:
        """Start at the last chunk of a stream."""
        return cls(OffsetType.LAST)

    @classmethod
    def next(cls) -> OffsetSpec:
        """Receive only messages published from now on."""
        return cls(OffsetType.NEXT)

    @classmethod
    def offset(cls, offset: int) -> OffsetSpec:
        """Start at the chunk containing the offset."""
        return cls(OffsetType.OFFSET, offset)

    @classmethod
    def timestamp(cls, timestamp: int) -> OffsetSpec:
        """Start at the chunk before the time, in ms since the epoch."""
        return cls(OffsetType.TIMESTAMP, timestamp)


@dataclass(frozen=True, slots=True)
class PublishingError:
    """
    Error of one message in `PublishError`.

    :param publishing_id: Publishing id of the rejected message.
    :param code: Response code saying why.
    """

    publishing_id: int
    code: int


@dataclass(frozen=True, slots=True)
class Broker:
    """
    Broker of a `MetadataResponse`.

    :param reference: Index referred to by `StreamMetadata`.
    """

    reference: int
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class StreamMetadata:
    """
    Stream of a `MetadataResponse`.

    :param leader_reference: Broker reference of the leader;
        :py:data:`~rbfly.streams.protocol.constants.NO_LEADER` if none.
    """

    stream: str
    code: int
    leader_reference: int
    replica_references: Sequence[int]


@dataclass(frozen=True, slots=True)
class CommandVersion:
    """
    Version range of one command in `ExchangeCommandVersions`.

    :param key: Command key; a plain integer, since a newer peer may
        advertise a key unknown to this module.
    """

    key: int
    min_version: int
    max_version: int


__all__ = [
    'Broker',
    'BytesLike',
    'CommandBase',
    'CommandVersion',
    'OffsetSpec',
    'Properties',
    'PublishingError',
    'StreamMetadata',
]
