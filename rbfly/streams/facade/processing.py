"""
Processing: an async handler run over the messages of a stream, or of
every partition of a super stream, with messages in flight, exact commits
and an error policy; the methods of
:py:class:`~rbfly.streams.StreamsClient` that run it, or make a run to
steer (see :py:mod:`.forward`), over :py:mod:`rbfly.streams.consuming`
and :py:mod:`rbfly.streams.subscriptions.handlers`.
"""

from __future__ import annotations

import typing as tp

from ..consuming import Consuming, SubscribeArgs
from ..subscriptions.errors import STOP, OnError, Open
from ..subscriptions.handlers import DRAIN_TIMEOUT, Handler, Handlers, Key

class Processing:
    """
    The facade's methods running concurrent handlers.

    :param consuming: Builds the runs of handlers.
    :param dead_letter_publisher: Opens a named publisher of dead letters
        (``on_error`` with a dead-letter stream).
    """
    def __init__(self, consuming: Consuming, dead_letter_publisher: Open) -> None:
        self._consuming = consuming
        self._dead_letter_publisher = dead_letter_publisher

    async def process(
            self, stream: str, handler: Handler, *, concurrency: int = 32,
            key: Key | None = None, drain_timeout: float = DRAIN_TIMEOUT,
            on_error: OnError = STOP, **options: tp.Unpack[SubscribeArgs],
    ) -> int:
        """
        Run an async handler over the messages of a stream, with up to
        ``concurrency`` messages in flight, and return the count handled
        when the subscription ends (``stop_at_end``), or raise the first
        error of a handler once those in flight are done. Cancelled, it
        drains the handlers in flight (``drain_timeout`` seconds), commits
        and unsubscribes.

        With automatic tracking (``name``, ``store_every``), the offset
        stored is the one before the lowest message of the stream not
        done yet: nothing is committed before it is handled, whatever the
        order handlers finish in (see
        :py:mod:`rbfly.streams.subscriptions.handlers`).

        :param handler: An async function of a
            :py:class:`~rbfly.amqp.MessageCtx` (body, sections, stream,
            offset).
        :param concurrency: Messages in flight at most (1..65535).
        :param key: A function of a message: messages of a key are
            handled one after the other, in stream order (``None``: any
            order).
        :param drain_timeout: Seconds the end waits for the handlers in
            flight.
        :param on_error: What a handler's error does: retries with a
            backoff, then stop (the default), skip the message, or publish
            it to a dead-letter stream exactly once (needs ``name``; see
            :py:class:`~rbfly.streams.subscriptions.errors.OnError`).

        The other parameters are those of :py:meth:`subscribe_chunks`.
        """
        return await self._consuming.handlers(
            'process', stream, False, handler, concurrency, key, drain_timeout, on_error,
            self._dead_letter_publisher, options,
        ).run()

    async def process_super_stream(
            self, super_stream: str, handler: Handler, *, concurrency: int = 32,
            key: Key | None = None, drain_timeout: float = DRAIN_TIMEOUT,
            on_error: OnError = STOP, **options: tp.Unpack[SubscribeArgs],
    ) -> int:
        """
        Run an async handler over the messages of every partition of a
        super stream (see :py:meth:`process`); with ``single_active``, as
        a member of a consumer group: a hand-off waits for the messages in
        flight of the partition it moves.
        """
        return await self._consuming.handlers(
            'process_super_stream', super_stream, True, handler, concurrency, key,
            drain_timeout, on_error, self._dead_letter_publisher, options,
        ).run()

    def processor(
            self, stream: str, handler: Handler, *, concurrency: int = 32,
            key: Key | None = None, drain_timeout: float = DRAIN_TIMEOUT,
            on_error: OnError = STOP, **options: tp.Unpack[SubscribeArgs],
    ) -> Handlers:
        """
        A run of concurrent handlers over a stream, as :py:meth:`process`
        runs it, not started: ``await processor.run()`` runs it; meanwhile
        its ``pause(*streams)``, ``resume(*streams)``, ``paused()`` and
        ``await seek(stream, offset)`` pause the stream or move it (see
        :py:class:`~rbfly.streams.subscriptions.handlers.Handlers`).
        """
        return self._consuming.handlers(
            'processor', stream, False, handler, concurrency, key, drain_timeout, on_error,
            self._dead_letter_publisher, options,
        )

    def super_stream_processor(
            self, super_stream: str, handler: Handler, *, concurrency: int = 32,
            key: Key | None = None, drain_timeout: float = DRAIN_TIMEOUT,
            on_error: OnError = STOP, **options: tp.Unpack[SubscribeArgs],
    ) -> Handlers:
        """
        A run of concurrent handlers over every partition of a super
        stream, as :py:meth:`process_super_stream` runs it, not started
        (see :py:meth:`processor`): a partition can be paused or moved
        while the others go on.
        """
        return self._consuming.handlers(
            'super_stream_processor', super_stream, True, handler, concurrency, key,
            drain_timeout, on_error, self._dead_letter_publisher, options,
        )

__all__ = ['Processing']
