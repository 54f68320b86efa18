"""
Streams themselves: creating and deleting them, whether they exist, where
they live, their statistics, and resolving an offset specification.
"""

from __future__ import annotations

import re
import typing as tp

from ..error import StreamAlreadyExists, StreamDoesNotExist
from ..names import check_name
from ..offset import Offset
from ..protocol.commands import Create, Delete, ResolveOffsetSpec, StreamStats
from ..types import MessageFilter, StreamInfo
from . import metadata
from .connections import Connections
from .offsets import Offsets
from .subscribing import filter_properties

STREAM_ARGUMENTS = {
    'max_length_bytes': 'max-length-bytes',
    'max_age': 'max-age',
    'max_segment_size_bytes': 'stream-max-segment-size-bytes',
    'filter_size': 'stream-filter-size-bytes',
    'leader_locator': 'queue-leader-locator',
    'initial_cluster_size': 'initial-cluster-size',
    'initial_offset': 'stream-initial-offset',
}
"""The broker's names of the stream arguments ``create_stream`` names."""

MAX_INITIAL_OFFSET = 2**62 - 1
"""Highest first offset of a new stream (the broker's, and the Java client's, bound)."""

LEADER_LOCATORS = ('client-local', 'balanced', 'least-leaders', 'random')
_AGE = re.compile(r'^[1-9][0-9]*[YMDhms]$')

def _whole(option: str, value: object, low: int, high: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low \
            or (high is not None and value > high):
        raise ValueError('{} must be a whole number {}, got {!r}'.format(
            option, 'from {} to {}'.format(low, high) if high is not None
            else 'at least {}'.format(low), value,
        ))

def check_stream_arguments(named: tp.Mapping[str, object]) -> None:
    """
    Check the named arguments of a new stream before the broker sees them.

    :raises ValueError: Naming the argument out of range.
    """
    for option in ('max_length_bytes', 'max_segment_size_bytes', 'initial_cluster_size'):
        if named.get(option) is not None:
            _whole(option, named[option], 1)
    if named.get('filter_size') is not None:
        _whole('filter_size', named['filter_size'], 16, 255)
    if named.get('initial_offset') is not None:
        _whole('initial_offset', named['initial_offset'], 0, MAX_INITIAL_OFFSET)
    age = named.get('max_age')
    if age is not None and not (isinstance(age, str) and _AGE.match(age)):
        raise ValueError('max_age must be a number and a unit (Y, M, D, h, m, s),'
                         ' e.g. 7D or 12h, got {!r}'.format(age))
    locator = named.get('leader_locator')
    if locator is not None and locator not in LEADER_LOCATORS:
        raise ValueError('leader_locator must be one of {}, got {!r}'.format(
            ', '.join(LEADER_LOCATORS), locator,
        ))

_DIGITS = re.compile(r'^[0-9]+$')

def check_arguments(arguments: object) -> dict[str, str]:
    """
    Check the stream arguments given by the broker's names (``arguments``
    of ``create_stream`` and ``create_super_stream``); return them as a
    dict.

    The broker closes the connection on a malformed value of an argument
    it knows (RabbitMQ 4.0, ``max-age: xx``): those named by
    :py:data:`STREAM_ARGUMENTS` are checked as their options are.

    :raises TypeError: When ``arguments`` is not a mapping of non-empty str
        names to str values.
    :raises ValueError: Naming the argument with a malformed value.
    """
    if arguments is None:
        return {}
    if not isinstance(arguments, tp.Mapping) or not all(
            isinstance(k, str) and k and isinstance(v, str) for k, v in arguments.items()):
        raise TypeError('arguments must map non-empty str names to str values, got {!r}'.format(
            arguments,
        ))
    args = dict(arguments)
    for option, argument in STREAM_ARGUMENTS.items():
        value = args.get(argument)
        if value is None:
            continue
        named: object = value
        if option not in ('max_age', 'leader_locator'):
            named = int(value) if _DIGITS.match(value) else value
        try:
            check_stream_arguments({option: named})
        except ValueError as ex:
            raise ValueError('stream argument {!r}: {}'.format(argument, ex)) from None
    return args

class Streams:
    """
    Stream management of a client.

    :param connections: The client's connections (requests go through its
        own, sent once more when it is lost before the answer).
    :param offsets: Offset specifications.
    """
    def __init__(self, connections: Connections, offsets: Offsets) -> None:
        self._connections = connections
        self._offsets = offsets

    async def create(
            self, stream: str, named: tp.Mapping[str, object],
            arguments: tp.Mapping[str, str] | None, exist_ok: bool,
    ) -> None:
        """Create a stream with the arguments ``named`` by their option name, and others."""
        check_name('stream', stream)
        check_stream_arguments(named)
        args = check_arguments(arguments)
        for option, value in named.items():
            if value is not None:
                args[STREAM_ARGUMENTS[option]] = str(value)
        try:
            await self._connections.call(Create(stream, args), 'stream {!r}'.format(stream))
        except StreamAlreadyExists:
            if not exist_ok:
                raise

    async def delete(self, stream: str, missing_ok: bool) -> None:
        """Delete a stream."""
        check_name('stream', stream)
        try:
            await self._connections.call(Delete(stream), 'stream {!r}'.format(stream))
        except StreamDoesNotExist:
            if not missing_ok:
                raise

    async def exists(self, stream: str) -> bool:
        """Whether a stream exists."""
        check_name('stream', stream)
        return metadata.exists(await metadata.members(self._connections.call, stream))

    async def info(self, stream: str) -> StreamInfo:
        """Where a stream lives."""
        check_name('stream', stream)
        found = await metadata.members(self._connections.call, stream)
        metadata.existing(found, stream, ready=True)
        return StreamInfo(stream, found.leader, list(found.replicas))

    async def stats(self, stream: str) -> dict[str, int]:
        """Statistics of a stream (RabbitMQ 3.11+)."""
        check_name('stream', stream)
        protocol = await self._connections.get()
        protocol.require((3, 11), 'stream statistics')
        response = await self._connections.call(StreamStats(stream), 'stream {!r}'.format(stream))
        return dict(response.stats)

    async def resolve(self, stream: str, offset: Offset, filter: MessageFilter | None) -> int:
        """The first offset a subscription with ``offset`` receives (RabbitMQ 4.3+)."""
        check_name('stream', stream)
        if not isinstance(offset, Offset):
            raise TypeError('offset must be an Offset, got {!r}'.format(type(offset).__name__))
        protocol = await self._connections.get()
        protocol.require((4, 3), 'resolving an offset specification')
        properties = {} if filter is None else filter_properties(filter)
        spec, start = await self._offsets.spec(stream, offset)
        response = await self._connections.call(
            ResolveOffsetSpec(stream, spec, properties), 'stream {!r}'.format(stream),
        )
        return max(response.offset, start)

__all__ = ['STREAM_ARGUMENTS', 'Streams', 'check_arguments']
