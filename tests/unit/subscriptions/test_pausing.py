"""
Pausing, resuming and seeking a stream of a read (the progress's
``pause``, ``resume``, ``seek``; :py:mod:`rbfly.streams.subscriptions.pausing`)
through the views over a fake source: what is held back and handed out
after, in stream order and exactly once; what is reported processed; the
credit a chunk holds; a hand-off's cut; the errors.
"""

import asyncio
import typing as tp

import pytest

from rbfly.amqp import MessageCtx, get_message_ctx
from rbfly.error import MessageDecodeError
from rbfly.streams import Offset
from rbfly.streams.error import StreamsError
from rbfly.streams.subscriptions._bodies import Bodies
from rbfly.streams.subscriptions.chunks import Chunks
from rbfly.streams.subscriptions.pausing import rest_of
from rbfly.streams.subscriptions.progress import Progress
from rbfly.streams.subscriptions.subscription import Chunk
from rbfly.streams.subscriptions.windows import Windows

from ._source import ListSource, chunk

class Tracker:
    """Records what the progress reports (processed, seeks)."""
    def __init__(self) -> None:
        self.processed_: list[tuple[str, int]] = []
        self.seeks: list[tuple[str, int | None]] = []

    def attach(self, pull: object) -> None:
        pass

    def processed(self, stream: str, offset: int, count: int = 1) -> None:
        self.processed_.append((stream, offset))

    def batch_limit(self) -> int:
        return 1

    def store(self) -> None:
        pass

    def seek(self, stream: str, start: int | None) -> None:
        self.seeks.append((stream, start))

    def close(self) -> None:
        pass

    async def commit(self, stream: str | None = None) -> None:
        pass

def progress(
        items: list[Chunk | Exception], finite: bool = True, tracker: Tracker | None = None,
) -> tuple[Progress, ListSource]:
    source = ListSource(items, finite=finite)
    return Progress(source, tp.cast(tp.Any, tracker)), source

async def bodies(b: Bodies, n: int) -> list[tuple[str, int]]:
    got = []
    for _ in range(n):
        await anext(b)
        ctx = get_message_ctx()
        got.append((str(ctx.stream), ctx.stream_offset))
    return got

def credit(c: Chunk, at: int) -> list[int]:
    """The chunk holds a flow strategy's credit, given back as message ``at`` is asked for."""
    released: list[int] = []
    c.release = lambda: released.append(1)
    c.release_at = at
    return released

async def test_pause_holds_back_and_resume_hands_out_in_order() -> None:
    """Paused mid-chunk, a stream's rest waits while the other goes on; resumed, it comes first."""
    p, _ = progress([chunk('a', range(0, 4)), chunk('b', range(0, 3)),
                          chunk('a', range(4, 6))])
    b = Bodies(p)
    assert await bodies(b, 1) == [('a', 0)]
    b.pause('a')
    assert b.paused() == frozenset({'a'})
    assert await bodies(b, 3) == [('b', 0), ('b', 1), ('b', 2)]
    b.resume('a')
    assert b.paused() == frozenset()
    assert await bodies(b, 5) == [('a', i) for i in range(1, 6)]
    with pytest.raises(StopAsyncIteration):
        await anext(b)

async def test_paused_stream_waits_for_resume() -> None:
    """Every stream paused: the take waits, and a resume wakes it."""
    p, _ = progress([chunk('a', range(0, 2))], finite=False)
    b = Bodies(p)
    assert await bodies(b, 1) == [('a', 0)]
    b.pause('a')
    task = asyncio.ensure_future(bodies(b, 1))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not task.done()
    b.resume('a')
    async with asyncio.timeout(5):
        assert await task == [('a', 1)]
    await b.aclose()

async def test_pause_tracking_exact() -> None:
    """
    The message held when pausing counts when the next is asked for; the
    held ones, as they are handed out.
    """
    tracker = Tracker()
    p, _ = progress([chunk('a', range(0, 3)), chunk('b', range(0, 1))], tracker=tracker)
    b = Bodies(p)
    await bodies(b, 1)
    b.pause('a')
    assert await bodies(b, 1) == [('b', 0)]
    assert tracker.processed_ == [('a', 0)]
    b.resume('a')
    assert await bodies(b, 2) == [('a', 1), ('a', 2)]
    await b.aclose()
    assert tracker.processed_ == [('a', 0), ('b', 0), ('a', 1), ('a', 2)]

async def test_windows_pause_mid_chunk() -> None:
    """A window iterator's queued chunk cut in the middle: its rest is held, then handed out."""
    p, _ = progress([chunk('a', range(0, 4)), chunk('b', range(0, 2))])
    w = Windows(p, 2, None)
    assert [m.stream_offset for m in await w.getmany()] == [0, 1]
    w.pause('a')
    got = await w.getmany()
    assert [(m.stream, m.stream_offset) for m in got] == [('b', 0), ('b', 1)]
    w.resume('a')
    got = await w.getmany()
    assert [(m.stream, m.stream_offset) for m in got] == [('a', 2), ('a', 3)]
    await w.aclose()

async def test_chunks_pause() -> None:
    """The chunk iterator: a paused stream's chunks wait in the source."""
    p, _ = progress([chunk('a', range(0, 2)), chunk('a', range(2, 4)), chunk('b', range(0, 2))])
    c = Chunks(p)
    assert (await anext(c)).stream == 'a'
    c.pause('a')
    assert (await anext(c)).stream == 'b'
    c.resume('a')
    assert (await anext(c)).first_offset == 2
    await c.aclose()

