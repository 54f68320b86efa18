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
        self._event = asyncio.Event()

    async def open(self, group: HandOff | None) -> None:
        self.opened = True
        self.group = group

    def poll(self) -> Chunk | None:
        if not self.items:
            return None
        item = self.items[0]
        if isinstance(item, Exception):
            raise item
        self.items.popleft()
        return item

    @property
    def finished(self) -> bool:
        return self.finite and not self.items

    async def wait(self, timeout: float | None) -> None:
        self.waits += 1
        self._event.clear()
        async with asyncio.timeout(timeout):
            await self._event.wait()

    def put(self, item: Chunk | Exception) -> None:
        self.items.append(item)
        self._event.set()

    def end(self) -> None:
        self.ended = True
        self.ended_event.set()
        self._event.set()  # (a take waiting: the progress ended)
