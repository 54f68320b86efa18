"""
Reading a stream, or every partition of a super stream, by windows of
messages or by chunks; the methods of
:py:class:`~rbfly.streams.StreamsClient` that subscribe so (see
:py:mod:`.forward`; ``subscribe`` and ``subscribe_super_stream``, typed by
overloads, are the client's own), over :py:mod:`rbfly.streams.consuming`.
The description of every subscription option is here, at
:py:meth:`Reading.subscribe_chunks`.
"""

from __future__ import annotations

import typing as tp

from ..consuming import Consuming, SubscribeArgs
from ..serializers import Codec, OnMismatch, Serializer
from ..subscriptions.chunks import Chunks
from ..subscriptions.windows import Windows

class Reading:
    """
    The facade's methods subscribing by windows and by chunks.

    :param consuming: Builds what a subscribe method returns.
    """
    def __init__(self, consuming: Consuming) -> None:
        self._consuming = consuming

    def subscribe_windows(
            self, stream: str, *, max_messages: int = 1000, max_wait: float | None = 0.1,
            serializer: Serializer | Codec | None = None, on_mismatch: OnMismatch = 'raise',
            **options: tp.Unpack[SubscribeArgs],
    ) -> Windows:
        """
        Subscribe to a stream and iterate over windows of its messages,
        for bulk sinks: lists of at most ``max_messages`` messages
        (:py:class:`~rbfly.amqp.MessageCtx`, with offsets), each as soon as
        it is full, or with what arrived within ``max_wait`` seconds
        (``None``: until full); small chunks are merged, big ones split.
        ``await windows.getmany(max_messages, max_wait)`` takes a window
        of other bounds (possibly empty, as Kafka's ``getmany``).

        A window counts as processed when the next one is asked for, or
        the iteration ends: automatic offset tracking (``store_every``)
        stores, and a single active consumer hands a stream over, after
        the last window processed (see
        :py:mod:`rbfly.streams.subscriptions.windows`). A window whose
        processing raises out of ``async with`` is not processed.

        :param serializer: Windows of objects: each message's body is
            replaced by its deserialized object, once its content type is
            checked (as :py:meth:`subscribe` with a serializer; see
            :doc:`/serializers`); the messages keep their offsets.
        :param on_mismatch: With a serializer: ``'raise'``
            :py:class:`~rbfly.streams.serializers.ContentTypeMismatch` for
            a message of another content type (from ``getmany``, with the
            window: not processed when it leaves ``async with``), or keep
            its ``'raw'`` body.

        The other parameters (``on_decode_error`` too) are those of
        :py:meth:`subscribe_chunks`.
        """
        return self._consuming.windows(
            'subscribe_windows', stream, False, max_messages, max_wait, serializer,
            on_mismatch, options)

    def subscribe_chunks(
            self, stream: str, **options: tp.Unpack[SubscribeArgs],
    ) -> Chunks:
        """
        Subscribe to a stream and receive its messages a chunk at a time:
        each item is a :py:class:`~rbfly.streams.subscriptions.subscription.Chunk`, a list
        of messages with their offset and timestamp set (the cheapest way
        to consume a stream).

        The options (keyword arguments, typed as
        :py:class:`~rbfly.streams.consuming.SubscribeArgs`) are those of
        every subscribe method; one not given has the default said here
        (none, for a callback or a flow strategy).

        :param offset: Where to start reading (default ``Offset.NEXT``).
        :param filter: Filter values (RabbitMQ 3.13+); only messages with
            these values are returned (default: every message).
        :param amqp: Decode AMQP 1.0 messages (the default); otherwise
            bodies are bytes.
        :param on_decode_error: With ``amqp``, what to do with a message
            that is not AMQP 1.0 (published as raw bytes, or by a client
            of another format): ``'raise'``
            :py:class:`~rbfly.error.MessageDecodeError` (naming the stream
            and the message's offset) and end the subscription (the
            default), ``'skip'``
            it, or hand out its bytes as the body (``'raw'``); skipped and
            raw messages are logged (a warning per chunk), and count as
            processed for offset tracking as any other.
        :param on_gap: When retention removed offsets the subscription
            was to read (RabbitMQ 3.11+): it was to start at an offset
            older than the stream's first (a stored offset, or an offset
            given, of messages retention removed since), to resume at one
            after a lost connection, or retention overtook it while it
            read: ``'warn'`` and go on (the default; counted in the
            ``messages_lost`` metric), ``'raise'``
            :py:class:`~rbfly.streams.error.OffsetOutOfRange` (at the
            next message or chunk asked for, when overtaken), or a
            function called with that error (it goes on unless the
            function raises).
        :param timeout: Raise ``TimeoutError`` when no chunk arrives for
            this many seconds (0, the default: wait forever).
        :param processing_timeout: Seconds the application may hold a
            message (a window, a chunk, handlers in flight) without moving
            on (default ``None``: no limit; Kafka's
            ``max.poll.interval.ms``): after them the subscription commits
            what was processed and ends, so that another member of its group
            takes over, and the iteration raises
            :py:class:`~rbfly.streams.error.ProcessingStuck` at its next step.
        :param name: Consumer name, the group of a single active consumer
            (default: none).
        :param single_active: Single active consumer (RabbitMQ 3.11+; off
            by default): of
            the subscriptions named ``name`` (a consumer group), the broker
            sends to one at a time; the one it activates starts after the
            offset stored under ``name``, or at ``offset`` when none is
            stored. With automatic tracking, a hand-off is exact: the
            consumer stepping down commits the offset of the last message
            processed before the next one starts (see
            :py:mod:`rbfly.streams.subscriptions.handoff`).
        :param consumer_update: Called with a
            :py:class:`~rbfly.streams.subscriptions.handoff.ConsumerUpdateContext`
            (the stream or partition, the name, whether active, the stored
            offset; true when active) when the broker makes this single
            active consumer active or inactive; may return (or be a
            coroutine returning) the :py:class:`Offset` to start at
            instead of the context's ``offset``.
        :param store_every: Automatic offset tracking: store the offset of
            the last processed chunk under ``name`` once this many messages
            are processed (0, the default: off), ``store_interval`` seconds after the
            last chunk, and at the end (see :py:mod:`rbfly.streams.subscriptions.tracking`).
        :param store_interval: Seconds after which a processed chunk's
            offset is stored anyway (default 5).
        :param credit: Chunks the broker may send ahead (default: the client's).
        :param buffer_bytes: Bytes of chunks it may hold (default: the client's).
        :param resume: Called with the stream and the :py:class:`Offset`
            the subscription would resume from (after the last chunk
            received; chunks received are handed out meanwhile) before it
            subscribes again after a lost connection or a moved member; may
            return (or be a coroutine returning) another one (chunks not
            handed out are then dropped). Its exception ends it.
        :param on_state: Called with a
            :py:class:`~rbfly.streams.StateChange` at each change of the
            subscription's state (opening, open, recovering, closed, each
            with its reason; see :py:mod:`rbfly.streams.lifecycle`).
        :param flow: A flow strategy counting chunks instead of bytes:
            :py:class:`~rbfly.streams.CreditOnTake`,
            :py:class:`~rbfly.streams.CreditWhenProcessed` or
            :py:class:`~rbfly.streams.ManualCredit` (see
            :py:mod:`rbfly.streams.subscriptions.flow`); it replaces ``credit`` and
            ``buffer_bytes``.
        :param stop_at_end: Read up to the end of the stream as it is at
            the call (its last chunk of messages; RabbitMQ 4.3+, which
            resolves offset specifications) and stop: a bounded replay.
            Nothing to read (an empty stream, ``Offset.NEXT``) ends the
            iteration at once. Not with a ``filter`` (the broker may skip
            the last chunk). Off by default.
        """
        return self._consuming.chunks('subscribe_chunks', stream, False, options)

    def subscribe_super_stream_windows(
            self, super_stream: str, *, max_messages: int = 1000, max_wait: float | None = 0.1,
            serializer: Serializer | Codec | None = None, on_mismatch: OnMismatch = 'raise',
            **options: tp.Unpack[SubscribeArgs],
    ) -> Windows:
        """
        Subscribe to every partition of a super stream and iterate over
        windows of their messages (see :py:meth:`subscribe_windows`; a
        window may hold messages of several partitions, those of one
        partition in order; ``serializer``, ``on_mismatch`` and
        ``on_decode_error`` as there).
        """
        return self._consuming.windows(
            'subscribe_super_stream_windows', super_stream, True, max_messages, max_wait,
            serializer, on_mismatch, options)

    def subscribe_super_stream_chunks(
            self, super_stream: str, **options: tp.Unpack[SubscribeArgs],
    ) -> Chunks:
        """
        Subscribe to every partition of a super stream and receive their
        chunks as they come (``chunk.stream`` is the partition).

        With ``single_active`` (RabbitMQ 3.11+), the subscriptions named
        ``name`` in all clients share the partitions, one active per
        partition (a consumer group): a member activated on a partition
        starts after the offset stored under ``name`` for it; automatic
        tracking stores per partition, and commits on each hand-off (store
        offsets yourself with ``commit_offset(chunk.stream, name, ...)``).

        The other parameters are those of :py:meth:`subscribe_chunks`
        (``resume`` is called with the partition).
        """
        return self._consuming.chunks(
            'subscribe_super_stream_chunks', super_stream, True, options)

__all__ = ['Reading']
