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
from typing import ClassVar, Generic, TypeVar, get_args, get_origin

from .constants import OffsetSpecType

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


ResponseT_co = TypeVar('ResponseT_co', bound=CommandBase, covariant=True)
"""Class of the response to a request."""


class Request(CommandBase, Generic[ResponseT_co]):
    """
    Base class of the requests: the commands a peer answers with one
    response, of class ``ResponseT_co``, matched to the request by its
    correlation id (one-way commands, e.g. `Publish`, `Credit`,
    `StoreOffset`, `Heartbeat`, are not requests).

    A request class names its response once, as the parameter of its base
    (``class Create(Request[CreateResponse])``): a type checker reads it
    there, so that sending a `Create` returns a `CreateResponse`, and the
    class sets ``RESPONSE`` from it when it is made, so that the adapter
    checks what the broker answers with one identity test. A request costs
    nothing more to build, encode or send.

    :cvar RESPONSE: Class of the response.
    """

    __slots__ = ()
    RESPONSE: ClassVar[type[CommandBase]]

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        # `dataclass(slots=True)` makes the class again from its namespace,
        # `__orig_bases__` included: this runs for both classes
        for base in cls.__dict__.get('__orig_bases__', ()):
            if get_origin(base) is not Request:
                continue
            (response,) = get_args(base)
            if not (isinstance(response, type) and issubclass(response, CommandBase)):
                raise TypeError('{}: the response of a request must be a command class,'
                                ' got {!r}'.format(cls.__name__, response))
            cls.RESPONSE = response
        if not hasattr(cls, 'RESPONSE'):
            raise TypeError('{} must name its response: class {}(Request[...Response])'.format(
                cls.__name__, cls.__name__))


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """
    Offset specification of `Subscribe`, `ConsumerUpdateResponse` and
    `ResolveOffsetSpec`.

    Use the class methods to build a valid value.

    :param type: Offset type.
    :param value: `uint64` offset for `OffsetSpecType.OFFSET`, `int64` Erlang
        system time in milliseconds for `OffsetSpecType.TIMESTAMP`, `None` for
        the other types (they carry no value on the wire).
    """

    type: OffsetSpecType
    value: int | None = None

    @classmethod
    def none(cls) -> OffsetSpec:
        """Let the broker choose (`ConsumerUpdateResponse` only)."""
        return cls(OffsetSpecType.NONE)

    @classmethod
    def first(cls) -> OffsetSpec:
        """Start at the first message of a stream."""
        return cls(OffsetSpecType.FIRST)

    @classmethod
    def last(cls) -> OffsetSpec:
        """Start at the last chunk of a stream."""
        return cls(OffsetSpecType.LAST)

    @classmethod
    def next(cls) -> OffsetSpec:
        """Receive only messages published from now on."""
        return cls(OffsetSpecType.NEXT)

    @classmethod
    def offset(cls, offset: int) -> OffsetSpec:
        """Start at the chunk containing the offset."""
        return cls(OffsetSpecType.OFFSET, offset)

    @classmethod
    def timestamp(cls, timestamp: int) -> OffsetSpec:
        """Start at the chunk before the time, in ms since the epoch."""
        return cls(OffsetSpecType.TIMESTAMP, timestamp)


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
    'Request',
    'ResponseT_co',
    'StreamMetadata',
]
