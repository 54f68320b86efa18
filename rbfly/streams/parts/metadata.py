"""
The broker's Metadata: the only place the client asks for it and reads
its answer.

A stream's metadata names its leader and replicas by broker reference;
the broker list maps references to the nodes' advertised host and port.
While a stream elects a leader, the broker answers "stream not available"
or names a leader it does not list.
"""

from __future__ import annotations

import dataclasses as dtc
import enum
import typing as tp

from ..error import (
    ResponseError,
    StreamDoesNotExist,
    StreamNotAvailable,
    StreamsError,
    error_for_code,
)
from ..protocol.commands import Metadata, MetadataResponse
from ..protocol.constants import ResponseCode
from .connector import Node

class Status(enum.Enum):
    """What the broker says of a stream."""
    READY = 'ready'
    """It has a leader the broker lists."""
    NO_LEADER = 'no-leader'
    """It exists, but has no leader now (electing one)."""
    MISSING = 'missing'
    """It does not exist (or was deleted): the broker answers "stream does
    not exist", or does not list it."""
    REFUSED = 'refused'
    """The broker refuses to say (access refused: the user may not use the
    stream); it may well exist. Asking again does not help."""
    FAILED = 'failed'
    """The broker answers another error code for it (an internal error,
    say): a failure of the moment; asking again may help."""

@dtc.dataclass(frozen=True)
class StreamMembers:
    """
    Where a stream lives.

    :ivar status: Whether it has a leader, or exists at all.
    :ivar leader: Node of its leader (``None`` unless ready).
    :ivar replicas: Nodes of its replicas the broker lists.
    :ivar code: The broker's response code for the stream (``None``: the
        broker did not list it).
    """
    status: Status
    leader: Node | None = None
    replicas: tuple[Node, ...] = ()
    code: int | None = ResponseCode.OK

    @property
    def nodes(self) -> list[Node]:
        """Nodes of the members, replicas first, the leader last (none without a leader)."""
        if self.leader is None:
            return []
        return [*self.replicas, self.leader]

def members_of(response: MetadataResponse, stream: str) -> StreamMembers:
    """Read a stream's members from a Metadata response."""
    brokers = {b.reference: (b.host, b.port) for b in response.brokers}
    for m in response.streams:
        if m.stream != stream:
            continue
        if m.code == ResponseCode.STREAM_NOT_AVAILABLE:
            return StreamMembers(Status.NO_LEADER, code=m.code)
        if m.code == ResponseCode.STREAM_DOES_NOT_EXIST:
            return StreamMembers(Status.MISSING, code=m.code)
        if m.code == ResponseCode.ACCESS_REFUSED:
            return StreamMembers(Status.REFUSED, code=m.code)
        if m.code != ResponseCode.OK:
            return StreamMembers(Status.FAILED, code=m.code)
        replicas = tuple(brokers[r] for r in m.replica_references if r in brokers)
        leader = brokers.get(m.leader_reference)
        status = Status.READY if leader is not None else Status.NO_LEADER
        return StreamMembers(status, leader, replicas)
    return StreamMembers(Status.MISSING, code=None)

Request: tp.TypeAlias = tp.Callable[[Metadata, str], tp.Awaitable[MetadataResponse]]
"""Sends a request and returns its response (a connection's ``request``, say)."""

async def members(request: Request, stream: str) -> StreamMembers:
    """
    Ask the broker where a stream lives (``request``: through which
    connection).

    :raises ConnectionLost: When the connection is lost first.
    """
    response = await request(Metadata([stream]), 'stream {!r}'.format(stream))
    return members_of(response, stream)

def existing(found: StreamMembers, stream: str, *, ready: bool = False) -> StreamMembers:
    """
    The members of a stream that must exist (with ``ready``: and have a
    leader).

    :raises StreamDoesNotExist: When the broker does not list it.
    :raises rbfly.streams.error.ResponseError: The broker's error for it
        otherwise (with ``ready``, ``StreamNotAvailable`` without a leader).
    """
    code = found.code
    if code != ResponseCode.OK and (ready or code != ResponseCode.STREAM_NOT_AVAILABLE):
        raise error_of(found, stream)
    return found

def error_of(found: StreamMembers, stream: str) -> ResponseError:
    """
    The broker's error for a stream it did not answer OK for (or
    :py:class:`~rbfly.streams.error.StreamDoesNotExist` when it did not
    list it), naming its code.
    """
    assert found.code != ResponseCode.OK
    if found.code is None:
        return StreamDoesNotExist('stream {!r}'.format(stream))
    return error_for_code(found.code, 'stream {!r}'.format(stream))

def exists(found: StreamMembers) -> bool:
    """Whether a stream exists (also while it elects a leader)."""
    return found.code is not None and found.code != ResponseCode.STREAM_DOES_NOT_EXIST

async def leader_known(request: Request, stream: str) -> StreamsError | None:
    """
    Whether a stream has a leader again: ``None`` when it has, else why
    not (the error its publishers and subscriptions end with when it
    lasts): it has no leader yet, or the broker failed to answer for
    it (a code other than those below: asked again, as a failure of
    the moment must not end them as if the stream were deleted).

    :raises StreamDoesNotExist: When it was deleted.
    :raises AccessRefused: When the user may not use it now (the
        broker's error, naming its code; asking again does not help).
    """
    found = await members(request, stream)
    status = found.status
    if status is Status.READY:
        return None
    if status is Status.MISSING:
        raise StreamDoesNotExist('stream {!r} was deleted'.format(stream))
    if status is Status.REFUSED:
        raise error_of(found, stream)
    if status is Status.FAILED:
        return error_of(found, stream)
    return StreamNotAvailable('stream {!r}'.format(stream))

__all__ = [
    'Request', 'Status', 'StreamMembers', 'error_of', 'existing', 'exists', 'leader_known',
    'members', 'members_of',
]
