"""
Windows of messages (:py:mod:`rbfly.streams.subscriptions.windows`) over
a reader's progress fed by a fake source: merging and splitting chunks,
the deadline, what is reported processed and when, a hand-off's cut, the
credit a chunk holds, the end, an error, and cancelled calls.
"""

import asyncio
import typing as tp

import pytest

from rbfly.amqp import MessageCtx
from rbfly.streams import Offset
from rbfly.streams.subscriptions.progress import Progress
from rbfly.streams.subscriptions.subscription import Chunk
from rbfly.streams.subscriptions.windows import Windows

from ._source import ListSource

def chunk(stream: str, first: int, n: int) -> Chunk:
    c = Chunk((), stream, first)
    for i in range(first, first + n):
        m = MessageCtx(i)
        m.stream_offset = i
        c.append(m)
    return c

class Tracker:
    def __init__(self) -> None:
        self.processed_: list[tuple[str, int, int]] = []
        self.closed = False
        self.committed = 0

    def attach(self, pull: object) -> None:
        pass

    def processed(self, stream: str, offset: int, count: int = 1) -> None:
        self.processed_.append((stream, offset, count))

    def batch_limit(self) -> int:
        return 1

    def store(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    async def commit(self, stream: str | None = None) -> None:
        self.committed += 1

def windows(
        items: list[Chunk | Exception], n: int, tracker: Tracker | None = None,
        max_wait: float | None = None, finite: bool = True,
) -> tuple[Windows, Progress, ListSource]:
    source = ListSource(items, finite=finite)
    progress = Progress(source, tp.cast(tp.Any, tracker))
    return Windows(progress, n, max_wait), progress, source

def offsets(window: list[MessageCtx]) -> list[int]:
    return [m.stream_offset for m in window]

async def test_merge_and_split() -> None:
    w, _, source = windows(
        [chunk('s', 0, 3), chunk('s', 3, 3), chunk('s', 6, 10), chunk('s', 16, 1)], 4,
    )
    got = [offsets(x) async for x in w]
    assert got == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15], [16]]
    assert w.finished and source.ended

async def test_deadline_ends_window() -> None:
    """The window's deadline passing hands out what was collected, possibly nothing."""
    w, _, source = windows([chunk('s', 0, 2)], 100, max_wait=0.01, finite=False)
    assert offsets(await w.getmany()) == [0, 1]
    assert await w.getmany() == []
    source.put(chunk('s', 2, 2))
    assert offsets(await w.getmany()) == [2, 3]
    await w.aclose()

async def test_processed_when_next_asked() -> None:
    """A window is reported when the next is asked for, by stream; the last at the end."""
    tracker = Tracker()
    w, progress, _ = windows([chunk('a', 0, 3), chunk('b', 0, 2), chunk('a', 3, 4)], 4, tracker)
    first = await w.getmany()
    assert offsets(first) == [0, 1, 2, 0] and tracker.processed_ == []
    assert progress.holds('a') and progress.holds('b')
    second = await w.getmany()
    assert tracker.processed_ == [('a', 2, 3), ('b', 0, 1)]
    assert offsets(second) == [1, 3, 4, 5] and progress.holds('a') and progress.holds('b')
    await w.aclose()
    assert tracker.processed_[2:] == [('b', 1, 1), ('a', 5, 3)]
    assert tracker.closed and tracker.committed == 1
    assert not progress.holds('a') and not progress.holds('b')

async def test_cut() -> None:
    """A hand-off drops the stream's messages not handed out; the window held stays."""
    w, progress, _ = windows([chunk('a', 0, 6), chunk('b', 0, 2)], 4)
    assert offsets(await w.getmany()) == [0, 1, 2, 3]
    progress.cut('a')  # 4, 5 are the next member's
    assert offsets(await w.getmany()) == [0, 1]

async def test_released_waits_for_next_window() -> None:
    w, progress, _ = windows([chunk('a', 0, 6)], 4)
    await w.getmany()
    waiting = asyncio.ensure_future(progress.released('a', 10))
    await asyncio.sleep(0)
    assert not waiting.done()
    assert await progress.released('b', 10)  # not held
    await w.getmany()
    with pytest.raises(StopAsyncIteration):  # the end: the window held is processed
        await w.getmany()
    assert await waiting

async def test_credit_released_with_its_message() -> None:
    released = []
    c = chunk('a', 0, 10)
    c.release = lambda: released.append(1)
    c.release_at = 7
    w, _, _ = windows([c], 4)
    await w.getmany()  # 0-3
    await w.getmany()  # 4-7: 0-3 processed
    assert released == []
    await w.getmany()  # 8, 9: 4-7 processed, the 7th message among them
    assert released == [1]

async def test_error_after_window() -> None:
    """An error comes after the messages received before it, and ends the subscription."""
    w, _, source = windows([chunk('s', 0, 2), ValueError('bad chunk')], 10)
    assert offsets(await w.getmany()) == [0, 1]
    with pytest.raises(ValueError, match='bad chunk'):
        await w.getmany()
    assert source.ended

