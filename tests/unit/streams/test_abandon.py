"""
A publisher or subscription whose declaration was cancelled or timed out
keeps its id taken until the broker answered its deletion (without a
broker; the integration tests in ``test_timeouts.py`` show it with one).
"""

import asyncio
import typing as tp

import pytest

from rbfly.streams import streams_client
from rbfly.streams.aio.protocol import ABANDONED
from rbfly.streams.error import StreamsError, SubscriptionIdDoesNotExist

class Protocol:
    """Answers requests when told to."""
    def __init__(self, is_open: bool = True) -> None:
        self.is_open = is_open
        self.requests: list[tuple[object, str]] = []
        self.answer: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def request(self, command: object, context: str) -> None:
        self.requests.append((command, context))
        await self.answer

@pytest.mark.parametrize('answer', [None, SubscriptionIdDoesNotExist('gone')])
async def test_id_taken_until_deleted(answer: StreamsError | None) -> None:
    client = streams_client('rabbitmq-stream://localhost')
    protocol = Protocol()
    handlers: dict[int, object] = {}
    client._abandon(tp.cast(tp.Any, protocol), handlers, 3, 'unsubscribe 3', 'ctx')
    await asyncio.sleep(0)
    assert handlers == {3: ABANDONED}
    assert protocol.requests == [('unsubscribe 3', 'ctx')]
    if answer is None:
        protocol.answer.set_result(None)
    else:
        protocol.answer.set_exception(answer)  # suppressed: the id is free
    await asyncio.wait(client._tasks)
    assert handlers == {}

async def test_id_reused_is_kept() -> None:
    """An id taken again meanwhile (a new connection's) is not touched."""
    client = streams_client('rabbitmq-stream://localhost')
    protocol = Protocol()
    handlers: dict[int, object] = {}
    client._abandon(tp.cast(tp.Any, protocol), handlers, 0, 'delete 0', 'ctx')
    await asyncio.sleep(0)
    handlers[0] = 'new'
    protocol.answer.set_result(None)
    await asyncio.wait(client._tasks)
    assert handlers == {0: 'new'}

async def test_closed_connection_frees_at_once() -> None:
    client = streams_client('rabbitmq-stream://localhost')
    protocol = Protocol(is_open=False)
    handlers: dict[int, object] = {}
    client._abandon(tp.cast(tp.Any, protocol), handlers, 1, 'delete 1', 'ctx')
    assert handlers == {}
    assert protocol.requests == []
    assert not client._tasks
