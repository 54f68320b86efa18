"""
Paused streams of a read: what the reader's progress
(:py:mod:`rbfly.streams.subscriptions.progress`) took of a stream and
holds back while the application paused it, and gives back, in stream
order, when it resumes.

Pausing a stream (a partition of a super stream, say, whose sink is
down) stops handing out its messages at once, while the other streams
go on: the chunks of it taken and not handed out (the rest of the message
iterator's chunk at hand, the chunks a window iterator queued) are held
here; the subscription is not taken from, and grants the broker no credit
(its ``paused``), so at most its buffer fills. Nothing is dropped or read again: a resumed
stream's held chunks come first, then its subscription's buffer, so
offset tracking stays exact.

A chunk held keeps the credit a flow strategy counts for it until it is
processed, as it would handed out; a stream cut from the reader (a
hand-off, a seek) drops its held chunks, giving their credit back.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from .chunk import Chunk

def rest_of(chunk: Chunk, pos: int) -> Chunk:
    """
    The messages of a chunk from ``pos`` on, as a chunk of their own,
    with the flow strategy's credit the chunk holds if it is given back
    with one of them (a window iterator handed out those before).
    """
    rest = Chunk(
        chunk[pos:], chunk.stream, chunk.first_offset, chunk.timestamp,
        chunk.committed_chunk_id,
    )
    rest.undecodable = chunk.undecodable
    if chunk.release is not None and chunk.release_at > pos:
        rest.release, rest.release_at = chunk.release, chunk.release_at - pos
        chunk.release, chunk.release_at = None, -1
    return rest

class Paused:
    """
    The streams a reader paused, and the chunks it took of them and
    holds back.

    :param release: Gives back the credit a chunk dropped holds (the
        progress's, which knows the flow strategies' rules).
    """
    def __init__(self, release: Callable[[Chunk], None]) -> None:
        self._release = release
        self.streams: set[str] = set()
        self._held: dict[str, deque[Chunk]] = {}
        # held chunks of resumed streams, handed out before anything else
        self._ready: deque[Chunk] = deque()

    def __contains__(self, stream: object) -> bool:
        return stream in self.streams

    def pause(self, stream: str) -> None:
        """Hold back the chunks of ``stream`` from now on (those of a resume not handed out too)."""
        self.streams.add(stream)
        ready = self._ready
        if any(c.stream == stream for c in ready):
            back = deque(c for c in ready if c.stream == stream)
            back.extend(self._held.pop(stream, ()))
            self._held[stream] = back
            self._ready = deque(c for c in ready if c.stream != stream)

    @property
    def holding(self) -> bool:
        """Whether chunks are held back (of a paused stream, or of a resumed one not taken yet)."""
        return bool(self._ready) or any(self._held.values())

    def hold(self, chunk: Chunk) -> None:
        """A chunk of a paused stream, taken and not handed out."""
        if chunk:
            self._held.setdefault(chunk.stream, deque()).append(chunk)

    def resume(self, stream: str) -> bool:
        """
        Hand out the chunks of ``stream`` again, those held first; true
        when some were held.
        """
        self.streams.discard(stream)
        held = self._held.pop(stream, None)
        if not held:
            return False
        self._ready.extend(held)
        return True

    def take(self) -> Chunk | None:
        """The next held chunk of a resumed stream, if any."""
        ready = self._ready
        return ready.popleft() if ready else None

    def drop(self, stream: str) -> None:
        """
        Drop what is held of ``stream`` (a hand-off or a seek: its next
        reader reads it), giving the credit of its chunks back.
        """
        held = self._held.pop(stream, deque())
        if any(c.stream == stream for c in self._ready):
            held.extend(c for c in self._ready if c.stream == stream)
            self._ready = deque(c for c in self._ready if c.stream != stream)
        for chunk in held:
            self._release(chunk)

    def clear(self) -> None:
        """The reading ended: nothing is held any more."""
        for stream in list(self._held):
            self.drop(stream)
        ready, self._ready = self._ready, deque()
        for chunk in ready:
            self._release(chunk)

__all__ = ['Paused', 'rest_of']
