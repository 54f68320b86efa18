"""
What a reader's progress (:py:mod:`rbfly.streams.subscriptions.progress`)
handed out last as windows or chunks, and the application has not
processed yet: segments of chunks, processed when the application asks
for more (reported to automatic offset tracking), dropped when its
processing raised or its stream is cut (a seek).

A chunk of a flow strategy holds its credit until the message it waits
for is processed (``release``): given back here, by the
progress, and by the parts that hold chunks for it (paused streams,
chunks queued and cut).
"""

from __future__ import annotations

import typing as tp

from .chunk import Chunk
from .queued import Segment

if tp.TYPE_CHECKING:
    from .tracking import OffsetTracker

class Handed:
    """The segments of chunks handed out last, not processed yet."""
    __slots__ = ('segments',)

    def __init__(self) -> None:
        self.segments: list[Segment] = []

    def add(self, chunk: Chunk) -> None:
        """A chunk handed out whole (the chunk iterator)."""
        self.segments.append((chunk, 0, len(chunk)))

    def extend(self, segments: list[Segment]) -> None:
        """The segments of a window handed out."""
        self.segments.extend(segments)

    def processed(self, tracker: OffsetTracker | None) -> None:
        """
        What was handed out is processed: reported to the tracker, if
        any, credit given back.
        """
        out, self.segments = self.segments, []
        for chunk, start, stop in out:
            end = min(stop, len(chunk))  # (a chunk the application emptied)
            if start >= end:
                continue
            if tracker is not None:
                tracker.processed(chunk.stream, chunk[end - 1].stream_offset, end - start)
            release(chunk, start, end)

    def mark(self, tracker: OffsetTracker) -> None:
        """
        Tell the tracker the offsets of what is being processed, counting
        no message (counted when the application moves on): a commit
        covers them.
        """
        for chunk, start, stop in self.segments:
            end = min(stop, len(chunk))
            if start < end:
                tracker.processed(chunk.stream, chunk[end - 1].stream_offset, 0)

    def drop(self, stream: str | None = None) -> None:
        """
        What was handed out (of ``stream``, or all) is not processed: not
        reported; its credit goes back.
        """
        out = self.segments
        if stream is None:
            self.segments = []
        else:
            self.segments = [seg for seg in out if seg[0].stream != stream]
        for chunk, start, end in out:
            if stream is None or chunk.stream == stream:
                release(chunk, start, end, cut=True)

    def holds(self, stream: str) -> bool:
        """Whether a message of ``stream`` was handed out."""
        return any(chunk.stream == stream for chunk, _, _ in self.segments)

    def streams(self) -> set[str]:
        """The streams handed out of."""
        return {chunk.stream for chunk, _, _ in self.segments}

    def clear(self) -> None:
        """Nothing handed out any more (the reading ended)."""
        self.segments = []

def release_cut(chunk: Chunk) -> None:
    """Give back the credit of a chunk none of whose messages is handed out."""
    release(chunk, 0, len(chunk), cut=True)

def release(chunk: Chunk, start: int, end: int, cut: bool = False) -> None:
    """
    Give back the credit a chunk holds under a flow strategy, when its
    messages ``start:end`` cover the one it waits for (the message
    iterator gives it back as message ``release_at`` is asked for, i.e.
    ``release_at`` messages are processed); a cut gives it back at once,
    also a chunk the application was to release itself (``ManualCredit``)
    when none of its messages was handed out (it never sees the chunk).
    A chunk releases once.
    """
    handback = chunk.release
    if handback is None:
        return
    release_at = chunk.release_at
    if release_at < 0:
        if not (cut and start == 0):
            return
    elif not cut and not start < release_at <= end:
        return
    chunk.release = None
    chunk.release_at = -1
    handback()

__all__ = ['Handed', 'release', 'release_cut']
