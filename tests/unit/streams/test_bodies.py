"""
The compiled message iterator of ``client.subscribe()`` (no broker: the
chunks come from a generator).
"""

import asyncio
import sys
import typing as tp
from collections.abc import AsyncGenerator, AsyncIterator

import pytest

from rbfly.amqp import MessageCtx
from rbfly.streams import get_message_ctx
from rbfly.streams._bodies import Bodies

def msg(body: object, offset: int) -> MessageCtx:
    m = MessageCtx(tp.cast(tp.Any, body))
    m.stream_offset = offset
    return m

class Source:
    """Chunks of messages, recording whether it was closed."""
    def __init__(self, chunks: list[list[MessageCtx]], error: Exception | None = None) -> None:
        self.chunks = chunks
        self.error = error
        self.closed = False

    async def gen(self) -> AsyncGenerator[list[MessageCtx], None]:
        try:
            for chunk in self.chunks:
                await asyncio.sleep(0)
                yield chunk
            if self.error is not None:
                raise self.error
        finally:
            self.closed = True

def bodies_of(source: Source) -> Bodies:
    return Bodies(source.gen())

async def collect(it: AsyncIterator[object]) -> list[tuple[object, int]]:
    return [(body, get_message_ctx().stream_offset) async for body in it]

async def test_bodies_and_contexts() -> None:
    """Every body in order, each with its message context; empty chunks skipped."""
    chunks = [[msg('a', 0), msg(b'b', 1)], [], [msg((1, 2), 2)], [msg(None, 3)]]
    source = Source(chunks)
    assert await collect(bodies_of(source)) == [('a', 0), (b'b', 1), ((1, 2), 2), (None, 3)]
    assert source.closed

async def test_error_of_chunks() -> None:
    """An error of the subscription reaches the loop after the messages before it."""
    source = Source([[msg(1, 0)]], error=ConnectionError('lost'))
    seen = []
    with pytest.raises(ConnectionError, match='lost'):
        async for body in bodies_of(source):
            seen.append(body)
    assert seen == [1]

async def test_task_keeps_its_message() -> None:
    """A task created while a message is processed keeps that message's context."""
    async def offset_later() -> int:
        await asyncio.sleep(0.01)
        return get_message_ctx().stream_offset

    tasks = []
    async for _ in bodies_of(Source([[msg(i, i) for i in range(10)]])):
        tasks.append(asyncio.create_task(offset_later()))
    assert await asyncio.gather(*tasks) == list(range(10))

async def test_async_generator_api() -> None:
    """asend(None), aclose() and athrow() as an async generator's; it is one."""
    source = Source([[msg(i, i) for i in range(5)]])
    it = bodies_of(source)
    assert isinstance(it, AsyncGenerator)
    assert it.__aiter__() is it
    assert await it.asend(None) == 0
    assert await anext(it) == 1
    assert await asyncio.wait_for(it.__anext__(), 1) == 2   # awaited through __await__
    with pytest.raises(TypeError, match='can only send None'):
        await it.asend(1)  # type: ignore[arg-type]
    await it.aclose()
    assert source.closed
    assert await anext(it, 'end') == 'end'

    source = Source([[msg(1, 0)]])
    it = bodies_of(source)
    assert await anext(it) == 1
    with pytest.raises(KeyError):
        await it.athrow(KeyError('x'))
    assert source.closed

async def test_under_tracer() -> None:
    """
    With a tracer (coverage, debuggers) the interpreter awaits through the
    iterator protocol, not ``am_send``: the bodies are the same, a tuple
    included.
    """
    def tracer(frame: tp.Any, event: str, arg: tp.Any) -> tp.Any:
        return tracer

    chunks = [[msg('a', 0), msg((1, 2), 1), msg((), 2), msg(ValueError('v'), 3)]]
    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        result = await collect(bodies_of(Source(chunks)))
    finally:
        sys.settrace(old)
    assert [b for b, _ in result][:3] == ['a', (1, 2), ()]
    assert isinstance(result[3][0], ValueError)
    assert [o for _, o in result] == [0, 1, 2, 3]

async def test_cancelled_while_waiting() -> None:
    """Cancelling the loop while it waits for a chunk raises CancelledError."""
    started = asyncio.Event()

    async def slow() -> AsyncGenerator[list[MessageCtx], None]:
        yield [msg(0, 0)]
        started.set()
        await asyncio.sleep(10)
        yield [msg(1, 1)]

    async def consume() -> list[object]:
        return [body async for body in Bodies(slow())]

    task = asyncio.create_task(consume())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
