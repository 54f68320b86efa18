"""
Publishers given a serializer: a subclass of the publisher class asked
for, made once per class (:py:func:`serializing_class`), whose entry
points taking messages encode each object with the publisher's codec
(:py:class:`~rbfly.streams.serializers.Codec`) and hand the message to
the class's own. The client makes a publisher of it when given a
serializer, and only then: a publisher without one is an instance of its
class, whose ``send``, ``batch`` and ``send_many`` are the class's own
methods, at their cost.

A publisher given a serializer is an instance of its class
(``isinstance(publisher, PublisherPipelined)`` holds), named as it is;
only ``type(publisher)`` is the subclass. With an instrumented client
(:py:mod:`rbfly.streams.otel`) the subclass is made of the traced class:
a message is encoded first, then traced.

A subclass has the entry points of its class, no other: ``send`` when the
class has it, ``batch`` when the class has it (``await`` it when the
class's is a coroutine, :py:class:`~rbfly.streams.PublisherBatchLimit`'s),
and ``send_many``.
"""

from __future__ import annotations

import typing as tp
from collections.abc import Iterable

from .base import PublisherTrait
from .contracts import EntryPoints
from .options import PublisherOptions

if tp.TYPE_CHECKING:
    from ..serializers import Codec

T = tp.TypeVar('T', bound=PublisherTrait)

class Serializing(PublisherTrait):
    """
    What every serializing publisher has: its codec, and ``send_many``
    encoding each message.
    """
    _serializes = True
    _codec: Codec

    def _apply(self, options: PublisherOptions) -> None:
        if options.serializer is None:
            raise TypeError('a serializing publisher needs a serializer')
        self._codec = options.serializer
        super()._apply(options)

    def send_many(self, messages: Iterable[object], /) -> tp.Awaitable[int | None]:
        """
        Send objects, each serialized into a message (see
        :py:meth:`~rbfly.streams.serializers.Codec.message`), as the
        publisher class's ``send_many`` sends messages.
        """
        message = self._codec.message
        entry = tp.cast(EntryPoints, super())
        return entry.send_many([message(m) for m in messages])

class SerializingSend(Serializing):
    """A serializing publisher's ``send``."""
    def send(self, message: object, /, *args: object, **kw: object) -> tp.Awaitable[int | None]:
        """
        Send an object serialized into a message (see
        :py:meth:`~rbfly.streams.serializers.Codec.message`), as the
        publisher class's ``send`` sends a message.
        """
        entry = tp.cast(EntryPoints, super())
        return entry.send(self._codec.message(message), *args, **kw)

class SerializingBatch(Serializing):
    """A serializing publisher's ``batch``."""
    def batch(self, message: object, /, *args: object, **kw: object) -> object:
        """
        Add an object serialized into a message to the batch (see
        :py:meth:`~rbfly.streams.serializers.Codec.message`), as the
        publisher class's ``batch`` adds a message.
        """
        entry = tp.cast(EntryPoints, super())
        return entry.batch(self._codec.message(message), *args, **kw)

def serializing_class(cls: type[T]) -> type[T]:
    """
    The serializing subclass of a publisher class, made once (kept in the
    class's own namespace, as ``_serializing_class``).

    :raises ValueError: For a binary publisher class (no AMQP properties
        to name the content type in).
    """
    if cls._serializes:  # (serializing already: a message is encoded once)
        return cls
    found = cls.__dict__.get('_serializing_class')
    if found is not None:
        return tp.cast(type[T], found)
    if not cls._amqp:
        raise ValueError('a serializer sets the content type of AMQP messages;'
                         ' {} sends raw bytes'.format(cls.__name__))
    bases: list[type] = []
    if hasattr(cls, 'send'):
        bases.append(SerializingSend)
    if hasattr(cls, 'batch'):
        bases.append(SerializingBatch)
    if not bases:
        bases.append(Serializing)
    namespace = {
        '__module__': cls.__module__, '__qualname__': cls.__qualname__, '__doc__': cls.__doc__,
    }
    made = type(cls.__name__, (*bases, cls), namespace)
    type.__setattr__(cls, '_serializing_class', made)
    return tp.cast(type[T], made)

__all__ = ['Serializing', 'SerializingBatch', 'SerializingSend', 'serializing_class']
