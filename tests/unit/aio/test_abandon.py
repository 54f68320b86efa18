"""
A publisher or subscription whose declaration was cancelled or timed out
keeps its id taken until the broker answered its deletion (the records'
:py:func:`~rbfly.streams.aio.records.abandon`, without a broker; the
integration tests in ``test_timeouts.py`` show it with one).
"""

import asyncio
import typing as tp

import pytest

from rbfly.streams.aio.connection import ABANDONED
from rbfly.streams.aio.records import abandon
from rbfly.streams.error import StreamsError, SubscriptionIdDoesNotExist
from rbfly.streams.parts.tasks import Background

class Protocol:
    """Answers requests when told to."""
    def __init__(self, is_open: bool = True) -> None:
        self.is_open = is_open
        self.requests: list[tuple[object, str]] = []
        self.answer: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.subscriptions: dict[int, object] = {}
        self.publishers: dict[int, object] = {}

    async def request(self, command: object, context: str) -> None:
        self.requests.append((command, context))
        await self.answer

def abandon_id(protocol: Protocol, ident: int, command: str, tasks: Background) -> None:
    abandon(
        tp.cast(tp.Any, protocol), 'subscriptions', ident, tp.cast(tp.Any, command), 'ctx',
        tasks.spawn,
    )

@pytest.mark.parametrize('answer', [None, SubscriptionIdDoesNotExist('gone')])
async def test_id_taken_until_deleted(answer: StreamsError | None) -> None:
    tasks = Background()
    protocol = Protocol()
    abandon_id(protocol, 3, 'unsubscribe 3', tasks)
    await asyncio.sleep(0)
    assert protocol.subscriptions == {3: ABANDONED}
    assert protocol.requests == [('unsubscribe 3', 'ctx')]
    if answer is None:
        protocol.answer.set_result(None)
    else:
        protocol.answer.set_exception(answer)  # suppressed: the id is free
    await tasks.wait()
    assert protocol.subscriptions == {}
    assert len(tasks) == 0

async def test_id_reused_is_kept() -> None:
    """An id taken again meanwhile (a new connection's) is not touched."""
    tasks = Background()
    protocol = Protocol()
    abandon_id(protocol, 0, 'delete 0', tasks)
    await asyncio.sleep(0)
    protocol.subscriptions[0] = 'new'
    protocol.answer.set_result(None)
    await tasks.wait()
    assert protocol.subscriptions == {0: 'new'}

async def test_closed_connection_frees_at_once() -> None:
    tasks = Background()
    protocol = Protocol(is_open=False)
    abandon_id(protocol, 1, 'delete 1', tasks)
    assert protocol.subscriptions == {}
    assert protocol.requests == []
    assert len(tasks) == 0
