"""
Concurrent handlers (:py:mod:`rbfly.streams.subscriptions.handlers`) over
a reader's progress fed by a fake source: messages in flight at once, the
order per key, the offset committed (the one before the lowest message not
done), a handler's error, a cancelled run draining, and a hand-off's wait.
"""

import asyncio
import contextlib
import typing as tp

import pytest

from rbfly.amqp import MessageCtx
from rbfly.streams.protocol.commands import StoreOffset
from rbfly.streams.subscriptions.errors import DeadLetters, OnError, Send
from rbfly.streams.subscriptions.handlers import Handlers
from rbfly.streams.subscriptions.progress import Progress
from rbfly.streams.subscriptions.subscription import Chunk
from rbfly.streams.subscriptions.tracking import OffsetTracker

from ._source import ListSource

def chunk(stream: str, offsets: range) -> Chunk:
    c = Chunk((), stream, offsets.start)
    for i in offsets:
        m = MessageCtx(i)
        m.stream_offset = i
        m.stream = stream
        c.append(m)
    return c

class Stored:
    """A connection that records the offsets stored (StoreOffset has no answer)."""
    is_open = True

    def __init__(self) -> None:
        self.offsets: list[tuple[str, int]] = []

    def send(self, command: StoreOffset) -> None:
        self.offsets.append((command.stream, command.offset))

def tracked(source: ListSource, every: int = 1) -> tuple[Progress, Stored]:
    conn = Stored()
    tracker = OffsetTracker(lambda: tp.cast(tp.Any, conn), 'app', every, 60)
    return Progress(source, tracker), conn

async def settle() -> None:
    """Let the handlers and the progress run until they wait (turns of the loop, not a time)."""
    for _ in range(200):
        await asyncio.sleep(0)

async def test_concurrency() -> None:
    """Up to ``concurrency`` handlers wait at once; every message handled once."""
    seen: list[int] = []
    running = 0
    most = 0

    async def handler(msg: MessageCtx) -> None:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.01)
        running -= 1
        seen.append(msg.stream_offset)

    source = ListSource([chunk('s', range(0, 30)), chunk('s', range(30, 64))])
    count = await Handlers(Progress(source), handler, concurrency=8).run()
    assert count == 64 and sorted(seen) == list(range(64))
    assert most == 8
    assert source.ended

async def test_commit_is_below_lowest_not_done() -> None:
    """
    Handlers finishing out of order: the offset stored is the one before
    the lowest message not done, never one past a message in flight.
    """
    release: dict[int, asyncio.Event] = {i: asyncio.Event() for i in range(6)}

    async def handler(msg: MessageCtx) -> None:
        await release[msg.stream_offset].wait()

    source = ListSource([chunk('s', range(6))], finite=False)
    progress, conn = tracked(source)
    run = asyncio.ensure_future(Handlers(progress, handler, concurrency=6).run())
    await settle()
    assert progress.in_flight('s') == 6
    for i in (3, 1, 2):   # done out of order: 0 is not done
        release[i].set()
    await settle()
    assert conn.offsets == []
    release[0].set()      # 0..3 done
    await settle()
    assert conn.offsets == [('s', 3)]
    release[5].set()
    await settle()
    assert conn.offsets == [('s', 3)]
    release[4].set()
    await settle()
    assert conn.offsets == [('s', 3), ('s', 5)]
    source.finite = True
    source.put(chunk('s', range(6, 6)))
    assert await run == 6

async def test_order_per_key() -> None:
    """Messages of a key are handled one after the other, in stream order."""
    order: dict[int, list[int]] = {0: [], 1: [], 2: []}
    active: set[int] = set()

    async def handler(msg: MessageCtx) -> None:
        k = msg.stream_offset % 3
        assert k not in active  # one message of a key at a time
        active.add(k)
        await asyncio.sleep(0.001 * (3 - k))
        active.remove(k)
        order[k].append(msg.stream_offset)

    source = ListSource([chunk('s', range(30))])
    count = await Handlers(
        Progress(source), handler, concurrency=4, key=lambda m: m.stream_offset % 3,
    ).run()
    assert count == 30
    assert all(offsets == sorted(offsets) and len(offsets) == 10 for offsets in order.values())

