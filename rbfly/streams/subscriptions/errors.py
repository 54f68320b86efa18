"""
What concurrent handlers (:py:mod:`rbfly.streams.subscriptions.handlers`)
do with a message whose handler raised: retry it with a backoff, then stop
the run, skip the message, or publish it to a dead-letter stream
(:py:class:`OnError`).

A dead letter is the message as it came (body and sections), with three
application properties added: ``x-rbfly-error`` (the error's type and
text), ``x-rbfly-source-stream`` and ``x-rbfly-source-offset``. It is
published exactly once, across restarts: by a named publisher per source
stream (the consumer's name and the stream), with the source offset plus
one as its publishing id, once every message of the stream before it is
done, so the ids only grow and the broker drops a dead letter sent again
after a restart (the message read again, failing again). A dead letter
counts as processed once the broker confirmed it.
"""

from __future__ import annotations

import contextlib
import dataclasses as dtc
import logging
import typing as tp
from collections.abc import Callable

from ...amqp import MessageCtx

logger = logging.getLogger('rbfly.streams.subscriber')

Then: tp.TypeAlias = tp.Literal['stop', 'skip', 'dead-letter']

@dtc.dataclass(frozen=True, slots=True)
class OnError:
    """
    The error policy of concurrent handlers.

    :ivar retries: Attempts after the first, each after a backoff.
    :ivar backoff: Seconds before the first retry, doubled before each
        next one, up to ``max_backoff``.
    :ivar max_backoff: Seconds between retries at most.
    :ivar then: When the retries failed too: ``'stop'`` the run (raise
        the error; the message is not committed), ``'skip'`` the message
        (a warning, counted), or ``'dead-letter'``: publish it to the
        ``dead_letter`` stream.
    :ivar dead_letter: The dead-letter stream (``then='dead-letter'``).
    """
    retries: int = 0
    backoff: float = 0.1
    max_backoff: float = 10.0
    then: Then = 'stop'
    dead_letter: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) \
                or self.retries < 0:
            raise ValueError('retries must be an int, 0 or more, got {!r}'.format(self.retries))
        for name in ('backoff', 'max_backoff'):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) \
                    or not 0 <= value < float('inf'):
                raise ValueError('{} must be seconds, 0 or more, got {!r}'.format(name, value))
        if self.then not in ('stop', 'skip', 'dead-letter'):
            raise ValueError("then must be 'stop', 'skip' or 'dead-letter', got {!r}".format(
                self.then))
        if (self.then == 'dead-letter') != (self.dead_letter is not None):
            raise ValueError("a dead_letter stream goes with then='dead-letter', and only with it")

    def delay(self, attempt: int) -> float:
        """Seconds before retry ``attempt`` (1, 2, ...)."""
        return float(min(self.max_backoff, self.backoff * 2 ** (attempt - 1)))

STOP = OnError()
"""The default: a handler's error stops the run."""

class Send(tp.Protocol):
    """Sends a message and returns once the broker confirmed it."""
    async def send(self, message: MessageCtx) -> None: ...

Open: tp.TypeAlias = Callable[[str, str], tp.AsyncContextManager[Send]]
"""Opens a named publisher to a stream: ``(stream, name)``."""

def dead_letter_of(msg: MessageCtx, error: BaseException) -> MessageCtx:
    """A message as it came, with the error and where it came from."""
    properties = dict(msg.app_properties)
    properties['x-rbfly-error'] = '{}: {}'.format(type(error).__name__, error)
    properties['x-rbfly-source-stream'] = msg.stream or ''
    properties['x-rbfly-source-offset'] = msg.stream_offset
    return MessageCtx(
        msg.body, msg.header, None, msg.annotations, msg.properties, properties, msg.footer,
        stream_publish_id=msg.stream_offset + 1,
    )

class DeadLetters:
    """
    The dead-letter publishers of a run: one per source stream, named
    ``<name>:<source stream>``, opened on first use, closed with the run.

    :param open: Opens a named publisher awaiting each confirmation.
    :param stream: The dead-letter stream.
    :param name: The consumer's name.
    """
    def __init__(self, open: Open, stream: str, name: str) -> None:
        self._open = open
        self.stream = stream
        self._name = name
        self._publishers: dict[str, Send] = {}
        self._stack = contextlib.AsyncExitStack()
        self.sent = 0

    async def send(self, msg: MessageCtx, error: BaseException) -> None:
        """Publish a dead letter and return once the broker has it."""
        source = msg.stream or ''
        publisher = self._publishers.get(source)
        if publisher is None:
            publisher = await self._stack.enter_async_context(
                self._open(self.stream, '{}:{}'.format(self._name, source)))
            self._publishers[source] = publisher
        await publisher.send(dead_letter_of(msg, error))
        self.sent += 1
        logger.warning('message at offset %d of stream %r dead-lettered to %r: %s',
                       msg.stream_offset, source, self.stream, error)

    async def close(self) -> None:
        await self._stack.aclose()

__all__ = ['STOP', 'DeadLetters', 'OnError', 'Open', 'Send', 'Then', 'dead_letter_of']
