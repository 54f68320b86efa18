"""
Traced publishers: a subclass of the publisher class the application asks
for (``cls``, the default one, a super stream's partitions', the
dead-letter publishers'), made once per class and client, whose entry
points trace and then call the class's own. Made when the client is
instrumented, and only then: a publisher of a client not instrumented is
an instance of its class, at its cost (see doc/perf.rst).

- ``send`` of one message: a ``send`` span (a producer span, child of
  the current one), its context written into the message; it lasts what
  ``send`` lasts (the confirmation with :py:class:`~rbfly.streams.Publisher`,
  the message taken with :py:class:`~rbfly.streams.PublisherPipelined`);
- ``send_many``, ``batch`` and ``flush``: a ``create`` span per message
  (its context written into the message) as it is handed over, and a
  ``send`` span (a client span) per batch sent, linked to them, with
  ``messaging.batch.message_count``; a
  :py:class:`~rbfly.streams.SubEntryBatch` given to ``send`` is a batch of
  its messages;
- raw binary publishers (:py:class:`~rbfly.streams.PublisherBin`) have
  the spans, and no place in their messages for the context.
"""

from __future__ import annotations

import inspect
import typing as tp
from collections.abc import Iterable

from opentelemetry.trace import Link

from ..protocol._publish import SubEntryBatch
from ..publishers.awaited import PublisherBatchTrait
from ..publishers.base import PublisherTrait
from ..semconv import Address
from ._telemetry import CLIENT, PRODUCER, Telemetry

T = tp.TypeVar('T', bound=PublisherTrait)

def address(publisher: PublisherTrait) -> Address:
    """The broker a publisher sends to (``None``: not connected now)."""
    protocol = publisher.protocol
    return None if protocol is None else protocol.address

class Traced:
    """The entry points of a traced publisher of one message a call (and ``send_many``)."""
    _telemetry: tp.ClassVar[Telemetry]
    stream: str
    _amqp: tp.ClassVar[bool]

    def _created(self, messages: Iterable[tp.Any]) -> tuple[list[tp.Any], list[Link]]:
        """The messages of a batch, each with a ``create`` span; and links to the spans."""
        create = self._telemetry.create
        stream = self.stream
        where = address(tp.cast(PublisherTrait, self))
        amqp = self._amqp
        out = []
        links = []
        for message in messages:
            created, link = create(message, stream, where, amqp)
            out.append(created)
            links.append(link)
        return out, links

    async def send(self, message: tp.Any) -> tp.Any:
        telemetry = self._telemetry
        stream = self.stream
        where = address(tp.cast(PublisherTrait, self))
        if type(message) is SubEntryBatch:
            inner, links = self._created(message.messages)
            message = SubEntryBatch(inner, message.compression)
            with telemetry.operation(
                    'send', 'send', stream, where, CLIENT, count=len(inner), links=links,
                    messages=len(inner)):
                return await super().send(message)  # type: ignore[misc]
        with telemetry.operation('send', 'send', stream, where, PRODUCER, messages=1):
            if self._amqp:
                message = telemetry.inject(message)
            return await super().send(message)  # type: ignore[misc]

    async def send_many(self, messages: Iterable[tp.Any]) -> tp.Any:
        batch, links = self._created(messages)
        with self._telemetry.operation(
                'send', 'send_many', self.stream, address(tp.cast(PublisherTrait, self)),
                CLIENT, count=len(batch), links=links, messages=len(batch)):
            return await super().send_many(batch)  # type: ignore[misc]

class TracedBatch:
    """The entry points of a traced batch publisher."""
    _telemetry: tp.ClassVar[Telemetry]
    stream: str
    _amqp: tp.ClassVar[bool]
    _data: list[tp.Any]

    def __init__(self, *args: tp.Any, **kw: tp.Any) -> None:
        super().__init__(*args, **kw)
        # the create spans of the messages batched, linked by the next flush
        self._otel_links: list[Link] = []

    def _create(self, message: tp.Any) -> tuple[tp.Any, Link]:
        where = address(tp.cast(PublisherTrait, self))
        return self._telemetry.create(message, self.stream, where, self._amqp)

    async def flush(self) -> None:
        n = len(self._data)
        if not n:
            await super().flush()  # type: ignore[misc]
            return
        links, self._otel_links = self._otel_links, []
        with self._telemetry.operation(
                'send', 'flush', self.stream, address(tp.cast(PublisherTrait, self)),
                CLIENT, count=n, links=links, messages=n):
            await super().flush()  # type: ignore[misc]

    async def send_many(self, messages: Iterable[tp.Any]) -> None:
        for message in messages:
            created, link = self._create(message)
            self._data.append(created)
            self._otel_links.append(link)
        await self.flush()

    def _batch(self, message: tp.Any) -> None:
        message, link = self._create(message)
        super().batch(message)  # type: ignore[misc]
        self._otel_links.append(link)

    async def _batch_limit(self, message: tp.Any, *, max_len: int) -> None:
        message, link = self._create(message)
        await super().batch(message, max_len=max_len)  # type: ignore[misc]
        # (after: a flush the call made first does not take this message)
        self._otel_links.append(link)

def traced_class(cls: type[T], telemetry: Telemetry) -> type[T]:
    """
    A subclass of a publisher class tracing its entry points, for the
    publishers of an instrumented client.
    """
    namespace: dict[str, tp.Any] = {
        '_telemetry': telemetry, '__module__': cls.__module__, '__qualname__': cls.__qualname__,
        '__doc__': cls.__doc__,
    }
    if issubclass(cls, PublisherBatchTrait):
        bases: tuple[type, ...] = (TracedBatch, cls)
        batch = getattr(cls, 'batch', None)
        if batch is not None:
            namespace['batch'] = TracedBatch._batch_limit if inspect.iscoroutinefunction(batch) \
                else TracedBatch._batch
    else:
        bases = (Traced, cls)
    return tp.cast(type[T], type(cls.__name__, bases, namespace))

__all__ = ['Traced', 'TracedBatch', 'address', 'traced_class']