async def test_handlers_queue_paused() -> None:
    """Messages queued for concurrent handlers: a paused stream's are held back."""
    p, _ = progress([])
    p.queue(chunk('a', range(0, 3)))
    p.queue(chunk('b', range(0, 2)))
    item = p.next_message()
    assert item is not None and item[0].stream_offset == 0 and item[1] is None
    p.pause('a')
    assert p.queued == 2
    got = [p.next_message() for _ in range(2)]
    assert [(m.stream, m.stream_offset) for m, _ in filter(None, got)] == [('b', 0), ('b', 1)]
    assert p.next_message() is None

async def test_credit_held_and_given_back() -> None:
    """A held chunk keeps its credit until processed; a cut gives it back at once."""
    a = chunk('a', range(0, 4))
    released = credit(a, 3)
    p, _ = progress([a, chunk('b', range(0, 1))], finite=False)
    b = Bodies(p)
    await bodies(b, 1)
    b.pause('a')
    await bodies(b, 1)
    assert released == []
    p.cut('a')  # a hand-off: the held messages are the next member's
    assert released == [1]
    b.resume('a')
    task = asyncio.ensure_future(anext(b))
    await asyncio.sleep(0)
    assert not task.done()  # nothing of 'a' left here
    task.cancel()
    await b.aclose()

def test_rest_of_moves_credit() -> None:
    c = chunk('a', range(10, 14))
    released = credit(c, 3)
    rest = rest_of(c, 2)
    assert [m.stream_offset for m in rest] == [12, 13] and rest.first_offset == 10
    assert c.release is None and rest.release_at == 1
    assert rest.release is not None
    rest.release()
    assert released == [1]
    c2 = chunk('a', range(0, 4))
    credit(c2, 1)
    assert rest_of(c2, 2).release is None  # given back with a message handed out before

async def test_seek_drops_what_was_taken() -> None:
    """A seek: the message held does not count; what was taken of the stream is dropped."""
    tracker = Tracker()
    p, source = progress([chunk('a', range(0, 4)), chunk('b', range(0, 2)),
                          chunk('a', range(4, 6))], finite=False, tracker=tracker)
    b = Bodies(p)
    assert await bodies(b, 2) == [('a', 0), ('a', 1)]
    await b.seek('a', 100)
    assert source.seeks == [('a', Offset.offset(100))]
    assert tracker.seeks == [('a', 100)]
    source.put(chunk('a', range(100, 102)))
    got = await bodies(b, 4)
    assert sorted(got) == [('a', 100), ('a', 101), ('b', 0), ('b', 1)]
    # message 1 was held at the seek: never reported processed
    assert ('a', 1) not in tracker.processed_
    await b.aclose()

async def test_seek_windows_and_paused() -> None:
    """Seeking a paused stream drops what is held of it, and gives the credit back."""
    a = chunk('a', range(0, 4))
    released = credit(a, 4)
    p, source = progress([a], finite=False)
    w = Windows(p, 2, 0)
    await w.getmany()
    w.pause('a')
    await w.seek('a', Offset.FIRST)
    assert released == [1]
    w.resume('a')
    source.put(chunk('a', range(0, 1)))
    assert [m.stream_offset for m in await w.getmany()] == [0]
    await w.aclose()

async def test_errors() -> None:
    p, _ = progress([chunk('a', range(0, 2))], finite=False)
    b = Bodies(p)
    with pytest.raises(ValueError, match='subscribe with offset='):
        await b.seek('a', 0)  # not started
    await bodies(b, 1)
    with pytest.raises(ValueError, match="not read here: 'x'; the streams read: 'a'"):
        b.pause('x')
    with pytest.raises(TypeError, match='name the streams'):
        b.pause()
    with pytest.raises(TypeError, match='an Offset or an int'):
        await b.seek('a', '5')  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r'0\.\.2'):
        await b.seek('a', -1)
    p.queue(chunk('a', range(5, 6)))
    item = p.next_message()
    assert item is not None and isinstance(item[0], MessageCtx)
    with pytest.raises(ValueError, match='in flight'):
        await p.seek('a', 0)
    await b.aclose()
    with pytest.raises(StreamsError, match='nothing to seek'):
        await b.seek('a', 0)

async def test_pause_again_before_take() -> None:
    """Paused, resumed and paused again before the next take: still held back."""
    p, _ = progress([chunk('a', range(0, 4)), chunk('b', range(0, 3))], finite=False)
    b = Bodies(p)
    await bodies(b, 1)
    b.pause('a')
    b.resume('a')
    b.pause('a')
    assert await bodies(b, 3) == [('b', 0), ('b', 1), ('b', 2)]
    b.resume('a')
    assert await bodies(b, 3) == [('a', 1), ('a', 2), ('a', 3)]
    await b.aclose()

async def test_end_waits_for_resume() -> None:
    """
    A read that ends (every subscription at its end) while it holds back
    messages of a paused stream ends only once they were handed out.
    """
    p, _ = progress([chunk('a', range(0, 4)), chunk('b', range(0, 2))])
    b = Bodies(p)
    await bodies(b, 1)
    b.pause('a')
    assert await bodies(b, 2) == [('b', 0), ('b', 1)]
    task = asyncio.ensure_future(bodies(b, 1))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not task.done()  # (not the end: 'a' 1-3 are held)
    b.resume('a')
    async with asyncio.timeout(5):
        assert await task == [('a', 1)]
    assert await bodies(b, 2) == [('a', 2), ('a', 3)]
    with pytest.raises(StopAsyncIteration):
        await anext(b)

def test_rest_keeps_decoding_errors() -> None:
    """The rest of a chunk cut by a pause keeps its messages' decoding errors."""
    c = chunk('a', range(0, 4))
    c.undecodable = {2: MessageDecodeError('bad', 0, 'a', 2)}
    assert rest_of(c, 1).undecodable == c.undecodable
