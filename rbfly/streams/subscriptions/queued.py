"""
The chunks a reader's progress (:py:mod:`rbfly.streams.subscriptions.progress`)
took for a window iterator or concurrent handlers and has not handed out
yet: windows are cut from them (small chunks merged, a big one split),
handlers get their messages one by one.
"""

from __future__ import annotations

import typing as tp
from collections import deque

from ...amqp import MessageCtx
from .chunk import Chunk
from .pausing import rest_of

Segment: tp.TypeAlias = tuple[Chunk, int, int]
"""Messages ``start:end`` of a chunk."""

class Queued:
    """Chunks taken and not handed out, the first one from ``pos`` on."""
    def __init__(self) -> None:
        self._chunks: deque[Chunk] = deque()
        self._pos = 0
        self._count = 0  # messages of the chunks, from their first

    def __len__(self) -> int:
        """Messages queued and not handed out."""
        return self._count - self._pos

    def append(self, chunk: Chunk) -> None:
        """A chunk taken."""
        self._chunks.append(chunk)
        self._count += len(chunk)

    def window(self, max_messages: int) -> tuple[list[MessageCtx], list[Segment]]:
        """
        Hand out at most ``max_messages`` messages, and the segments of
        the chunks they are.
        """
        chunks = self._chunks
        window: list[MessageCtx] = []
        segments: list[Segment] = []
        count = 0
        while chunks and count < max_messages:
            chunk = chunks[0]
            start = self._pos
            end = min(len(chunk), start + max_messages - count)
            window.extend(chunk if start == 0 and end == len(chunk) else chunk[start:end])
            segments.append((chunk, start, end))
            count += end - start
            if end == len(chunk):
                self._pop()
            else:
                self._pos = end
        return window, segments

    def next(self) -> tuple[MessageCtx, Chunk, bool] | None:
        """
        Hand out the next message, with its chunk, and whether it is the
        chunk's last one (the chunk is handed out whole then); ``None``
        when nothing is queued.
        """
        chunks = self._chunks
        while chunks:
            chunk = chunks[0]
            pos = self._pos
            if pos < len(chunk):
                self._pos = pos + 1
                if pos + 1 == len(chunk):
                    self._pop()
                    return chunk[pos], chunk, True
                return chunk[pos], chunk, False
            self._pop()
        return None

    def _pop(self) -> None:
        self._count -= len(self._chunks.popleft())
        self._pos = 0

    def take(self, stream: str) -> list[Chunk]:
        """Take out the chunks of ``stream`` (of the first, what is not handed out)."""
        chunks = self._chunks
        if not any(c.stream == stream for c in chunks):
            return []
        taken = []
        kept: deque[Chunk] = deque()
        for i, chunk in enumerate(chunks):
            if chunk.stream != stream:
                kept.append(chunk)
            elif i == 0 and self._pos:
                taken.append(rest_of(chunk, self._pos))
            else:
                taken.append(chunk)
        if chunks[0].stream == stream:
            self._pos = 0
        self._chunks = kept
        self._count = sum(len(c) for c in kept)
        return taken

    def clear(self) -> None:
        """Nothing queued any more (the reading ended)."""
        self._chunks.clear()
        self._count = self._pos = 0

__all__ = ['Queued', 'Segment']
