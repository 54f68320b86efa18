"""
Publishers: send messages to a stream and get the broker's confirmation.

- :py:class:`Publisher`: ``await send(msg)`` returns when the broker
  confirmed the message.
- :py:class:`PublisherBatchFast`: ``batch(msg)`` collects messages,
  ``await flush()`` sends them and waits for all confirmations.
- :py:class:`PublisherBatchLimit`: like the fast batch publisher, but
  ``await batch(msg, max_len=n)`` flushes by itself when ``n`` messages
  are waiting.
- :py:class:`PublisherPipelined`: ``await send(msg)`` returns at once with
  the message's publishing id; at most ``window`` messages wait for
  confirmation (``send`` waits when the window is full); confirmations are
  awaitable (:py:meth:`PublisherPipelined.confirmed`,
  :py:meth:`PublisherPipelined.flush`) or delivered to listeners. It is
  in a module of its own, :py:mod:`rbfly.streams.publishers.pipelined`, and exported
  here too.
- :py:class:`PublisherBin` and :py:class:`PublisherBinBatch`: raw binary
  messages (no AMQP encoding).

Each message gets a publishing id one higher than the previous one; the
broker's confirmations, sending unconfirmed messages again after a lost
connection (each is stored once) and confirmation timeouts are common to
all of them (:py:mod:`rbfly.streams.publishers.base`).
"""

from __future__ import annotations

import typing as tp

from ...amqp import MessageCtx
from ...types import AMQPAppProperties, AMQPBody
from ..protocol._publish import SubEntryBatch
from ..types import BloomFilterExtract
from .base import PublisherTrait
from .listeners import ConfirmationStatus, ConfirmListener, ErrorListener, StatusListener
from .options import PublisherOptions
from .pipelined import PublisherPipelined

class Publisher(PublisherTrait):
    """
    Publisher sending one AMQP message at a time.
    """
    async def send(self, message: AMQPBody | MessageCtx | SubEntryBatch) -> None:
        """
        Send a message and wait for the broker's confirmation.

        :param message: Message body, or a message with all its sections.
        :raises MessageRejected: When the broker rejected the message.
        """
        await self._publish([message])

    async def send_many(
            self, messages: tp.Iterable[AMQPBody | MessageCtx | SubEntryBatch],
    ) -> None:
        """
        Send messages and wait for the broker's confirmation of all of
        them: encoded in C into as few Publish frames as the connection's
        frame size allows, with one wait for the whole batch (a loop of
        :py:meth:`send` waits a round trip per message).

        :raises MessageRejected: When the broker rejected a message (the
            others are confirmed or rejected too by then).
        """
        await self._publish(list(messages))

class PublisherBatchTrait(PublisherTrait):
    """
    Publisher collecting messages in a batch.
    """
    sub_entry_size: int = 0
    """Messages per sub-entry batch (0: none); see :py:class:`SubEntryBatch`."""
    compression: int | str = 'none'
    """Compression of the sub-entry batches."""

    def __init__(self, *args: tp.Any, **kw: tp.Any) -> None:
        super().__init__(*args, **kw)
        self._data: list[tp.Any] = []

    def _apply(self, options: PublisherOptions) -> None:
        super()._apply(options)
        if options.sub_entry_size is not None:
            self.sub_entry_size = options.sub_entry_size
            self.compression = options.compression

    async def flush(self) -> None:
        """
        Send the collected messages and wait for confirmation of all of
        them. The batch is emptied even when sending fails.

        With ``sub_entry_size``, the messages go as sub-entry batches of
        that many messages (one publishing id each).
        """
        data = self._data
        self._data = []
        size = self.sub_entry_size
        if size > 1 and data:
            compression = self.compression
            data = [
                SubEntryBatch(data[i:i + size], compression) for i in range(0, len(data), size)
            ]
        await self._publish(data)

    async def send_many(self, messages: tp.Iterable[tp.Any]) -> None:
        """
        Add messages to the batch and :py:meth:`flush`: send the batch and
        wait for the confirmation of all of it.
        """
        self._data.extend(messages)
        await self.flush()

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

        :raises ValueError: When ``max_len`` is not a positive int (checked
            when it decides, at no cost per message).
        """
        try:
            full = len(self._data) >= max_len
        except TypeError:
            full = True
        if full:
            if isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < 1:
                raise ValueError('max_len must be a positive int, got {!r}'.format(max_len))
            await self.flush()
        self._data.append(message)

class PublisherBin(PublisherTrait):
    """
    Publisher of raw binary messages (no AMQP 1.0 encoding).
    """
    _amqp = False

    async def send(self, message: bytes | SubEntryBatch) -> None:
        """
        Send a binary message and wait for the broker's confirmation.
        """
        await self._publish([message])

    async def send_many(self, messages: tp.Iterable[bytes | SubEntryBatch]) -> None:
        """
        Send binary messages and wait for the broker's confirmation of all
        of them (see :py:meth:`Publisher.send_many`).
        """
        await self._publish(list(messages))

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
    'ConfirmListener',
    'ConfirmationStatus',
    'ErrorListener',
    'Publisher',
    'PublisherBatch',
    'PublisherBatchFast',
    'PublisherBatchLimit',
    'PublisherBatchMem',
    'PublisherBin',
    'PublisherBinBatch',
    'PublisherPipelined',
    'PublisherTrait',
    'StatusListener',
    'stream_message_ctx',
]
