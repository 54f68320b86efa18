"""
A subscription's gap watch for the unit tests of
:py:mod:`rbfly.streams.subscriptions.gaps` (``test_gaps``,
``test_gaps_settle``): a fake first offset, clock and ``on_gap``, and the
moves the tests make (take a chunk, take over a gap, fire the timer, wait
for the check).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from rbfly.streams.error import OffsetOutOfRange
from rbfly.streams.offset import Offset
from rbfly.streams.protocol.commands import OffsetSpec
from rbfly.streams.subscriptions.gaps import SETTLE_TIMEOUT, GapWatch
from rbfly.streams.subscriptions.options import ReadOptions
from rbfly.streams.subscriptions.subscription import Subscription

from ._chunks import chunk

class Stats:
    """The stream's first offset, as its statistics say; counts the questions."""
    def __init__(self, first: int | None) -> None:
        self.first = first
        self.asked = 0
        self.error: Exception | None = None
        self.hold: asyncio.Future[None] | None = None

    async def __call__(self, stream: str) -> int | None:
        assert stream == 's'
        self.asked += 1
        if self.hold is not None:
            await self.hold
        if self.error is not None:
            raise self.error
        return self.first

class Clock:
    """A clock the test moves; counts its reads."""
    def __init__(self) -> None:
        self.now = 0.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now

class Told:
    """
    The reports (``on_gap``'s), raising ``error`` when set, and awaiting
    ``during`` first when set (an ``on_gap`` function doing something).
    """
    def __init__(self) -> None:
        self.gaps: list[OffsetOutOfRange] = []
        self.error: Exception | None = None
        self.during: Callable[[], Awaitable[None]] | None = None

    async def __call__(self, gap: OffsetOutOfRange) -> None:
        self.gaps.append(gap)
        if self.during is not None:
            await self.during()
        if self.error is not None:
            raise self.error

def watched(
        first: int | None, start: int = 0, settle_timeout: float = SETTLE_TIMEOUT,
) -> tuple[Subscription, GapWatch, Stats, Clock, Told]:
    stats, clock, told = Stats(first), Clock(), Told()
    watch = GapWatch('s', stats, told, start, settle_timeout=settle_timeout, clock=clock)
    sub = Subscription(
        's', OffsetSpec.offset(start), start, {}, ReadOptions(amqp=False),
        resume_offset=Offset.offset(start), gaps=watch,
    )
    return sub, watch, stats, clock, told

def take(sub: Subscription) -> list[int]:
    """The offsets of the next chunk's messages."""
    taken = sub.poll()
    assert taken is not None
    return [m.stream_offset for m in taken]

def take_over_gap(sub: Subscription) -> None:
    """Take the chunks at 0 and at 40: offsets 5 to 39 between them (a gap of 35)."""
    sub.on_chunk(chunk(0, 5), None)
    sub.on_chunk(chunk(40, 5), None)
    take(sub)
    take(sub)

def fire(watch: GapWatch) -> None:
    """The watch's timer is due (the fake clock moved): run what the loop would run."""
    timer = watch._timer
    assert timer is not None
    timer.cancel()  # (the loop's own clock: not due yet)
    watch._when_due()

async def checked(watch: GapWatch) -> None:
    """Wait for the check under way (one must be)."""
    task = watch.checking
    assert task is not None
    await task
