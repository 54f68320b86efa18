"""
Publishers: send messages to a stream and wait for the broker's
confirmation.

- :py:class:`Publisher`: ``await send(msg)`` returns when the broker
  confirmed the message.
- :py:class:`PublisherBatchFast`: ``batch(msg)`` collects messages,
  ``await flush()`` sends them and waits for all confirmations.
- :py:class:`PublisherBatchLimit`: like the fast batch publisher, but
  ``await batch(msg, max_len=n)`` flushes by itself when ``n`` messages
  are waiting.
- :py:class:`PublisherBin` and :py:class:`PublisherBinBatch`: the same for
  raw binary messages (no AMQP encoding).

Each message gets a publishing id one higher than the previous one. A
named publisher continues from the last id the stream stored for its name,
so the broker drops a message published twice under the same name and id
(deduplication).
"""

from __future__ import annotations

import asyncio
import logging
import typing as tp

from ..amqp import MessageCtx
from ..error import RbFlyError
from ..types import AMQPAppProperties, AMQPBody
from ._publish import PublishEncoder
from .error import ConnectionLost, MessageRejected
from .types import BloomFilterExtract

if tp.TYPE_CHECKING:
    from .client import StreamsClient

logger = logging.getLogger(__name__)



class _Confirmation:
    """
    Confirmation of a group of messages: done when all were confirmed.
    """
    __slots__ = ('future', 'remaining')

    def __init__(self, future: asyncio.Future[None], remaining: int) -> None:
        self.future = future
        self.remaining = remaining

class PublisherTrait:
    """
    State shared by all publisher classes.

    :ivar stream: Stream the publisher sends to.
    :ivar name: Publisher reference name (used for deduplication).
    :ivar message_id: Publishing id of the last message sent.
    """
    stream: str
    name: str
    message_id: int
    _amqp: tp.ClassVar[bool] = True

    def __init__(
            self,
            client: StreamsClient,
            stream: str,
            publisher_id: int,
            name: str,
            message_id: int,
            filter_extract: BloomFilterExtract | None = None,
    ) -> None:
        self._client = client
        self.stream = stream
        self._id = publisher_id
        self.name = name
        self.message_id = message_id
        self._filter_extract = filter_extract
        self._waiting: dict[int, _Confirmation] = {}
        self._closed = False

    def _next_message_id(self) -> int:
        self.message_id += 1
        return self.message_id

    #
    # connection callbacks (PublisherHandler)
    #

    def on_confirm(self, publishing_ids: tp.Sequence[int]) -> None:
        waiting = self._waiting
        for pid in publishing_ids:
            c = waiting.pop(pid, None)
            if c is not None:
                c.remaining -= 1
                if c.remaining == 0 and not c.future.done():
                    c.future.set_result(None)

    def on_error(self, errors: tp.Sequence[tuple[int, int]]) -> None:
        for pid, code in errors:
            c = self._waiting.pop(pid, None)
            if c is not None and not c.future.done():
                c.future.set_exception(MessageRejected(pid, code, self.stream))

    def on_connection_lost(self, error: Exception) -> None:
        waiting = self._waiting
        self._waiting = {}
        for c in waiting.values():
            if not c.future.done():
                c.future.set_exception(error)

    #
    # sending
    #

    async def _publish(self, messages: list[tp.Any]) -> None:
        """
        Send messages and wait until the broker confirmed all of them.
        """
        if self._closed:
            raise RbFlyError('publisher for stream {!r} is closed'.format(self.stream))
        if not messages:
            return
        protocol = await self._client._protocol_for_publisher(self)
        encoder: PublishEncoder = protocol.publish_encoder  # type: ignore[attr-defined]
        filter_values = None
        if self._filter_extract is not None:
            extract = self._filter_extract
            filter_values = [
                extract(m if type(m) is MessageCtx else MessageCtx(m)) for m in messages
            ]
        n = len(messages)
        first = self.message_id + 1
        future: asyncio.Future[None] = protocol.loop.create_future()
        confirmation = _Confirmation(future, n)
        start = 0
        while start < n:
            count, frame = encoder.encode(
                self._id, messages, start, first + start, self._amqp, filter_values,
            )
            for pid in range(first + start, first + start + count):
                self._waiting[pid] = confirmation
            await protocol.drain()
            protocol.send_frame(frame)
            start += count
        self.message_id = first + n - 1
        try:
            await future
        except asyncio.CancelledError:
            # the messages may still be confirmed; forget them here so a
            # late confirmation does not touch a cancelled future
            for pid in range(first, first + n):
                self._waiting.pop(pid, None)
            raise

class Publisher(PublisherTrait):
    """
    Publisher sending one AMQP message at a time.
    """
    async def send(self, message: AMQPBody | MessageCtx) -> None:
        """
        Send a message and wait for the broker's confirmation.

        :param message: Message body, or a message with all its sections.
        :raises MessageRejected: When the broker rejected the message.
        """
        await self._publish([message])

class PublisherBatchTrait(PublisherTrait):
    """
    Publisher collecting messages in a batch.
    """
    def __init__(self, *args: tp.Any, **kw: tp.Any) -> None:
        super().__init__(*args, **kw)
        self._data: list[tp.Any] = []

    async def flush(self) -> None:
        """
        Send the collected messages and wait for confirmation of all of
        them. The batch is emptied even when sending fails.
        """
        data = self._data
        self._data = []
        await self._publish(data)

class PublisherBatchFast(PublisherBatchTrait):
    """
    Batch publisher: :py:meth:`batch` collects, :py:meth:`flush` sends.

    The application decides how many messages to collect; memory grows
    with the batch.
    """
    def batch(self, message: AMQPBody | MessageCtx) -> None:
        """
        Add a message to the batch.
        """
        self._data.append(message)

class PublisherBatchLimit(PublisherBatchTrait):
    """
    Batch publisher with a bounded batch: :py:meth:`batch` flushes when
    ``max_len`` messages are collected.
    """
    async def batch(self, message: AMQPBody | MessageCtx, *, max_len: int) -> None:
        """
        Add a message to the batch; flush first when the batch is full.
        """
        if len(self._data) >= max_len:
            await self.flush()
        self._data.append(message)

class PublisherBin(PublisherTrait):
    """
    Publisher of raw binary messages (no AMQP 1.0 encoding).
    """
    _amqp = False

    async def send(self, message: bytes) -> None:
        """
        Send a binary message and wait for the broker's confirmation.
        """
        await self._publish([message])

class PublisherBinBatch(PublisherBatchTrait):
    """
    Batch publisher of raw binary messages.
    """
    _amqp = False

    def batch(self, message: bytes) -> None:
        """
        Add a binary message to the batch.
        """
        self._data.append(message)

PublisherBatch = PublisherBatchFast
"""Name used by older RbFly versions."""

PublisherBatchMem = PublisherBatchLimit
"""Name used by older RbFly versions."""

def stream_message_ctx(
        body: AMQPBody,
        *,
        publish_id: int | None = None,
        app_properties: AMQPAppProperties | None = None,
) -> MessageCtx:
    """
    Create a message with application properties (RbFly 0.10 helper).
    """
    return MessageCtx(
        body, app_properties=app_properties,
        stream_publish_id=0 if publish_id is None else publish_id,
    )

__all__ = [
    'BloomFilterExtract',
    'ConnectionLost',
    'Publisher',
    'PublisherBatch',
    'PublisherBatchFast',
    'PublisherBatchLimit',
    'PublisherBatchMem',
    'PublisherBin',
    'PublisherBinBatch',
    'PublisherTrait',
    'stream_message_ctx',
]
