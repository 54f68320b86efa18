"""
The compiled message iterator of ``client.subscribe()`` (no broker: the
chunks come from a generator).
"""

import asyncio
import sys
import typing as tp
from collections.abc import AsyncGenerator, AsyncIterator

import pytest

from rbfly.streams import get_message_ctx
from rbfly.streams.protocol.commands import StoreOffset
from rbfly.streams.subscriptions._bodies import Bodies
from rbfly.streams.subscriptions.progress import Progress
from rbfly.streams.subscriptions.subscription import Chunk
from rbfly.streams.subscriptions.tracking import OffsetTracker

from ._source import ListSource, chunk, msg

def bodies_of(source: ListSource, tracker: OffsetTracker | None = None) -> Bodies:
    return Bodies(Progress(source, tracker))

async def collect(it: AsyncIterator[object]) -> list[tuple[object, int]]:
    return [(body, get_message_ctx().stream_offset) async for body in it]

async def test_bodies_and_contexts() -> None:
    """Every body in order, each with its message context; empty chunks skipped."""
    chunks = [[msg('a', 0), msg(b'b', 1)], [], [msg((1, 2), 2)], [msg(None, 3)]]
    source = ListSource(chunks)
    assert await collect(bodies_of(source)) == [('a', 0), (b'b', 1), ((1, 2), 2), (None, 3)]
    assert source.ended

async def test_error_of_chunks() -> None:
    """An error of the subscription reaches the loop after the messages before it."""
    source = ListSource([[msg(1, 0)], ConnectionError('lost')])
    seen = []
    with pytest.raises(ConnectionError, match='lost'):
        async for body in bodies_of(source):
            seen.append(body)
    assert seen == [1]
    assert source.ended

async def test_task_keeps_its_message() -> None:
    """A task created while a message is processed keeps that message's context."""
    async def offset_later() -> int:
        await asyncio.sleep(0.01)
        return get_message_ctx().stream_offset

    tasks = []
    async for _ in bodies_of(ListSource([[msg(i, i) for i in range(10)]])):
        tasks.append(asyncio.create_task(offset_later()))
    assert await asyncio.gather(*tasks) == list(range(10))

async def test_async_generator_api() -> None:
    """asend(None), aclose() and athrow() as an async generator's; it is one."""
    source = ListSource([[msg(i, i) for i in range(5)]])
    it = bodies_of(source)
    assert isinstance(it, AsyncGenerator)
    assert it.__aiter__() is it
    assert await it.asend(None) == 0
    assert await anext(it) == 1
    assert await asyncio.wait_for(it.__anext__(), 1) == 2   # awaited through __await__
    with pytest.raises(TypeError, match='can only send None'):
        await it.asend(1)  # type: ignore[arg-type]
    await it.aclose()
    assert source.ended
    assert await anext(it, 'end') == 'end'

    source = ListSource([[msg(1, 0)]])
    it = bodies_of(source)
    assert await anext(it) == 1
    with pytest.raises(KeyError):
        await it.athrow(KeyError('x'))
    assert source.ended

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
        result = await collect(bodies_of(ListSource(chunks)))
    finally:
        sys.settrace(old)
    assert [b for b, _ in result][:3] == ['a', (1, 2), ()]
    assert isinstance(result[3][0], ValueError)
    assert [o for _, o in result] == [0, 1, 2, 3]

async def test_cancelled_while_waiting() -> None:
    """
    Cancelling the loop while it waits for a chunk raises CancelledError;
    the subscription goes on: the next call gets the next message.
    """
    source = ListSource([[msg(0, 0)]], finite=False)
    it = bodies_of(source)
    assert await anext(it) == 0
    task = asyncio.create_task(anext(it))
    await asyncio.sleep(0)
    assert source.waits == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not source.ended
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await anext(it)
    source.put(chunk('s', range(1, 3)))
    assert [await anext(it), await anext(it)] == [1, 2]
    await it.aclose()
    assert source.ended

async def test_dropped_ends() -> None:
    """An iterator dropped (a break out of the loop) ends the subscription, by a task."""
    source = ListSource([[msg(0, 0), msg(1, 1)]], finite=False)
    async for _ in bodies_of(source):
        break
    assert not source.ended
    await asyncio.sleep(0)
    assert source.ended

#
# automatic offset tracking
#

class Stored:
    """A connection that records the offsets stored (StoreOffset has no answer)."""
    is_open = True

    def __init__(self) -> None:
        self.offsets: list[tuple[str, int]] = []

    def send(self, command: StoreOffset) -> None:
        self.offsets.append((command.stream, command.offset))

def tracked(chunks: list[Chunk], every: int, interval: float = 60) -> tuple[Bodies, Stored]:
    conn = Stored()
    tracker = OffsetTracker(lambda: tp.cast(tp.Any, conn), 'app', every, interval)
    return bodies_of(ListSource(chunks), tracker), conn

