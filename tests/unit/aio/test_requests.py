"""
Typed requests over the asyncio adapter
(:py:meth:`~rbfly.streams.aio.connection.StreamsProtocol.request`): every
request returns the response class it names, and a response of another
class under its correlation id is a typed protocol error, not an
`AttributeError` when a field is read later.

The requests are those of the commands module (as
``test_protocol_requests`` finds them), each with its golden vector (and
its response's) as a sample; none is listed here. No sockets.
"""

from __future__ import annotations

import asyncio
import dataclasses
import typing as tp

import pytest

from rbfly.error import ProtocolError
from rbfly.streams.protocol import (
    Command,
    Create,
    CreateResponse,
    QueryOffset,
    QueryOffsetResponse,
    UnexpectedResponse,
    encode,
)
from rbfly.streams.protocol.base import CommandBase, Request

from ..protocol.test_protocol_golden import GOLDEN
from ..protocol.test_protocol_requests import REQUESTS
from ._fakes import OK, handshake, start

# the first golden vector of each command class
SAMPLES: dict[type, Command] = {type(v[0]): v[0] for v in reversed(GOLDEN)}

def answer(response_class: type[CommandBase], correlation_id: int, code: int = OK) -> Command:
    """A response of the class, under the correlation id, with the code (if it has one)."""
    sample: tp.Any = SAMPLES[response_class]  # (a dataclass of the union: replace takes Any)
    changes: dict[str, int] = {'correlation_id': correlation_id}
    if 'code' in {f.name for f in dataclasses.fields(sample)}:  # (MetadataResponse has none)
        changes['code'] = code
    response: Command = dataclasses.replace(sample, **changes)
    return response

def other(request_class: type[Request[CommandBase]]) -> type[CommandBase]:
    """The response of another request (the next one)."""
    return REQUESTS[(REQUESTS.index(request_class) + 1) % len(REQUESTS)].RESPONSE

@pytest.mark.parametrize('request_class', REQUESTS, ids=lambda c: c.__name__)
async def test_response_is_the_class_named(request_class: type[Request[CommandBase]]) -> None:
    """A request returns its response, of the class the request names."""
    protocol, transport = handshake()
    command = SAMPLES[request_class]
    assert isinstance(command, request_class)
    task, cid = await start(protocol, transport, command, 'ctx')
    response = answer(request_class.RESPONSE, cid)
    protocol.data_received(encode(response))
    result = await task
    assert type(result) is request_class.RESPONSE
    assert result == response
    assert len(protocol.requests) == 0

@pytest.mark.parametrize('request_class', REQUESTS, ids=lambda c: c.__name__)
async def test_other_response_is_protocol_error(request_class: type[Request[CommandBase]]) -> None:
    """
    A response of another class fails the request with
    `UnexpectedResponse`, naming the request and what came, before its
    code is read; the connection stays usable.
    """
    protocol, transport = handshake()
    task, cid = await start(protocol, transport, SAMPLES[request_class], 'ctx')
    wrong = other(request_class)
    protocol.data_received(encode(answer(wrong, cid, code=0x02)))  # an error code too
    with pytest.raises(UnexpectedResponse) as info:
        await task
    error = info.value
    assert isinstance(error, ProtocolError)
    assert str(error) == 'the broker answered {} with {}, not {} (ctx)'.format(
        request_class.__name__, wrong.__name__, request_class.RESPONSE.__name__,
    )
    assert (error.request, error.expected, error.received, error.context) \
        == (request_class, request_class.RESPONSE, wrong, 'ctx')
    assert len(protocol.requests) == 0
    # the right response coming after it has no waiter any more
    protocol.data_received(encode(answer(request_class.RESPONSE, cid)))
    assert protocol.is_open
    task, cid = await start(protocol, transport, Create('orders', {}))
    protocol.data_received(encode(CreateResponse(cid, OK)))
    assert await task == CreateResponse(cid, OK)

async def test_response_type_is_static() -> None:
    """A type checker knows the response's class (the lint's mypy checks ``assert_type``)."""
    protocol, transport = handshake()

    async def query() -> int:
        response = await protocol.request(QueryOffset('app', 'orders'))
        return tp.assert_type(response, QueryOffsetResponse).offset

    task = asyncio.ensure_future(query())
    await asyncio.sleep(0)
    [(_, cid)] = transport.sent()
    assert cid is not None
    protocol.data_received(encode(QueryOffsetResponse(cid, OK, 42)))
    assert await task == 42
