"""
The broker asked once by callers asking the same at once
(:py:class:`rbfly.streams.parts.asking.Asking`): they share the answer, or
the error; a caller cancelled leaves the request to the others; an answer
is not kept after it came.
"""

import asyncio

import pytest

from rbfly.streams.parts.asking import Asking

class Broker:
    """Answers when told to; counts the questions."""
    def __init__(self) -> None:
        self.asked = 0
        self.answer: asyncio.Future[int] | None = None

    async def request(self) -> int:
        self.asked += 1
        self.answer = asyncio.get_running_loop().create_future()
        return await self.answer

async def settle() -> None:
    """Let the callers and the request run up to where they wait."""
    for _ in range(5):
        await asyncio.sleep(0)

async def test_shared_while_under_way() -> None:
    broker, asking = Broker(), Asking[int]()
    callers = [asyncio.ensure_future(asking.ask('s', broker.request)) for _ in range(10)]
    await settle()
    assert broker.asked == 1 and broker.answer is not None
    broker.answer.set_result(7)
    assert await asyncio.gather(*callers) == [7] * 10
    # (not kept: asked again)
    again = asyncio.ensure_future(asking.ask('s', broker.request))
    await settle()
    assert broker.asked == 2
    broker.answer.set_result(8)
    assert await again == 8

async def test_other_keys_asked_apart() -> None:
    broker, asking = Broker(), Asking[int]()
    a = asyncio.ensure_future(asking.ask('a', broker.request))
    b = asyncio.ensure_future(asking.ask('b', broker.request))
    await settle()
    assert broker.asked == 2
    a.cancel()
    b.cancel()
    await asyncio.gather(a, b, return_exceptions=True)

async def test_error_shared() -> None:
    broker, asking = Broker(), Asking[int]()
    callers = [asyncio.ensure_future(asking.ask('s', broker.request)) for _ in range(3)]
    await settle()
    assert broker.answer is not None
    broker.answer.set_exception(ConnectionError('lost'))
    for c in callers:
        with pytest.raises(ConnectionError, match='lost'):
            await c

async def test_cancelled_caller_leaves_it_to_the_others() -> None:
    broker, asking = Broker(), Asking[int]()
    first = asyncio.ensure_future(asking.ask('s', broker.request))
    second = asyncio.ensure_future(asking.ask('s', broker.request))
    await settle()
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert broker.answer is not None and not broker.answer.cancelled()
    broker.answer.set_result(3)
    assert await second == 3