async def test_tracking_every() -> None:
    """
    Every ``every`` processed messages (a message is processed when the next
    one is asked for) the last one's offset is stored, within chunks and
    across them, and at the end the last one handed out.
    """
    it, conn = tracked([chunk('s', range(0, 7)), chunk('s', range(7, 25))], every=5)
    seen = []
    async for body in it:
        seen.append(body)
        if body == 5:   # 0..4 processed
            assert conn.offsets == [('s', 4)]
        if body == 16:
            assert conn.offsets == [('s', 4), ('s', 9), ('s', 14)]
    assert seen == list(range(25))
    assert conn.offsets == [('s', 4), ('s', 9), ('s', 14), ('s', 19), ('s', 24)]

async def test_tracking_break_and_aclose() -> None:
    """A loop left with break stores the last message handed out, with aclose() or without."""
    it, conn = tracked([chunk('s', range(10))], every=100)
    async for body in it:
        if body == 3:
            break
    await it.aclose()
    assert conn.offsets == [('s', 3)]

    it, conn = tracked([chunk('s', range(10))], every=100)
    async for body in it:
        if body == 6:
            break
    del it   # dropped: as an async generator's finalizer would
    assert conn.offsets == [('s', 6)]

async def test_tracking_interval() -> None:
    """A processed message not stored yet is stored ``interval`` seconds later."""
    source = ListSource([chunk('s', range(3))], finite=False)
    conn = Stored()
    tracker = OffsetTracker(lambda: tp.cast(tp.Any, conn), 'app', 1000, 0.05)
    it = bodies_of(source, tracker)
    assert [await anext(it) for _ in range(3)] == [0, 1, 2]
    waiting = asyncio.create_task(anext(it))   # message 2 processed
    await asyncio.sleep(0.2)
    assert conn.offsets == [('s', 2)]
    source.put(chunk('s', range(3, 5)))
    assert await waiting == 3
    await it.aclose()
    assert conn.offsets == [('s', 2), ('s', 3)]

async def test_tracking_partitions() -> None:
    """Chunks of several streams (a super stream's partitions): each stream's own offset."""
    it, conn = tracked([chunk('p0', range(4)), chunk('p1', range(2)), chunk('p0', range(4, 6))],
                       every=1000)
    assert [b async for b in it] == [0, 1, 2, 3, 0, 1, 4, 5]
    assert sorted(conn.offsets) == [('p0', 5), ('p1', 1)]

async def test_tracking_error_stores() -> None:
    """A subscription that fails stores the last message handed out."""
    source = ListSource([chunk('s', range(3)), ConnectionError('lost')])
    conn = Stored()
    tracker = OffsetTracker(lambda: tp.cast(tp.Any, conn), 'app', 1000, 60)
    with pytest.raises(ConnectionError):
        async for _ in bodies_of(source, tracker):
            pass
    assert conn.offsets == [('s', 2)]

async def test_hand_back_mid_chunk() -> None:
    """
    A message handed back is handed out again next, and counts as
    processed only then: the end stores the one before it, and no message
    is counted twice (every=2 stores at 1, 3 as without the hand-back).
    """
    it, conn = tracked([chunk('s', range(6))], every=2)
    assert [await anext(it) for _ in range(3)] == [0, 1, 2]   # 0, 1 processed
    assert conn.offsets == [('s', 1)]
    it.hand_back()
    it.hand_back()   # only the last one goes back, once
    assert [await anext(it) for _ in range(2)] == [2, 3]      # 2 processed
    assert get_message_ctx().stream_offset == 3
    assert conn.offsets == [('s', 1)]
    assert await anext(it) == 4   # 3 processed: 2 since the store
    assert conn.offsets == [('s', 1), ('s', 3)]
    it.hand_back()
    await it.aclose()
    assert conn.offsets == [('s', 1), ('s', 3)]

async def test_hand_back_first_of_chunk() -> None:
    """The first message of a chunk handed back: the end stores the previous chunk's last."""
    it, conn = tracked([chunk('s', range(2)), chunk('s', range(2, 4))], every=100)
    assert [await anext(it) for _ in range(3)] == [0, 1, 2]
    it.hand_back()
    await it.aclose()
    assert conn.offsets == [('s', 1)]

    it, conn = tracked([chunk('s', range(2)), chunk('s', range(2, 4))], every=100)
    assert [await anext(it) for _ in range(3)] == [0, 1, 2]
    it.hand_back()
    assert [b async for b in it] == [2, 3]
    assert conn.offsets == [('s', 3)]

async def test_hand_back_release() -> None:
    """A flow strategy's credit is given back at the same message after a hand-back."""
    released: list[int] = []
    seen: list[object] = []
    c = chunk('s', range(6))
    c.release = lambda: released.append(len(seen))
    c.release_at = 4
    it = bodies_of(ListSource([c]))
    seen.extend([await anext(it) for _ in range(3)])
    it.hand_back()
    seen.append(await anext(it))
    assert seen == [0, 1, 2, 2] and not released
    seen.append(await anext(it))   # message 3: not yet
    assert not released
    seen.append(await anext(it))   # message 4 asked for: 4 processed
    assert released == [5]
