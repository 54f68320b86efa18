"""
Offsets: where a subscription starts (an :py:class:`~rbfly.streams.Offset`
made an offset specification, reading a stored reference), where it
resumes after a lost connection or a moved member (asking the
application's ``resume`` callback), and offsets stored under a reference
name.
"""

from __future__ import annotations

import inspect
import logging
import typing as tp

from ...amqp import get_message_ctx
from ..error import NoOffset, StreamsError
from ..names import check_name
from ..offset import Offset, OffsetType
from ..protocol.commands import OffsetSpec, QueryOffset, StoreOffset
from ..subscriptions.tracking import OffsetTracker
from .connections import Connections

if tp.TYPE_CHECKING:
    from ..subscriptions.subscription import Subscription

logger = logging.getLogger('rbfly.streams.client')

class Offsets:
    """
    Offset specifications and stored offsets.

    :param connections: The client's connections (stored offsets are read
        and written on its own).
    """
    def __init__(self, connections: Connections) -> None:
        self._connections = connections

    async def spec(self, stream: str, offset: Offset) -> tuple[OffsetSpec, int]:
        """
        The offset specification of an offset, and the first offset a
        subscription hands out (records before it, in the first chunk, are
        dropped). A reference with nothing stored starts at the first
        message.
        """
        # (the patterns give each type's value its class, which Offset
        # checked when it was made)
        match offset:
            case Offset(type=OffsetType.FIRST):
                return OffsetSpec.first(), 0
            case Offset(type=OffsetType.LAST):
                return OffsetSpec.last(), 0
            case Offset(type=OffsetType.NEXT):
                return OffsetSpec.next(), 0
            case Offset(type=OffsetType.OFFSET, value=int(value)):
                return OffsetSpec.offset(value), value
            case Offset(type=OffsetType.TIMESTAMP, value=int() | float() as seconds):
                return OffsetSpec.timestamp(int(seconds * 1000)), 0
            case Offset(type=OffsetType.REFERENCE, value=str(reference)):
                try:
                    stored = await self.query(stream, reference)
                except NoOffset:
                    return OffsetSpec.first(), 0
                return OffsetSpec.offset(stored + 1), stored + 1
        raise ValueError('not a valid offset: {!r}'.format(offset))

    async def query(self, stream: str, reference: str) -> int:
        """
        The offset stored under a reference.

        :raises rbfly.streams.error.NoOffset: When nothing is stored.
        """
        response = await self._connections.call(
            QueryOffset(reference, stream),
            'offset reference {!r} of stream {!r}'.format(reference, stream),
        )
        return response.offset

    async def write(self, stream: str, reference: str, value: int | None) -> None:
        """
        Store an offset under a reference (by default the offset of the
        message being processed; nothing when no message was processed in
        the task yet, as RbFly 0.10).
        """
        if value is None:
            try:
                value = get_message_ctx().stream_offset
            except LookupError:
                logger.debug('no message processed; offset of %r not stored', reference)
                return
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError('offset must be an int, got {!r}'.format(type(value).__name__))
        if not 0 <= value < 2 ** 64:
            raise ValueError('offset must be 0..2**64-1, got {}'.format(value))
        protocol = await self._connections.get()
        protocol.send(StoreOffset(reference, stream, value))

    def tracker(self, name: str | None, every: int, interval: float) -> OffsetTracker | None:
        """The automatic offset tracker of a subscription (``None``: not tracked)."""
        if not every:
            return None
        if name is None:
            raise ValueError('automatic offset tracking (store_every) needs a name')
        check_name('consumer', name)
        connections = self._connections
        return OffsetTracker(lambda: connections.protocol, name, every, interval)

    async def resume_spec(self, sub: Subscription) -> OffsetSpec | None:
        """
        Offset specification a subscription subscribes with again: after
        the last chunk received, or what its ``resume`` callback returns
        instead. ``None`` when the callback failed (the subscription ends
        with its error).
        """
        spec = sub.resume_spec()
        if sub.resume is None:
            return spec
        # after a chunk received, it resumes at an offset
        received = spec.value if sub.received_offset is not None else None
        current = sub.resume_offset if received is None \
            else Offset.offset(received)
        try:
            result = sub.resume(sub.stream, current)
            if inspect.isawaitable(result):
                result = await result
            if result is None or result == current:
                return spec
            if not isinstance(result, Offset):
                raise TypeError('resume must return an Offset or None, got {!r}'.format(result))
            spec, start = await self.spec(sub.stream, result)
        except StreamsError:
            raise  # a lost connection, a deleted stream: the recovery's to handle
        except Exception as ex:  # noqa: BLE001 - the application's callback; the iterator raises it
            logger.error('resume callback of the subscription to stream %r failed: %s',
                         sub.stream, ex)
            sub.fail(ex)
            return None
        logger.info('subscription to stream %r resumes at %s instead of %s',
                    sub.stream, result, current)
        sub.restart(spec, start, result)
        return spec

__all__ = ['Offsets']
