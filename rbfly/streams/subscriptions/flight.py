"""
The messages a reader's progress (:py:mod:`rbfly.streams.subscriptions.progress`)
handed out to concurrent handlers and that are not done yet, per stream:
handlers finish in any order, and what counts as processed is the
messages done without a gap before the first one still in flight (the
offset committed is the one before the lowest message not done).
"""

from __future__ import annotations

import asyncio
from collections import deque

class Flight:
    """Offsets in flight per stream, in the order handed out, and those done out of order."""
    def __init__(self) -> None:
        self._streams: dict[str, tuple[deque[int], set[int]]] = {}
        # a handler waiting to be the first in flight of its stream
        self._advanced: asyncio.Future[None] | None = None

    def add(self, stream: str, offset: int) -> None:
        """The message at ``offset`` is handed out."""
        flight = self._streams.get(stream)
        if flight is None:
            flight = self._streams[stream] = (deque(), set())
        flight[0].append(offset)

    def done(self, stream: str, offset: int) -> tuple[int, int] | None:
        """
        The message at ``offset`` is done: the offset of the last message
        done without a gap from the first in flight, and how many that
        is; ``None`` when one before it is still in flight.
        """
        offsets, done = self._streams[stream]
        if not offsets or offsets[0] != offset:
            done.add(offset)
            return None
        offsets.popleft()
        last, count = offset, 1
        while offsets and offsets[0] in done:
            last = offsets.popleft()
            done.remove(last)
            count += 1
        advanced, self._advanced = self._advanced, None
        if advanced is not None and not advanced.done():
            advanced.set_result(None)
        return last, count

    async def first(self, stream: str, offset: int) -> None:
        """Wait until the message at ``offset`` is the first of its stream in flight."""
        offsets = self._streams[stream][0]
        while offsets and offsets[0] != offset:
            if self._advanced is None:
                self._advanced = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._advanced)

    def count(self, stream: str | None = None) -> int:
        """Messages in flight (of ``stream``, or all)."""
        if stream is not None:
            flight = self._streams.get(stream)
            return 0 if flight is None else len(flight[0])
        return sum(len(offsets) for offsets, _ in self._streams.values())

    def streams(self, busy: bool = True) -> set[str]:
        """The streams with messages in flight (``busy=False``: ever handed out)."""
        return {s for s, (offsets, _) in self._streams.items() if offsets or not busy}

__all__ = ['Flight']
