"""
Windows of messages (:py:mod:`rbfly.streams.subscriptions.windows`) over
a fake chunk generator: merging and splitting chunks, the deadline's
empty chunks, what is reported processed and when, a hand-off's cut, the
credit a chunk holds, the end and an error.
"""

import asyncio
import typing as tp
from collections.abc import AsyncGenerator

import pytest

from rbfly.amqp import MessageCtx
from rbfly.streams import Offset
from rbfly.streams.subscriptions.subscription import Chunk
from rbfly.streams.subscriptions.windows import Pace, WindowHolding, Windows

def chunk(stream: str, first: int, n: int) -> Chunk:
    c = Chunk()
    for i in range(first, first + n):
        m = MessageCtx(i)
        m.stream_offset = i
        c.append(m)
    c.stream = stream
    c.first_offset = first
    return c

class Tracker:
    def __init__(self) -> None:
        self.processed_: list[tuple[str, int, int]] = []
        self.closed = False
        self.committed = 0

    def processed(self, stream: str, offset: int, count: int = 1) -> None:
        self.processed_.append((stream, offset, count))

    def close(self) -> None:
        self.closed = True

    async def commit(self, stream: str | None = None) -> None:
        self.committed += 1

async def gen(items: list[Chunk | Exception]) -> AsyncGenerator[Chunk, None]:
    for item in items:
        if isinstance(item, Exception):
            raise item
        yield item

def windows(
        items: list[Chunk | Exception], n: int, tracker: Tracker | None = None,
) -> tuple[Windows, WindowHolding]:
    holding = WindowHolding()
    w = Windows(gen(items), tp.cast(tp.Any, tracker), holding, Pace(), n, None)
    return w, holding

def offsets(window: list[MessageCtx]) -> list[int]:
    return [m.stream_offset for m in window]

async def test_merge_and_split() -> None:
    w, _ = windows([chunk('s', 0, 3), chunk('s', 3, 3), chunk('s', 6, 10), chunk('s', 16, 1)], 4)
    got = [offsets(x) async for x in w]
    assert got == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15], [16]]
    assert w.finished

async def test_tick_ends_window() -> None:
    """An empty chunk (the deadline passed) hands out what was collected."""
    w, _ = windows([chunk('s', 0, 2), Chunk(), chunk('s', 2, 2)], 100)
    assert offsets(await w.getmany()) == [0, 1]
    assert offsets(await w.getmany()) == [2, 3]

async def test_processed_when_next_asked() -> None:
    """A window is reported when the next is asked for, by stream; the last at the end."""
    tracker = Tracker()
    w, holding = windows([chunk('a', 0, 3), chunk('b', 0, 2), chunk('a', 3, 4)], 4, tracker)
    first = await w.getmany()
    assert offsets(first) == [0, 1, 2, 0] and tracker.processed_ == []
    assert holding.held == {'a', 'b'}
    second = await w.getmany()
    assert tracker.processed_ == [('a', 2, 3), ('b', 0, 1)]
    assert offsets(second) == [1, 3, 4, 5] and holding.held == {'a', 'b'}
    await w.aclose()
    assert tracker.processed_[2:] == [('b', 1, 1), ('a', 5, 3)]
    assert tracker.closed and tracker.committed == 1 and holding.held == frozenset()

async def test_cut() -> None:
    """A hand-off drops the stream's messages not handed out; the window held stays."""
    w, holding = windows([chunk('a', 0, 6), chunk('b', 0, 2)], 4)
    assert offsets(await w.getmany()) == [0, 1, 2, 3]
    holding.cut_off('a')  # 4, 5 are the next member's
    assert offsets(await w.getmany()) == [0, 1]

async def test_released_waits_for_next_window() -> None:
    w, holding = windows([chunk('a', 0, 6)], 4)
    await w.getmany()
    waiting = asyncio.ensure_future(holding.released('a', 10))
    await asyncio.sleep(0)
    assert not waiting.done()
    assert await holding.released('b', 10)  # not held
    await w.getmany()
    with pytest.raises(StopAsyncIteration):  # the end: the window held is processed
        await w.getmany()
    assert await waiting

async def test_credit_released_with_its_message() -> None:
    released = []
    c = chunk('a', 0, 10)
    c.release = lambda: released.append(1)
    c.release_at = 7
    w, _ = windows([c], 4)
    await w.getmany()  # 0-3
    await w.getmany()  # 4-7: 0-3 processed
    assert released == []
    await w.getmany()  # 8, 9: 4-7 processed, the 7th message among them
    assert released == [1]

async def test_error_after_window() -> None:
    """An error comes after the messages received before it."""
    w, _ = windows([chunk('s', 0, 2), ValueError('bad chunk')], 10)
    assert offsets(await w.getmany()) == [0, 1]
    with pytest.raises(ValueError, match='bad chunk'):
        await w.getmany()

def test_bad_bounds() -> None:
    with pytest.raises(ValueError, match='max_messages'):
        windows([], 0)
    with pytest.raises(ValueError, match='max_wait'):
        Windows(gen([]), None, WindowHolding(), Pace(), 1, -1)