def test_bad_bounds() -> None:
    with pytest.raises(ValueError, match='max_messages'):
        windows([], 0)
    with pytest.raises(ValueError, match='max_wait'):
        windows([], 1, max_wait=-1)

async def test_bound_of_the_wait() -> None:
    """
    A wait that timed out ended at the idle timeout only when that bound
    came first as the wait was computed, whatever the clock reads after:
    a timer may fire before the loop's clock reaches its time (uvloop's
    count whole milliseconds).
    """
    now = asyncio.get_running_loop().time()
    progress = Progress(ListSource())
    wait, by_idle = progress._wait(now, now + 10)
    assert wait == 10 and not by_idle  # the deadline
    assert progress._wait(now, None) == (None, False)  # no bound: no timeout

    progress = Progress(ListSource(), timeout=5)  # an idle timeout before the deadline
    assert progress._wait(now, now + 10) == (5, True)
    assert progress._wait(now + 4, now + 5) == (1, True)  # counted from the first wait
    assert progress._wait(now + 4, now + 4.5) == (0.5, False)  # now the deadline first

async def test_idle_timeout_across_windows() -> None:
    """An idle timeout raises after that long without a chunk, across empty windows."""
    source = ListSource([chunk('s', 0, 1)], finite=False)
    w = Windows(Progress(source, timeout=0.05), 10, 0.01)
    assert offsets(await w.getmany()) == [0]
    with pytest.raises(TimeoutError):
        while True:
            assert await w.getmany() == []
    assert source.ended

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
    w, progress, _ = windows([chunk('s', 0, 2), chunk('s', 2, 2)], 2, tracker)
    with pytest.raises(RuntimeError, match='sink down'):
        async with w:
            async for window in w:
                if offsets(window) == [2, 3]:
                    raise RuntimeError('sink down')
    assert tracker.processed_ == [('s', 1, 2)]
    assert tracker.closed and tracker.committed == 1 and not progress.holds('s')

async def test_break_counts_window() -> None:
    """A ``break`` out of the loop counts the window, as for messages."""
    tracker = Tracker()
    w, _, _ = windows([chunk('s', 0, 2), chunk('s', 2, 2)], 2, tracker)
    async with w:
        async for _ in w:
            break
    assert tracker.processed_ == [('s', 1, 2)] and tracker.committed == 1

async def test_cancelled_getmany_goes_on() -> None:
    """
    A getmany cancelled while it waits (``asyncio.timeout`` around it)
    ends nothing: the next call gets the messages taken before, and the
    chunk waited for; after the end, getmany raises.
    """
    w, _, source = windows([chunk('s', 0, 2)], 4, finite=False)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await w.getmany()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await w.getmany()
    source.put(chunk('s', 2, 3))
    assert offsets(await w.getmany()) == [0, 1, 2, 3]  # at most 4, with what was taken
    source.finite = True
    assert offsets(await w.getmany()) == [4]
    with pytest.raises(StopAsyncIteration):
        await w.getmany()
    with pytest.raises(StopAsyncIteration):
        await w.getmany()

async def test_cut_chunk_taken_not_handed_out() -> None:
    """
    A hand-off's cut drops the chunks of its stream taken and not handed
    out yet (those of a cancelled getmany): the next consumer processes
    them, not this one; another stream's stay.
    """
    w, progress, source = windows([chunk('a', 0, 3), chunk('b', 0, 2)], 10, finite=False)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await w.getmany()  # takes both, waits for more
    assert progress.queued == 5
    progress.cut('a')
    assert progress.queued == 2
    source.finite = True
    assert offsets(await w.getmany()) == [0, 1]  # of 'b' only

async def test_aclose_after_cancelled_getmany() -> None:
    """Closing after a cancelled call ends the subscription."""
    w, _, source = windows([], 4, finite=False)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await w.getmany()
    await w.aclose()
    assert source.ended
    with pytest.raises(StopAsyncIteration):
        await w.getmany()

async def test_aclose_from_another_task_wakes_getmany() -> None:
    """A getmany waiting for messages ends when another task closes the iteration."""
    w, _, source = windows([], 4, finite=False)
    waiting = asyncio.ensure_future(w.getmany())
    await asyncio.sleep(0.01)
    await w.aclose()
    async with asyncio.timeout(5):
        with pytest.raises(StopAsyncIteration):
            await waiting
    assert source.ended

async def test_manual_credit_of_a_cut_chunk() -> None:
    """A chunk the application was to release itself, cut before it saw it: released."""
    released: list[str] = []
    w, progress, _ = windows([chunk('a', 0, 2), chunk('a', 2, 2)], 2, finite=False)
    assert offsets(await w.getmany()) == [0, 1]
    await asyncio.sleep(0)
    queued = chunk('a', 4, 2)
    queued.release = lambda: released.append('a')   # ManualCredit: release_at -1
    progress.queue(queued)
    progress.cut('a')
    assert released == ['a']
    progress.cut('a')
    assert released == ['a']   # once
    await w.aclose()
