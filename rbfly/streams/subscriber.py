"""
Subscriptions: receive the messages of a stream.

Flow control: the broker sends a chunk only against a credit. A
subscription starts with ``credit`` credits and returns one credit each
time the application takes a chunk out of the subscription's buffer, so at
most ``credit`` chunks wait in memory however slow the application is.
Chunks are decoded when the application takes them, in the application's
task, not in the connection's callback.
"""

from __future__ import annotations

import asyncio
import logging
import typing as tp
from collections import deque

from ..amqp import MessageCtx
from ._chunk import decode_chunk
from .protocol.commands import Credit

if tp.TYPE_CHECKING:
    from .aio.protocol import StreamsProtocol

logger = logging.getLogger(__name__)

class Subscription:
    """
    Receiving state of one subscription on one connection.

    :param protocol: Connection the subscription lives on.
    :param subscription_id: Id of the subscription on the connection.
    :param stream: Stream name.
    :param start_offset: Records before this offset are dropped.
    :param amqp: Decode messages as AMQP 1.0.
    :param credit: Chunks the broker may send ahead.
    """
    def __init__(
            self,
            protocol: StreamsProtocol,
            subscription_id: int,
            stream: str,
            start_offset: int,
            amqp: bool,
            credit: int,
    ) -> None:
        self.protocol = protocol
        self.subscription_id = subscription_id
        self.stream = stream
        self.next_offset = start_offset
        self.amqp = amqp
        self.credit = credit
        self.committed_chunk_id: int | None = None
        self._chunks: deque[bytes | bytearray | memoryview] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._error: Exception | None = None

    def on_chunk(
            self, chunk: bytes | bytearray | memoryview, committed_chunk_id: int | None,
    ) -> None:
        self._chunks.append(chunk)
        if committed_chunk_id is not None:
            self.committed_chunk_id = committed_chunk_id
        self._wake()

    def on_connection_lost(self, error: Exception) -> None:
        self._error = error
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def next_chunk(self, timeout: float | None = None) -> list[MessageCtx]:
        """
        Wait for the next chunk and return its messages (those at or after
        the subscription's next offset).

        :param timeout: Seconds to wait for a chunk (``None``: forever).
        :raises TimeoutError: When no chunk arrives in time.
        :raises rbfly.streams.error.ConnectionLost: When the connection is
            lost.
        """
        chunks = self._chunks
        while not chunks:
            if self._error is not None:
                raise self._error
            self._waiter = self.protocol.loop.create_future()
            try:
                async with asyncio.timeout(timeout):
                    await self._waiter
            finally:
                self._waiter = None
        chunk = chunks.popleft()
        if self.protocol.is_open:
            self.protocol.send(Credit(self.subscription_id, 1))
        info, messages = decode_chunk(chunk, self.next_offset, self.amqp)
        if info.chunk_type == 0 and info.next_offset > self.next_offset:
            self.next_offset = info.next_offset
        return messages

__all__ = ['Subscription']