async def test_pace_bound_of_the_wait() -> None:
    """
    A wait that timed out ended at the idle timeout only when that bound
    came first as the wait was computed, whatever the clock reads after:
    a timer may fire before the loop's clock reaches its time (uvloop's
    count whole milliseconds), and a getmany cancelled meanwhile clears
    the deadline.
    """
    now = asyncio.get_running_loop().time()
    pace = Pace()
    pace.start(None)
    pace.deadline = now + 10
    wait = pace.wait()
    assert wait is not None and 9 < wait <= 10
    assert not pace.idle()  # the deadline, the clock short of it
    pace.deadline = None
    assert not pace.idle()
    assert pace.wait() is None  # no bound: no timeout

    pace = Pace()
    pace.start(5)  # an idle timeout before the deadline
    pace.deadline = now + 10
    wait = pace.wait()
    assert wait is not None and wait <= 5
    assert pace.idle()
    pace.deadline = now + 1  # now the deadline first
    pace.wait()
    assert not pace.idle()
    pace.deadline = None  # the idle timeout alone
    pace.wait()
    assert pace.idle()

def test_from_end() -> None:
    assert Offset.from_end(0).value == 0
    assert str(Offset.from_end(7)) == 'offset=from_end(7)'
    for bad in (-1, 2 ** 64, 1.5, True, '3'):
        with pytest.raises(ValueError, match='count of messages'):
            Offset.from_end(bad)  # type: ignore[arg-type]

async def test_raise_in_block_does_not_count_window() -> None:
    """
    A window whose processing raised is neither reported nor committed
    (it is read again after a restart); the windows before it are.
    """
    tracker = Tracker()
    w, holding = windows([chunk('s', 0, 2), chunk('s', 2, 2)], 2, tracker)
    with pytest.raises(RuntimeError, match='sink down'):
        async with w:
            async for window in w:
                if offsets(window) == [2, 3]:
                    raise RuntimeError('sink down')
    assert tracker.processed_ == [('s', 1, 2)]
    assert tracker.closed and tracker.committed == 1 and holding.held == frozenset()

async def test_break_counts_window() -> None:
    """A ``break`` out of the loop counts the window, as for messages."""
    tracker = Tracker()
    w, _ = windows([chunk('s', 0, 2), chunk('s', 2, 2)], 2, tracker)
    async with w:
        async for _ in w:
            break
    assert tracker.processed_ == [('s', 1, 2)] and tracker.committed == 1

async def queued(queue: asyncio.Queue[Chunk | None]) -> AsyncGenerator[Chunk, None]:
    while (item := await queue.get()) is not None:
        yield item

async def test_cancelled_getmany_goes_on() -> None:
    """
    A getmany cancelled while it waits (``asyncio.timeout`` around it)
    ends nothing: the next call gets the chunk waited for, after the
    messages collected before; after the end, getmany raises.
    """
    queue: asyncio.Queue[Chunk | None] = asyncio.Queue()
    w = Windows(queued(queue), None, WindowHolding(), Pace(), 4, None)
    queue.put_nowait(chunk('s', 0, 2))
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await w.getmany()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await w.getmany()
    queue.put_nowait(chunk('s', 2, 3))
    assert offsets(await w.getmany()) == [0, 1, 2, 3]  # at most 4, with what was collected
    queue.put_nowait(None)
    assert offsets(await w.getmany()) == [4]
    with pytest.raises(StopAsyncIteration):
        await w.getmany()
    with pytest.raises(StopAsyncIteration):
        await w.getmany()

async def test_cut_chunk_fetched_not_taken() -> None:
    """
    A hand-off's cut drops a chunk of its stream already fetched and not
    taken into a window yet (the fetch of a cancelled getmany, or one
    whose call has not resumed): the next consumer processes it, not this one.
    """
    queue: asyncio.Queue[Chunk | None] = asyncio.Queue()
    w = Windows(queued(queue), None, WindowHolding(), Pace(), 10, None)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await w.getmany()  # its fetch waits on
    queue.put_nowait(chunk('a', 0, 3))
    pending = w._pending
    assert pending is not None
    await asyncio.wait((pending,))  # fetched, not taken
    w._cut('a')
    w._cut('b')  # (of another stream: kept)
    queue.put_nowait(chunk('b', 0, 2))
    queue.put_nowait(None)
    assert offsets(await w.getmany()) == [0, 1]  # of 'b' only

async def test_aclose_after_cancelled_getmany() -> None:
    """Closing with a cancelled call's fetch pending ends the fetch and the generator."""
    queue: asyncio.Queue[Chunk | None] = asyncio.Queue()
    chunks = queued(queue)
    w = Windows(chunks, None, WindowHolding(), Pace(), 4, None)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await w.getmany()
    await w.aclose()
    with pytest.raises(StopAsyncIteration):
        await anext(chunks)
    with pytest.raises(StopAsyncIteration):
        await w.getmany()
