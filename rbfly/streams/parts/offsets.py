"""
Offsets: where a subscription starts (an :py:class:`~rbfly.streams.Offset`
made an offset specification, reading a stored reference), where it
resumes after a lost connection or a moved member (asking the
application's ``resume`` callback), and offsets stored under a reference
name.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import typing as tp

from ...amqp import get_message_ctx
from ..error import ConnectionLost, NoOffset, OffsetCommitTimeout, StreamsError
from ..names import check_name
from ..offset import Offset, OffsetType
from ..protocol.commands import OffsetSpec, QueryOffset, StoreOffset
from ..protocol.constants import OffsetSpecType
from ..subscriptions.tracking import OffsetTracker
from .connections import Connections
from .ends import Ends

if tp.TYPE_CHECKING:
    from ..aio.connection import StreamsProtocol
    from ..subscriptions.subscription import Subscription

logger = logging.getLogger('rbfly.streams.client')

COMMIT_TIMEOUT = 10.0
"""Seconds a commit waits for the broker to report the offset stored."""

def check_offset(value: object) -> int:
    """An offset to store: an int of 0..2**64-1."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError('offset must be an int, got {!r}'.format(type(value).__name__))
    if not 0 <= value < 2 ** 64:
        raise ValueError('offset must be 0..2**64-1, got {}'.format(value))
    return value

BEFORE_FIRST = 2 ** 64 - 1
"""Offset stored for a group to resume at offset 0: the one "before" it, modulo 2**64."""