async def test_error_ends_run() -> None:
    """A handler's error ends the run, raised; the failed message is not committed."""
    async def handler(msg: MessageCtx) -> None:
        if msg.stream_offset == 5:
            raise ValueError('bad order')

    source = ListSource([chunk('s', range(20))])
    progress, conn = tracked(source, every=100)
    with pytest.raises(ValueError, match='bad order'):
        await Handlers(progress, handler, concurrency=1).run()
    assert conn.offsets == [('s', 4)]
    assert source.ended

async def test_cancel_drains_in_flight() -> None:
    """A cancelled run waits for the handlers in flight, commits them, and ends."""
    started = asyncio.Event()
    done: list[int] = []

    async def handler(msg: MessageCtx) -> None:
        started.set()
        await asyncio.sleep(0.05)
        done.append(msg.stream_offset)

    source = ListSource([chunk('s', range(4))], finite=False)
    progress, conn = tracked(source, every=100)
    run = asyncio.ensure_future(Handlers(progress, handler, concurrency=4).run())
    await started.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert sorted(done) == [0, 1, 2, 3]
    assert conn.offsets == [('s', 3)]
    assert source.ended

async def test_hand_off_waits_for_in_flight() -> None:
    """A hand-off of a stream waits until its messages in flight are done."""
    gate = asyncio.Event()

    async def handler(msg: MessageCtx) -> None:
        await gate.wait()

    source = ListSource([chunk('a', range(3)), chunk('b', range(2))], finite=False)
    progress = Progress(source)
    run = asyncio.ensure_future(Handlers(progress, handler, concurrency=8).run())
    # (the handlers take their messages in a few turns of the loop: waited
    # for by turns, not by a time, which a loaded machine outlasted)
    for _ in range(1000):
        if progress.in_flight() == 5:
            break
        await asyncio.sleep(0)
    assert progress.in_flight() == 5, 'the handlers took {} of 5'.format(progress.in_flight())
    assert progress.holds('a') and progress.holds('b')
    waiting = asyncio.ensure_future(progress.released('a', 10))
    for _ in range(10):
        await asyncio.sleep(0)
    assert not waiting.done()
    gate.set()
    assert await waiting
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run

def test_bad_arguments() -> None:
    progress = Progress(ListSource())

    async def handler(msg: MessageCtx) -> None:
        pass

    with pytest.raises(ValueError, match=r'concurrency must be 1\.\.65535'):
        Handlers(progress, handler, concurrency=0)
    with pytest.raises(TypeError, match='handler must be'):
        Handlers(progress, tp.cast(tp.Any, 3))
    with pytest.raises(TypeError, match='key must be'):
        Handlers(progress, handler, key=tp.cast(tp.Any, 'x'))
    with pytest.raises(ValueError, match='drain_timeout'):
        Handlers(progress, handler, drain_timeout=0)

#
# errors as a policy
#

class Sent:
    """Dead-letter publishers: what each sent (awaited as if confirmed)."""
    def __init__(self) -> None:
        self.sent: dict[tuple[str, str], list[MessageCtx]] = {}
        self.closed = 0

    def open(self, stream: str, name: str) -> tp.AsyncContextManager[Send]:
        outer = self

        class Publisher:
            async def send(self, message: MessageCtx) -> None:
                await asyncio.sleep(0)
                outer.sent.setdefault((stream, name), []).append(message)

        @contextlib.asynccontextmanager
        async def cm() -> tp.AsyncIterator[Send]:
            try:
                yield Publisher()
            finally:
                outer.closed += 1

        return cm()

def failing(bad: set[int], fails: dict[int, int] | None = None) -> tp.Callable[
        [MessageCtx], tp.Awaitable[None]]:
    """A handler raising for the offsets in ``bad``; or ``fails[offset]`` times only."""
    counts: dict[int, int] = {}

    async def handler(msg: MessageCtx) -> None:
        o = msg.stream_offset
        counts[o] = counts.get(o, 0) + 1
        await asyncio.sleep(0.001 * (o % 3))
        if o in bad and (fails is None or counts[o] <= fails.get(o, 0)):
            raise ValueError('bad {}'.format(o))

    return handler

async def test_retries_then_handled() -> None:
    """A message failing twice is handled at the third attempt; counted."""
    source = ListSource([chunk('s', range(10))])
    progress, conn = tracked(source, every=100)
    handlers = Handlers(progress, failing({4}, {4: 2}), concurrency=4,
                        on_error=OnError(retries=2, backoff=0))
    assert await handlers.run() == 10
    assert (handlers.retried, handlers.skipped, handlers.dead_lettered) == (2, 0, 0)
    assert conn.offsets == [('s', 9)]

