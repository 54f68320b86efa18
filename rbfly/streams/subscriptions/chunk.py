"""
A chunk of a stream as the application gets it: the list of its messages,
with where it comes from (stream, first offset, timestamp) and the credit
it holds under a flow strategy. Made by a subscription
(:py:mod:`rbfly.streams.subscriptions.subscription`), handed out by the
chunk iterator, cut into windows, loaded into the message iterator's
cursor.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ...amqp import MessageCtx
from ...error import MessageDecodeError

class Chunk(list[MessageCtx]):
    """
    Messages of one chunk, as returned by the chunk-level API.

    :ivar stream: Stream of the chunk (a partition, when consuming a super
        stream).
    :ivar first_offset: Offset of the chunk's first record (messages before
        the subscription's start offset are not in the list).
    :ivar timestamp: Chunk timestamp, in seconds since the Unix epoch.
    :ivar committed_chunk_id: Id of the last chunk committed (replicated) by
        the stream when this chunk was sent (RabbitMQ 3.11+, else None).
    :ivar release: With a flow strategy counting processed chunks
        (:py:mod:`rbfly.streams.subscriptions.flow`), what gives the broker the credit
        this chunk holds (``None`` otherwise).
    :ivar release_at: When ``release`` is called by the message iterator:
        as the message at this index is asked for (-1: not by it).
    :ivar undecodable: For concurrent handlers (whose error policy gets
        them), its messages that are not AMQP 1.0, their bytes as their
        bodies, as ``{offset: MessageDecodeError}`` (``None``: none).
    """
    __slots__ = (
        'committed_chunk_id', 'first_offset', 'release', 'release_at', 'stream', 'timestamp',
        'undecodable',
    )

    stream: str
    first_offset: int
    timestamp: float
    committed_chunk_id: int | None
    release: Callable[[], None] | None
    release_at: int
    undecodable: dict[int, MessageDecodeError] | None

    def __init__(
            self, messages: Iterable[MessageCtx] = (), stream: str = '', first_offset: int = 0,
            timestamp: float = 0.0, committed_chunk_id: int | None = None,
    ) -> None:
        super().__init__(messages)
        self.stream = stream
        self.first_offset = first_offset
        self.timestamp = timestamp
        self.committed_chunk_id = committed_chunk_id
        self.release = None
        self.release_at = -1
        self.undecodable = None

__all__ = ['Chunk']
