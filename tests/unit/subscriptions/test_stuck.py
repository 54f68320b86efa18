"""
A stuck application (``processing_timeout``): the progress commits what
was processed, ends the subscriptions (a single active consumer steps
down) and the next step raises ``ProcessingStuck``; an application that
moves on, or waits for messages, is not stuck.
"""

import asyncio
import typing as tp

import pytest

from rbfly.amqp import MessageCtx
from rbfly.streams.error import ProcessingStuck
from rbfly.streams.protocol.commands import StoreOffset
from rbfly.streams.subscriptions._bodies import Bodies
from rbfly.streams.subscriptions.handlers import Handlers
from rbfly.streams.subscriptions.progress import Progress
from rbfly.streams.subscriptions.tracking import OffsetTracker

from ._source import ListSource, chunk

class Stored:
    is_open = True

    def __init__(self) -> None:
        self.offsets: list[tuple[str, int]] = []

    def send(self, command: StoreOffset) -> None:
        self.offsets.append((command.stream, command.offset))

def tracked(source: ListSource, timeout: float) -> tuple[Progress, Stored]:
    conn = Stored()
    tracker = OffsetTracker(lambda: tp.cast(tp.Any, conn), 'app', 1000, 60)
    return Progress(source, tracker, processing_timeout=timeout), conn

async def test_message_held_too_long() -> None:
    source = ListSource([chunk('s', range(10))], finite=False)
    progress, conn = tracked(source, 0.04)
    it = Bodies(progress)
    assert [await anext(it) for _ in range(4)] == [0, 1, 2, 3]   # 0-2 processed
    async with asyncio.timeout(5):   # the watchdog gives up within about the timeout
        await source.ended_event.wait()
    assert conn.offsets == [('s', 2)]   # what was processed: not the one held
    with pytest.raises(ProcessingStuck, match=r"no progress processing 's' for 0\.04s") as info:
        await anext(it)
    assert info.value.streams == ['s']
    assert conn.offsets == [('s', 2)]   # message 3 finished late: not stored

async def test_moving_on_or_waiting_is_not_stuck() -> None:
    """Messages taken at a slower pace than the timeout's, and a wait for messages."""
    source = ListSource([chunk('s', range(20))], finite=False)
    progress, _ = tracked(source, 0.08)
    it = Bodies(progress)
    for _ in range(20):
        await anext(it)
        await asyncio.sleep(0.01)
    waiting = asyncio.ensure_future(anext(it))   # waits for a chunk: holds nothing
    await asyncio.sleep(0.3)
    assert not waiting.done() and not source.ended
    source.put(chunk('s', range(20, 21)))
    assert await waiting == 20
    await it.aclose()

async def test_handler_stuck() -> None:
    """A handler that never returns: the others' messages committed, the run raises."""
    gate = asyncio.Event()

    async def handler(msg: MessageCtx) -> None:
        if msg.stream_offset == 5:
            await gate.wait()

    source = ListSource([chunk('s', range(10))], finite=False)
    progress, conn = tracked(source, 0.04)
    with pytest.raises(ProcessingStuck):
        await Handlers(progress, handler, concurrency=4, drain_timeout=0.05).run()
    assert conn.offsets == [('s', 4)]
    assert source.ended