class Offsets:
    """
    Offset specifications and stored offsets.

    :param connections: The client's connections (stored offsets are read
        and written on its own).
    :param ends: Where streams end: what an
        :py:meth:`Offset.from_end <rbfly.streams.Offset.from_end>` stands for.
    """
    def __init__(self, connections: Connections, ends: Ends) -> None:
        self._connections = connections
        self._ends = ends

    async def resolve(self, stream: str, offset: Offset) -> Offset:
        """
        An offset the client resolves itself (``Offset.from_end``) as the
        offset it stands for now (``Offset.NEXT`` in a stream with no
        messages); other offsets as they are.
        """
        return await self._ends.resolve(stream, offset)

    async def spec(self, stream: str, offset: Offset) -> tuple[OffsetSpec, int]:
        """
        The offset specification of an offset, and the first offset a
        subscription hands out (records before it, in the first chunk, are
        dropped). A reference with nothing stored starts at its default,
        else at the first message; one storing 2**64 - 1 (-1 as the other clients' signed
        offsets read it) at offset 0.
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
            case Offset(type=OffsetType.REFERENCE, value=str(reference), default=default):
                try:
                    stored = await self.query(stream, reference)
                except NoOffset:
                    if default is not None:  # (a default is no reference: checked)
                        return await self.spec(stream, default)
                    return OffsetSpec.first(), 0
                # 2**64 - 1, "-1", is stored before offset 0 (a group reset
                # to the first message, see parts/groups.py): it wraps to 0
                start = (stored + 1) % 2 ** 64
                return OffsetSpec.offset(start), start
            case Offset(type=OffsetType.FROM_END):  # as it stands now
                return await self.spec(stream, await self.resolve(stream, offset))
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

    async def write(
            self, stream: str, reference: str, value: int | None, wait: bool = False,
            timeout: float = COMMIT_TIMEOUT,
    ) -> None:
        """
        Store an offset under a reference (by default the offset of the
        message being processed; nothing when no message was processed in
        the task yet, as RbFly 0.10); with ``wait``, until the broker
        reports it (:py:meth:`commit`).
        """
        if value is None:
            try:
                value = get_message_ctx().stream_offset
            except LookupError:
                logger.debug('no message processed; offset of %r not stored', reference)
                return
        value = check_offset(value)
        if wait:
            await self.commit(stream, reference, value, timeout)
            return
        protocol = await self._connections.get()
        protocol.send(StoreOffset(reference, stream, value))

    async def commit(
            self, stream: str, reference: str, value: int, timeout: float = COMMIT_TIMEOUT,
            *, reconnect: bool = True, at_least: bool = False,
    ) -> None:
        """
        Store an offset under a reference and return once the broker
        reports it: StoreOffset has no answer, and the broker writes it to
        the stream asynchronously, so the offset is queried until it comes
        back (at 1 ms, then up to 50 ms apart). A connection lost
        meanwhile may have lost the store too: it is sent again on the new
        connection.

        :param reconnect: ``False``: on the client's connection of the
            moment only, and never again after it is lost (raising
            :py:class:`~rbfly.streams.error.ConnectionLost`): a consumer's
            own commits (automatic tracking), which must not open a closed
            client again, nor store late what another consumer of the name
            may have moved on from.
        :param at_least: Done when the broker reports this offset or a
            later one (the tracking's own later stores).
        :raises rbfly.streams.error.OffsetCommitTimeout: When the broker
            does not report it within ``timeout`` seconds.
        """
        value = check_offset(value)
        if not timeout > 0:
            raise ValueError('timeout must be positive, got {!r}'.format(timeout))
        context = 'offset reference {!r} of stream {!r}'.format(reference, stream)
        query = QueryOffset(reference, stream)
        seen: int | None = None
        sent_on: object = None
        delay = 0.001
        try:
            async with asyncio.timeout(timeout):
                while True:
                    protocol = await self._connections.get() if reconnect \
                        else self._current(sent_on)
                    if protocol is not sent_on:
                        protocol.send(StoreOffset(reference, stream, value))
                        sent_on = protocol
                    try:
                        seen = (await protocol.request(query, context)).offset
                    except NoOffset:
                        seen = None
                    except ConnectionLost:
                        if not reconnect:
                            raise
                        continue  # stored again on the next connection
                    if seen == value or (at_least and seen is not None and seen > value):
                        return
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 0.05)
        except TimeoutError as ex:
            raise OffsetCommitTimeout(stream, reference, value, seen, timeout) from ex
        finally:
            logger.debug('offset %d of stream %r under %r: committed %s', value, stream,
                         reference, seen == value)

    def _current(self, sent_on: object) -> StreamsProtocol:
        """The client's connection of the moment, the one a commit began on."""
        protocol = self._connections.protocol
        if protocol is None or not protocol.is_open or sent_on not in (None, protocol):
            raise ConnectionLost('connection lost during the commit')
        return protocol

    async def _own_commit(self, stream: str, reference: str, value: int) -> None:
        """A consumer's own commit (see :py:meth:`commit`)."""
        await self.commit(stream, reference, value, reconnect=False, at_least=True)

    def tracker(self, name: str | None, every: int, interval: float) -> OffsetTracker | None:
        """The automatic offset tracker of a subscription (``None``: not tracked)."""
        if not every:
            return None
        if name is None:
            raise ValueError('automatic offset tracking (store_every) needs a name')
        check_name('consumer', name)
        connections = self._connections
        return OffsetTracker(
            lambda: connections.protocol, name, every, interval, self._own_commit,
        )

    async def resume_spec(self, sub: Subscription) -> OffsetSpec | None:
        """
        Offset specification a subscription subscribes with again: after
        the last chunk received, or what its ``resume`` callback returns
        instead. ``None`` when the callback failed (the subscription ends
        with its error).

        An offset retention removed meanwhile (RabbitMQ 3.11+) is told as
        the subscription's ``on_gap`` says, as at its start (see
        :py:meth:`GapWatch.check_start
        <rbfly.streams.subscriptions.gaps.GapWatch.check_start>`): with
        ``'raise'`` (or a function raising) it ends with that error, once
        the chunks received before are taken.
        """
        spec = await self._resume_spec(sub)
        gaps = sub.gaps
        start = None if spec is None or spec.type != OffsetSpecType.OFFSET else spec.value
        if gaps is None or start is None:
            return spec
        try:
            error = await gaps.check_start(start, 'resume')
        except ConnectionLost:
            raise  # (the recovery tries again)
        except StreamsError as ex:
            # not known now (e.g. the statistics timed out on a busy broker):
            # the subscription resumes unchecked rather than failing; the
            # first chunk after the resume leaves the gap, if any, and the
            # read's check tells it
            logger.info('stream %r: resuming at offset %d unchecked, its first offset'
                        ' not known: %s', sub.stream, start, ex)
            return spec
        if error is not None:
            sub.fail(error)
            return None
        return spec

    async def _resume_spec(self, sub: Subscription) -> OffsetSpec | None:
        """Where a subscription resumes (see :py:meth:`resume_spec`), unchecked."""
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
            # (Offset.from_end: as the stream stands now, a later resume
            # is told the offset it stood for)
            result = await self.resolve(sub.stream, result)
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
