"""
Subscriptions: receive the messages of a stream.

Flow control: the broker sends a chunk only against a credit. A
subscription starts with ``credit`` credits and earns one back each time
the application takes a chunk out of the subscription's buffer, so at most
``credit`` chunks wait in memory however slow the application is. Earned
credits are returned to the broker in one Credit command when half of the
credit is earned, or at once when the buffer runs empty: a Credit per chunk
costs a write system call per chunk.

Chunks are decoded when the application takes them, in the application's
task, not in the connection's callback.

Recovery: a subscription outlives its connection. When the connection is
lost, chunks already received can still be read; the client subscribes
again on the new connection from the offset after the last chunk received,
and records before the application's next offset are dropped, so nothing
is lost or repeated.
"""

from __future__ import annotations

import asyncio
import logging
import typing as tp
from collections import deque

from ..amqp import MessageCtx
from ._chunk import decode_chunk
from .protocol.commands import Credit, OffsetSpec

if tp.TYPE_CHECKING:
    from .aio.protocol import StreamsProtocol

logger = logging.getLogger(__name__)

class Chunk(list[MessageCtx]):
    """
    Messages of one chunk, as returned by the chunk-level API.

    :ivar first_offset: Offset of the chunk's first record (messages before
        the subscription's start offset are not in the list).
    :ivar timestamp: Chunk timestamp, in seconds since the Unix epoch.
    :ivar committed_chunk_id: Id of the last chunk committed (replicated) by
        the stream when this chunk was sent (RabbitMQ 3.11+, else None).
    """
    __slots__ = ('committed_chunk_id', 'first_offset', 'timestamp')

    first_offset: int
    timestamp: float
    committed_chunk_id: int | None

class Subscription:
    """
    Receiving state of one subscription.

    :param stream: Stream name.
    :param offset_spec: Where the subscription started.
    :param start_offset: Records before this offset are dropped.
    :param amqp: Decode messages as AMQP 1.0.
    :param credit: Chunks the broker may send ahead.
    :param properties: Subscription properties (filters).
    """
    def __init__(
            self,
            stream: str,
            offset_spec: OffsetSpec,
            start_offset: int,
            amqp: bool,
            credit: int,
            properties: dict[str, str],
    ) -> None:
        self.stream = stream
        self.offset_spec = offset_spec
        self.next_offset = start_offset
        self.amqp = amqp
        self.credit = credit
        self.properties = properties
        self.protocol: StreamsProtocol | None = None
        self.subscription_id = -1
        self.committed_chunk_id: int | None = None
        # offset after the last user chunk received (None: none yet)
        self.received_offset: int | None = None
        self._chunks: deque[tuple[bytes | bytearray | memoryview, int | None]] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._error: Exception | None = None
        self._earned = 0
        self._batch = max(1, credit // 2)

    def resume_spec(self) -> OffsetSpec:
        """
        Offset specification to subscribe with again after a reconnection.
        """
        if self.received_offset is None:
            return self.offset_spec
        return OffsetSpec.offset(max(self.received_offset, self.next_offset))

    def attach(self, protocol: StreamsProtocol, subscription_id: int) -> None:
        """
        Bind the subscription to a connection.
        """
        self.protocol = protocol
        self.subscription_id = subscription_id
        self._earned = 0
        protocol.subscriptions[subscription_id] = self
        self._wake()

    def detach(self) -> None:
        protocol = self.protocol
        if protocol is not None:
            protocol.subscriptions.pop(self.subscription_id, None)
        self.protocol = None

    def on_chunk(
            self, chunk: bytes | bytearray | memoryview, committed_chunk_id: int | None,
    ) -> None:
        self._chunks.append((chunk, committed_chunk_id))
        if committed_chunk_id is not None:
            self.committed_chunk_id = committed_chunk_id
        if len(chunk) >= 32 and chunk[1] == 0:
            first = int.from_bytes(chunk[24:32], 'big')
            self.received_offset = first + int.from_bytes(chunk[4:8], 'big')
        self._wake()

    def on_connection_lost(self, error: Exception) -> None:
        self.protocol = None
        self._wake()

    def fail(self, error: Exception) -> None:
        """
        End the subscription with an error (e.g. its stream was deleted).
        """
        self._error = error
        self.detach()
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def next_chunk(self, timeout: float | None = None) -> Chunk:
        """
        Wait for the next chunk and return its messages (those at or after
        the subscription's next offset; possibly none).

        :param timeout: Seconds to wait for a chunk (``None``: forever).
        :raises TimeoutError: When no chunk arrives in time.
        """
        chunks = self._chunks
        while not chunks:
            if self._error is not None:
                raise self._error
            self._return_credit()
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                if timeout is None:
                    await self._waiter
                else:
                    async with asyncio.timeout(timeout):
                        await self._waiter
            finally:
                self._waiter = None
        data, committed = chunks.popleft()
        self._earned += 1
        if self._earned >= self._batch:
            self._return_credit()
        info, messages = decode_chunk(data, self.next_offset, self.amqp)
        if info.chunk_type == 0 and info.next_offset > self.next_offset:
            self.next_offset = info.next_offset
        chunk = Chunk(messages)
        chunk.first_offset = info.first_offset
        chunk.timestamp = info.timestamp
        chunk.committed_chunk_id = committed
        return chunk

    def _return_credit(self) -> None:
        protocol = self.protocol
        if self._earned and protocol is not None and protocol.is_open:
            protocol.send(Credit(self.subscription_id, self._earned))
            self._earned = 0

__all__ = ['Chunk', 'Subscription']
