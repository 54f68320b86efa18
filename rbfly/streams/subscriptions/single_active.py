"""
A single active consumer's answers to the broker's consumer updates
(:py:class:`ConsumerUpdates`), a part of a
:py:class:`~rbfly.streams.subscriptions.subscription.Subscription`.

The broker makes one member of a group active at a time, and asks it
(ConsumerUpdate) where it resumes: the member finds the offset
(``Activation``, the client's lookup of the stored offset or the
application's callback) and answers. When the broker makes it inactive,
it hands out nothing more (its chunks are the next member's) and answers
at once.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import typing as tp
from collections.abc import Awaitable, Callable

from ..error import ConnectionLost, OffsetOutOfRange
from ..protocol.commands import OffsetSpec
from ..protocol.constants import OffsetSpecType
from .handoff import HANDOFF_TIMEOUT

if tp.TYPE_CHECKING:
    from ..aio.connection import StreamsProtocol
    from .handoff import HandOff

# the subscriptions' logger, as documented (doc/logging.rst): the module's former name
logger = logging.getLogger('rbfly.streams.subscriber')

Activation: tp.TypeAlias = Callable[[bool, Callable[[], bool]], Awaitable[OffsetSpec]]
"""Finds a single active consumer's offset specification when the broker
makes it active (``True``) or inactive; the second argument tells whether
the subscription is still on the connection the update came on (an
activation on a connection lost meanwhile is void: see
:py:meth:`~rbfly.streams.parts.subscribing.Subscribing.activate`)."""

class Member(tp.Protocol):
    """
    What the consumer updates use of their subscription, a member of a
    single active consumer group (the subscription owns all of it).

    :ivar stream: Its stream.
    :ivar ident: Its id on its connection.
    :ivar protocol: The connection it is subscribed on (``None``: none).
    :ivar group: The iteration's part in hand-offs, if any.
    :ivar activation: What finds the offset to resume from when the
        broker makes it active.
    """
    stream: str
    ident: int
    protocol: StreamsProtocol | None
    group: HandOff | None
    activation: Activation | None

    @property
    def error(self) -> Exception | None:
        """The error that ended the subscription, if any."""
        ...

    def deactivate(self) -> None:
        """Hand out no more chunks: those buffered are another consumer's."""
        ...

    def activated(self, start: int, at_offset: bool) -> None:
        """
        The broker made it active: it reads from ``start`` (``at_offset``:
        an offset it was made active at, where its first chunk is expected;
        else ``0``, the broker's offset specification not one).
        """
        ...

    def update_failed(self, error: Exception) -> None:
        """A consumer update failed: the iteration raises ``error``."""
        ...

class ConsumerUpdates:
    """
    Answers a single active consumer's consumer updates, one at a time (an
    update waits for the one before it to be answered).

    :param member: The subscription the updates are about.
    """
    def __init__(self, member: Member) -> None:
        self.member = member
        self._updating = asyncio.Lock()
        self._tasks: set[asyncio.Future[None]] = set()

    @property
    def under_way(self) -> int:
        """Consumer updates received and not answered yet."""
        return len(self._tasks)

    def on_update(self, protocol: StreamsProtocol, correlation_id: int, active: bool) -> None:
        """
        The broker made the member active or inactive; find the offset to
        resume from and answer.
        """
        task = asyncio.ensure_future(self._consumer_update(protocol, correlation_id, active))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _consumer_update(
            self, protocol: StreamsProtocol, correlation_id: int, active: bool,
    ) -> None:
        async with self._updating:
            await self._update(protocol, correlation_id, active)

    async def _update(
            self, protocol: StreamsProtocol, correlation_id: int, active: bool,
    ) -> None:
        member = self.member
        logger.info('subscription %d to stream %r is %s', member.ident,
                    member.stream, 'active' if active else 'inactive')
        group = member.group
        spec = OffsetSpec.none()
        try:
            if not active:
                # the next active consumer continues from the stored offset;
                # chunks not taken yet are for it, not for this one
                member.deactivate()
                if group is not None:
                    await group.step_down(member.stream)
            if member.activation is not None:
                spec = await self._activate(protocol, active)
        except ConnectionLost:
            if not self._on(protocol):
                return  # subscribed again on a new connection, and asked again
            member.update_failed(ConnectionLost(
                'no connection to find where stream {!r} starts'.format(member.stream)))
            spec = OffsetSpec.none()
        except Exception as ex:  # noqa: BLE001 - also the application's callback; the iterator raises it
            # (a loss its gap check told, on_gap='raise': raised by the read,
            # not also logged as an error)
            level = logging.DEBUG if isinstance(ex, OffsetOutOfRange) else logging.ERROR
            logger.log(level, 'consumer update of stream %r failed: %s', member.stream, ex)
            member.update_failed(ex)
            spec = OffsetSpec.none()
        if not protocol.is_open or protocol is not member.protocol:
            return  # lost (or moved) meanwhile: the broker asks again
        if active and member.error is None:
            value = spec.value
            at_offset = spec.type == OffsetSpecType.OFFSET and isinstance(value, int)
            start = tp.cast(int, value) if at_offset else 0
            if group is not None:
                group.activated(member.stream, start)
            member.activated(start, at_offset)
        protocol.answer_consumer_update(correlation_id, spec)

    async def _activate(self, protocol: StreamsProtocol, active: bool) -> OffsetSpec:
        """
        The activation's offset specification; while the client's own
        connection (where the stored offset is queried) is lost and the
        subscription's is not, asked again for up to
        :py:data:`~rbfly.streams.subscriptions.handoff.HANDOFF_TIMEOUT`
        seconds (the broker holds the group meanwhile).
        """
        activation = self.member.activation
        assert activation is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + HANDOFF_TIMEOUT
        delay = 0.1
        while True:
            try:
                return await activation(active, functools.partial(self._on, protocol))
            except ConnectionLost:
                if not self._on(protocol) or loop.time() + delay > deadline:
                    raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    def _on(self, protocol: StreamsProtocol) -> bool:
        """Whether the member is subscribed on ``protocol``, and it is open."""
        return protocol.is_open and protocol is self.member.protocol

__all__ = ['Activation', 'ConsumerUpdates', 'Member']
