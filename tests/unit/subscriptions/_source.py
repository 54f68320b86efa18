"""
A source of chunks for the views over a reader's progress, without a
broker (:py:class:`rbfly.streams.subscriptions.source.Source`): chunks
and errors given in advance, or put while reading.
"""

from __future__ import annotations

import asyncio
import typing as tp
from collections import deque

from rbfly.amqp import MessageCtx
from rbfly.streams.offset import Offset, OffsetType
from rbfly.streams.subscriptions.handoff import HandOff
from rbfly.streams.subscriptions.subscription import Chunk

def msg(body: object, offset: int) -> MessageCtx:
    m = MessageCtx(tp.cast(tp.Any, body))
    m.stream_offset = offset
    return m

def chunk(stream: str, offsets: range) -> Chunk:
    messages = [msg(i, i) for i in offsets]
    for m in messages:
        m.stream = stream
    return Chunk(messages, stream, offsets.start)

class ListSource:
    """
    Chunks (lists of messages become chunks of stream ``s``) and errors,
    taken in order; an error is raised at every poll once reached (as a
    subscription raises its error). ``finite``: the source ends after the
    items; else it waits for more (:py:meth:`put`).
    """
    def __init__(
            self, items: tp.Iterable[Chunk | list[MessageCtx] | Exception] = (),
            finite: bool = True,
    ) -> None:
        self.items: deque[Chunk | Exception] = deque(
            c if isinstance(c, Chunk | Exception) else Chunk(c, 's') for c in items
        )
        self.finite = finite
        self.opened = False
        self.ended = False
        self.ended_event = asyncio.Event()
        self.group: HandOff | None = None
        self.waits = 0
        self.known = {c.stream for c in self.items if isinstance(c, Chunk)}
        self.paused: set[str] = set()
        self.seeks: list[tuple[str, Offset]] = []
        self._event = asyncio.Event()

    async def open(self, group: HandOff | None) -> None:
        self.opened = True
        self.group = group

    def poll(self) -> Chunk | None:
        for i, item in enumerate(self.items):
            if isinstance(item, Exception):
                raise item
            if item.stream not in self.paused:
                del self.items[i]
                return item
        return None

    @property
    def finished(self) -> bool:
        return self.finite and not self.items

    async def settle(self) -> None:
        """No gaps watched here."""

    async def wait(self, timeout: float | None) -> None:
        self.waits += 1
        self._event.clear()
        async with asyncio.timeout(timeout):
            await self._event.wait()

    def put(self, item: Chunk | Exception) -> None:
        if isinstance(item, Chunk):
            self.known.add(item.stream)
        self.items.append(item)
        self._event.set()

    @property
    def streams(self) -> list[str]:
        return sorted(self.known)

    def pause(self, stream: str, paused: bool) -> None:
        """Chunks of a paused stream stay, the others are polled past them."""
        if paused:
            self.paused.add(stream)
        else:
            self.paused.discard(stream)
            self._event.set()

    async def seek(
            self, stream: str, offset: Offset, moved: tp.Callable[[int | None], None],
    ) -> None:
        """Drop the chunks of ``stream`` not taken; a test puts those of the new place."""
        await asyncio.sleep(0)  # (subscribing takes a round trip)
        self.seeks.append((stream, offset))
        at = offset.value if offset.type == OffsetType.OFFSET else None
        moved(at if isinstance(at, int) else None)
        self.items = deque(
            c for c in self.items if not (isinstance(c, Chunk) and c.stream == stream))
        self._event.set()

    def end(self) -> None:
        self.ended = True
        self.ended_event.set()
        self._event.set()  # (a take waiting: the progress ended)
