"""
Consume, transform, produce: read a stream, write what a function makes of
each message to another, and survive restarts without losing or
duplicating a message.

Exactly once, from three things the broker already has: a named
(deduplicating) publisher, publishing ids chosen by the application, and
the last publishing id the broker stored for the name. The output of the
input message at offset ``n`` is published with publishing id ``n + 1``.
After a crash, :py:func:`pipe` asks the broker for the last id stored for
its name, ``k``, and reads the input from offset ``k``: every output
before is stored, and an output sent again (its confirmation was lost with
the process) is dropped by the broker's deduplication. No offset store is
needed; the output stream is the record of the progress.

The transformation makes one output message of an input message, or none
(``None``: the input is skipped; after a restart, the skipped messages
since the last output are read, and skipped, again). It must be
deterministic for a message read twice to give the same output.
"""

from __future__ import annotations

import inspect
import logging
import typing as tp
from collections.abc import Awaitable, Callable

from ..amqp import MessageCtx, get_message_ctx
from ..types import AMQPBody
from .names import check_name
from .offset import Offset
from .publishers.pipelined import PublisherPipelined

if tp.TYPE_CHECKING:
    from .client import StreamsClient

logger = logging.getLogger('rbfly.streams.pipe')

Output: tp.TypeAlias = 'AMQPBody | MessageCtx | None'
Transform: tp.TypeAlias = Callable[[MessageCtx], 'Output | Awaitable[Output]']
"""A function of an input message (with its sections and offset) returning the output."""

async def resume_offset(client: StreamsClient, target: str, name: str) -> int:
    """
    The offset of the input stream where a pipe named ``name`` writing
    to ``target`` continues: the input offset after its last output stored.
    """
    return await client.query_publisher_sequence(target, name)

async def pipe(
        client: StreamsClient,
        source: str,
        target: str,
        transform: Transform,
        *,
        name: str,
        window: int = 1_000,
        stop_at_end: bool = False,
) -> int:
    """
    Read ``source`` from where the pipe named ``name`` stopped (its first
    message the first time), and publish ``transform(message)`` of each
    message to ``target``, each exactly once.

    Runs until cancelled (it returns once its outputs are confirmed), or
    with ``stop_at_end`` (RabbitMQ 4.3+) until the end of ``source`` as of
    the call.

    :param transform: The output of an input message: an AMQP body, a
        :py:class:`~rbfly.amqp.MessageCtx`, ``None`` to skip it; or a
        coroutine returning one.
    :param name: The pipe's name: the name of its publisher to ``target``
        (one pipe writes to ``target`` under a name at a time).
    :param window: Outputs that may wait for confirmation.
    :return: How many outputs were published (and confirmed).
    :raises Exception: What ``transform`` raises ends the pipe (the
        outputs before it are sent; a restart continues after the last one
        stored).
    """
    check_name('stream', source)
    check_name('stream', target)
    check_name('publisher', name)
    if not callable(transform):
        raise TypeError('transform must be callable, got {!r}'.format(transform))
    start = await resume_offset(client, target, name)
    logger.info('pipe %r: %r from offset %d to %r', name, source, start, target)
    published = 0
    async with client.publisher(
            target, name=name, cls=PublisherPipelined, window=window) as publisher:
        async for _ in client.subscribe(
                source, offset=Offset.offset(start), stop_at_end=stop_at_end):
            ctx = get_message_ctx()
            result = transform(ctx)
            if inspect.isawaitable(result):
                result = await result
            if result is None:
                continue
            pid = ctx.stream_offset + 1
            if type(result) is MessageCtx:
                result.stream_publish_id = pid
                message = result
            else:
                message = MessageCtx(tp.cast(AMQPBody, result), stream_publish_id=pid)
            await publisher.send(message)
            published += 1
        await publisher.flush()
    return published

__all__ = ['Transform', 'pipe', 'resume_offset']