async def test_skip() -> None:
    """Retries failed: the message is skipped, counted, and the commit goes past it."""
    source = ListSource([chunk('s', range(10))])
    progress, conn = tracked(source, every=100)
    handlers = Handlers(progress, failing({3, 7}), concurrency=4,
                        on_error=OnError(retries=1, backoff=0, then='skip'))
    assert await handlers.run() == 8
    assert (handlers.retried, handlers.skipped) == (2, 2)
    assert conn.offsets == [('s', 9)]

async def test_dead_letter_in_order() -> None:
    """
    Dead letters go out in stream order (their publishing ids grow), with
    the error, the source stream and offset; the commit passes them once
    sent.
    """
    sent = Sent()
    source = ListSource([chunk('p-0', range(12)), chunk('p-1', range(5))])
    progress, conn = tracked(source, every=100)
    dead = DeadLetters(sent.open, 'dlq', 'billing')
    handlers = Handlers(progress, failing({9, 2, 5, 3}), concurrency=6,
                        on_error=OnError(then='dead-letter', dead_letter='dlq'),
                        dead_letters=dead)
    assert await handlers.run() == 17 - 6
    letters = sent.sent[('dlq', 'billing:p-0')]
    assert [m.stream_publish_id for m in letters] == [3, 4, 6, 10]
    assert letters[0].app_properties['x-rbfly-error'] == 'ValueError: bad 2'
    assert letters[0].app_properties['x-rbfly-source-stream'] == 'p-0'
    assert letters[0].app_properties['x-rbfly-source-offset'] == 2
    assert [m.stream_publish_id for m in sent.sent[('dlq', 'billing:p-1')]] == [3, 4]
    assert handlers.dead_lettered == 6 and sent.closed == 2
    assert sorted(conn.offsets) == [('p-0', 11), ('p-1', 4)]

def test_on_error_checked() -> None:
    with pytest.raises(ValueError, match='dead_letter stream goes with'):
        OnError(then='dead-letter')
    with pytest.raises(ValueError, match='dead_letter stream goes with'):
        OnError(dead_letter='dlq')
    with pytest.raises(ValueError, match='retries must be'):
        OnError(retries=-1)
    with pytest.raises(ValueError, match='then must be'):
        OnError(then=tp.cast(tp.Any, 'ignore'))
    assert OnError(backoff=0.1, max_backoff=0.3).delay(3) == 0.3

#
# what a review found: runs that hung
#

async def test_error_while_the_stream_is_quiet() -> None:
    """A handler's error ends the run while no chunk comes (the dispatcher waited on)."""
    async def handler(msg: MessageCtx) -> None:
        if msg.stream_offset == 2:
            raise ValueError('bad')

    source = ListSource([chunk('s', range(4))], finite=False)
    async with asyncio.timeout(5):
        with pytest.raises(ValueError, match='bad'):
            await Handlers(Progress(source), handler, concurrency=2).run()
    assert source.ended

async def test_dead_letter_failing_does_not_hang() -> None:
    """Two messages to dead-letter, the first failing to publish: the run raises."""
    class Failing:
        @contextlib.asynccontextmanager
        async def open(self, stream: str, name: str) -> tp.AsyncIterator[Send]:
            class Publisher:
                async def send(self, message: MessageCtx) -> None:
                    raise ConnectionError('dead-letter stream gone')
            yield Publisher()

    source = ListSource([chunk('s', range(6))], finite=False)
    dead = DeadLetters(Failing().open, 'dlq', 'g')
    handlers = Handlers(Progress(source), failing({2, 3}), concurrency=4,
                        on_error=OnError(then='dead-letter', dead_letter='dlq'),
                        dead_letters=dead)
    async with asyncio.timeout(5):
        with pytest.raises(ConnectionError, match='dead-letter stream gone'):
            await handlers.run()

async def test_handler_cancelled_by_itself() -> None:
    """A handler raising CancelledError of its own: a failure of its message, not a lost worker."""
    async def handler(msg: MessageCtx) -> None:
        if msg.stream_offset == 1:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            future.cancel()
            await future

    source = ListSource([chunk('s', range(5))])
    async with asyncio.timeout(5):
        with pytest.raises(RuntimeError, match='the handler was cancelled, not by the run'):
            await Handlers(Progress(source), handler, concurrency=2, key=lambda m: 0).run()
