"""
Reading the broker's Metadata (:py:mod:`rbfly.streams.parts.metadata`) from
the real response dataclasses of the codec: where a stream lives, whether
it exists, and the errors of a stream that must exist.
"""

from __future__ import annotations

import typing as tp

import pytest

from rbfly.streams.error import (
    AccessRefused,
    ResponseError,
    StreamDoesNotExist,
    StreamNotAvailable,
)
from rbfly.streams.parts.metadata import (
    Status,
    StreamMembers,
    error_of,
    existing,
    exists,
    members,
    members_of,
)
from rbfly.streams.protocol import Metadata, MetadataResponse, ResponseCode
from rbfly.streams.protocol.base import Broker, StreamMetadata

OK = ResponseCode.OK
A = ('a', 5552)
B = ('b', 5553)
C = ('c', 5554)
BROKERS = [Broker(0, 'a', 5552), Broker(1, 'b', 5553), Broker(2, 'c', 5554)]

def response(*streams: StreamMetadata, brokers: list[Broker] = BROKERS) -> MetadataResponse:
    return MetadataResponse(7, brokers, list(streams))

def test_ready() -> None:
    """A stream with a listed leader: its members, replicas first, the leader last."""
    found = members_of(response(StreamMetadata('orders', OK, 0, [1, 2])), 'orders')
    assert found == StreamMembers(Status.READY, A, (B, C), OK)
    assert found.nodes == [B, C, A]
    assert exists(found)
    assert existing(found, 'orders') is found
    assert existing(found, 'orders', ready=True) is found

def test_ready_without_replicas() -> None:
    found = members_of(response(StreamMetadata('orders', OK, 1, [])), 'orders')
    assert found == StreamMembers(Status.READY, B, (), OK)
    assert found.nodes == [B]

def test_other_streams_ignored() -> None:
    """Only the stream asked about is read, wherever it is in the answer."""
    answer = response(
        StreamMetadata('other', ResponseCode.STREAM_DOES_NOT_EXIST, 0, []),
        StreamMetadata('orders', OK, 2, [0]),
        StreamMetadata('more', OK, 1, [0, 2]),
    )
    assert members_of(answer, 'orders') == StreamMembers(Status.READY, C, (A,), OK)

def test_unlisted_replica_dropped() -> None:
    """A replica whose broker is not listed is left out; the others stay."""
    found = members_of(response(StreamMetadata('orders', OK, 0, [5, 2])), 'orders')
    assert found == StreamMembers(Status.READY, A, (C,), OK)
    assert found.nodes == [C, A]

def test_leader_not_listed() -> None:
    """
    A leader the broker does not list (electing one): no leader, no
    nodes, but the stream exists and the code is OK.
    """
    found = members_of(response(StreamMetadata('orders', OK, 9, [1, 2])), 'orders')
    assert found == StreamMembers(Status.NO_LEADER, None, (B, C), OK)
    assert found.nodes == []
    assert exists(found)
    assert existing(found, 'orders') is found

def test_no_brokers() -> None:
    found = members_of(response(StreamMetadata('orders', OK, 0, [1]), brokers=[]), 'orders')
    assert found == StreamMembers(Status.NO_LEADER, None, (), OK)

def test_stream_not_available() -> None:
    """STREAM_NOT_AVAILABLE: the stream exists, without a leader now."""
    code = ResponseCode.STREAM_NOT_AVAILABLE
    found = members_of(response(StreamMetadata('orders', code, 0, [1, 2])), 'orders')
    assert found == StreamMembers(Status.NO_LEADER, code=code)
    assert (found.leader, found.replicas, found.nodes) == (None, (), [])
    assert exists(found)
    assert existing(found, 'orders') is found  # it exists: no error without ready
    with pytest.raises(StreamNotAvailable, match="stream 'orders'"):
        existing(found, 'orders', ready=True)

def test_stream_does_not_exist() -> None:
    code = ResponseCode.STREAM_DOES_NOT_EXIST
    found = members_of(response(StreamMetadata('orders', code, 0, [])), 'orders')
    assert found == StreamMembers(Status.MISSING, code=code)
    assert found.nodes == []
    assert not exists(found)
    for ready in (False, True):
        with pytest.raises(StreamDoesNotExist, match="stream 'orders'"):
            existing(found, 'orders', ready=ready)

def test_stream_not_in_answer() -> None:
    """A stream the broker does not list at all is missing, without a code."""
    found = members_of(response(StreamMetadata('other', OK, 0, [])), 'orders')
    assert found == StreamMembers(Status.MISSING, code=None)
    assert not exists(found)
    with pytest.raises(StreamDoesNotExist, match="stream 'orders'"):
        existing(found, 'orders')
    assert not exists(members_of(response(), 'orders'))

@pytest.mark.parametrize('ready', [False, True], ids=['any', 'ready'])
def test_other_error_code(ready: bool) -> None:
    """
    Any other code of the stream raises the broker's error for it; access
    refused is a refusal, not a missing stream.
    """
    code = ResponseCode.ACCESS_REFUSED
    found = members_of(response(StreamMetadata('orders', code, 0, [])), 'orders')
    assert found == StreamMembers(Status.REFUSED, code=code)
    assert exists(found)  # (only "does not exist" and no answer mean missing)
    with pytest.raises(AccessRefused, match="stream 'orders'"):
        existing(found, 'orders', ready=ready)

@pytest.mark.parametrize('code', [ResponseCode.INTERNAL_ERROR, 0x7f])
def test_failed_is_not_missing(code: int) -> None:
    """
    Another error code (an internal error of the broker's, or a code
    unknown to rbfly) is a failure of the moment: the stream is not
    missing, and its error names the code.
    """
    found = members_of(response(StreamMetadata('orders', code, 0, [])), 'orders')
    assert found == StreamMembers(Status.FAILED, code=code)
    assert exists(found)
    assert error_of(found, 'orders').code == code

def test_unknown_error_code() -> None:
    """A code unknown to rbfly raises a plain ResponseError naming it."""
    found = members_of(response(StreamMetadata('orders', 0x7f, 0, [])), 'orders')
    with pytest.raises(ResponseError, match='0x7f') as info:
        existing(found, 'orders')
    assert type(info.value) is ResponseError
    assert info.value.code == 0x7f

async def test_members_asks_once() -> None:
    """``members`` sends one Metadata request for the stream, with its context."""
    sent: list[tuple[object, str]] = []

    async def request(command: tp.Any, context: str) -> MetadataResponse:
        sent.append((command, context))
        return response(StreamMetadata('orders', OK, 1, [0]))

    found = await members(request, 'orders')
    assert sent == [(Metadata(['orders']), "stream 'orders'")]
    assert found == StreamMembers(Status.READY, B, (A,), OK)
