"""
Where a reader's chunks come from: the subscriptions of a stream, or of
the partitions of a super stream, subscribed as the reading starts,
taken from in turn, and ended with it.

A :py:class:`Subscriptions` source is what the reader's progress
(:py:mod:`rbfly.streams.subscriptions.progress`) takes chunks from:
:py:meth:`~Subscriptions.poll` takes one without waiting, and
:py:meth:`~Subscriptions.wait` waits until one may be there. Nothing is
taken while waiting, so a wait cancelled loses nothing.

A subscription that stops at the end of its stream (``stop_at_end``)
leaves the turn once its last chunk is taken; the messages at or after
the end are dropped. The read ends once the gap checks its subscriptions
owe answered (:py:meth:`Subscriptions.settle`): a loss the last chunks
left is told before the end. A seek waits for the check the subscription
it replaces owes, and a loss told there ends the read at its next take
(``on_gap='raise'``). With a filter, the messages the broker's Bloom
filter let through and the filter does not match are dropped too.

A read looks for a subscription whose broker reader retention stalled
(see :py:mod:`rbfly.streams.subscriptions.stalled`) as it takes a chunk
and as it begins to wait, at most once a second, and every
:py:data:`~.stalled.STALL_AFTER` seconds while it waits, and has it
subscribed again: a read of a super stream too busy with one partition
to wait looks at the others too.
"""

from __future__ import annotations

import asyncio
import typing as tp
from collections.abc import Awaitable, Callable

from ...amqp import MessageCtx
from ..offset import Offset
from ..protocol.constants import OffsetSpecType
from ..types import MessageFilter
from .flow import ManualCredit
from .stalled import StallCheck
from .subscription import Chunk, Subscription, wait_any

if tp.TYPE_CHECKING:
    from .handoff import HandOff

Make: tp.TypeAlias = Callable[[], Awaitable[list[Subscription]]]
"""Builds the subscriptions of a read (one, or a super stream's partitions)."""

Remake: tp.TypeAlias = Callable[[str, Offset], Awaitable[Subscription]]
"""Builds a subscription of a stream of a read again, at another offset (a seek)."""

class Source(tp.Protocol):
    """What a reader's progress takes chunks from."""

    async def open(self, group: HandOff | None) -> None:
        """Subscribe (a single active consumer's hand-offs to ``group``)."""
        ...

    def poll(self) -> Chunk | None:
        """
        The next chunk, if one is there (possibly emptied by a filter or
        the end); ``None`` otherwise.

        :raises Exception: The error that ended a subscription.
        """
        ...

    @property
    def finished(self) -> bool:
        """Whether every subscription reached its end (``stop_at_end``)."""
        ...

    async def settle(self) -> None:
        """
        Every subscription finished (see :py:attr:`finished`): wait for
        the gap checks they owe (the read does not end before a loss is
        told).

        :raises rbfly.streams.error.OffsetOutOfRange: As a subscription's
            ``on_gap`` says.
        """
        ...

    async def wait(self, timeout: float | None) -> None:
        """
        Wait until :py:meth:`poll` may have a chunk.

        :raises TimeoutError: After ``timeout`` seconds.
        """
        ...

    def end(self) -> None:
        """End the subscriptions (unsubscribe)."""
        ...

    @property
    def streams(self) -> list[str]:
        """The streams read (empty before :py:meth:`open`)."""
        ...

    def pause(self, stream: str, paused: bool) -> None:
        """Take nothing from ``stream``'s subscription while ``paused``; grant it no credit."""
        ...

    async def seek(
            self, stream: str, offset: Offset, moved: Callable[[int | None], None],
    ) -> None:
        """
        Subscribe to ``stream`` again at ``offset``, its chunks received
        before dropped. Once the new subscription is made (its options
        checked against the broker), before the old one ends, ``moved``
        is called with the offset it starts at, when the offset
        specification gives one (else ``None``).

        :raises ValueError: For a read that cannot seek (single active
            consumers).
        :raises ValueError: For a stream not read.
        """
        ...

def post_filter(flt: MessageFilter, messages: list[MessageCtx]) -> list[MessageCtx]:
    """
    The messages a filter matches: the broker filters chunks with a Bloom
    filter; this drops its false positives.
    """
    extract = flt.extract
    values = flt.values
    unfiltered = flt.match_unfiltered
    result = []
    for m in messages:
        value = extract(m)
        if value in values or (unfiltered and value is None):
            result.append(m)
    return result

class Subscriptions:
    """
    The subscriptions of a read, taken from in turn.

    :param make: Builds the subscriptions (checked against the broker).
    :param place: Places a subscription on a connection (subscribes).
    :param end: Ends a subscription (unsubscribes).
    :param filter: The subscriptions' filter, if any.
    :param remake: Builds a subscription again at another offset (a
        seek); ``None``: a read that cannot seek.
    :param stalls: Checks the subscriptions waited on for a broker
        reader stalled; ``None``: not checked.
    """
    def __init__(
            self, make: Make, place: Callable[[Subscription], Awaitable[None]],
            end: Callable[[Subscription], None], filter: MessageFilter | None,
            remake: Remake | None = None, stalls: StallCheck | None = None,
    ) -> None:
        self._make = make
        self._place = place
        self._end = end
        self._filter = filter
        self._remake = remake
        self._stalls = stalls
        self.subs: list[Subscription] = []
        # not finished, and of those, the ones taken from (not paused)
        self._active: list[Subscription] = []
        self._polled: list[Subscription] = []
        self._turn = 0
        self._paused: set[str] = set()
        self._ended = False
        self._seeking: asyncio.Lock | None = None
        # the subscriptions a take waits on now; a wait on paused
        # subscriptions alone, woken by a resume
        self._waiting: list[Subscription] = []
        self._resumed: asyncio.Future[None] | None = None

    async def open(self, group: HandOff | None) -> None:
        subs = self.subs = await self._make()
        for sub in subs:
            sub.group = group
        try:
            for sub in subs:
                await self._place(sub)
        except BaseException:
            self.end()
            raise
        for sub in subs:
            sub.paused = sub.stream in self._paused
        self._active = [s for s in subs if not s.finished]
        self._polled = [s for s in self._active if not s.paused]

    @property
    def finished(self) -> bool:
        return not self._active

    @property
    def streams(self) -> list[str]:
        return [s.stream for s in self.subs]

    def poll(self) -> Chunk | None:
        polled = self._polled
        n = len(polled)
        turn = self._turn
        for i in range(n):
            sub = polled[(turn + i) % n]
            chunk = sub.poll()
            if chunk is not None:
                # (a read too busy to wait looks at the others: see wait)
                if n > 1 and self._stalls is not None:
                    self._stalls.poke(polled)
                self._turn = (turn + i + 1) % n
                sub.bound(chunk)
                if sub.finished:
                    polled.remove(sub)
                    self._active.remove(sub)
                if self._filter is not None:
                    _filter(self._filter, chunk)
                return chunk
        return None

    async def settle(self) -> None:
        # all at once: a partition's error does not leave the losses of
        # the others untold (nor uncounted); the first error raised after
        results = await asyncio.gather(
            *(sub.settle() for sub in self.subs), return_exceptions=True,
        )
        for result in results:
            if isinstance(result, asyncio.CancelledError):
                raise result
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def wait(self, timeout: float | None) -> None:
        stalls = self._stalls
        if stalls is None:
            await self._wait(timeout)
            return
        # in steps of the stall check's (see the module)
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            stalls.poke(self._polled)  # (at most once a second)
            left = None if deadline is None else deadline - loop.time()
            last = left is not None and left <= stalls.after
            try:
                await self._wait(left if last else stalls.after)
                return
            except TimeoutError:
                if last:
                    raise

    async def _wait(self, timeout: float | None) -> None:
        polled = self._waiting = list(self._polled)
        try:
            if len(polled) == 1:
                await polled[0].wait(timeout)
            elif polled:
                await wait_any(polled, timeout)
            else:  # every stream left is paused: until one resumes
                self._resumed = asyncio.get_running_loop().create_future()
                try:
                    async with asyncio.timeout(timeout):
                        await self._resumed
                finally:
                    self._resumed = None
        finally:
            self._waiting = []

    def pause(self, stream: str, paused: bool) -> None:
        if paused:
            self._paused.add(stream)
        else:
            self._paused.discard(stream)
        for sub in self.subs:
            if sub.stream == stream:
                sub.paused = paused
        self._polled = [s for s in self._active if not s.paused]
        self._wake()

    def _wake(self) -> None:
        """
        Wake a take waiting (a stream paused or resumed, or subscribed
        again): it looks again, and waits on what it should wait on now.
        """
        for sub in self._waiting:
            sub.interrupt()
        resumed = self._resumed
        if resumed is not None and not resumed.done():
            resumed.set_result(None)

    async def seek(
            self, stream: str, offset: Offset, moved: Callable[[int | None], None],
    ) -> None:
        if self._remake is None:
            raise ValueError('a single active consumer cannot seek: subscribing again would'
                             ' leave its group; choose its offset with consumer_update, or'
                             ' reset the group (rbfly group reset)')
        if stream not in self.streams:
            raise ValueError('stream {!r} is not read here; the streams read: {}'.format(
                stream, ', '.join(repr(s) for s in self.streams)))
        if self._seeking is None:
            self._seeking = asyncio.Lock()
        async with self._seeking:  # (one at a time: in the order asked)
            await self._seek(stream, offset, moved)

    async def _seek(
            self, stream: str, offset: Offset, moved: Callable[[int | None], None],
    ) -> None:
        remake = self._remake
        assert remake is not None  # (seek checked)
        if self._ended:
            return
        old = next(s for s in self.subs if s.stream == stream)
        old.seeking = True
        try:
            sub = await remake(stream, offset)
            if self._ended:
                return  # (the read ended meanwhile: nothing to move)
            # subscribed at the new place first: a failed or cancelled
            # seek leaves the read as it was (the old one read on meanwhile)
            sub.paused = stream in self._paused
            try:
                await self._place(sub)
                # the gaps the old place left, read past before the seek,
                # told before it ends (raised at the next take)
                try:
                    await old.settle()
                except Exception as ex:  # noqa: BLE001 - told by the successor
                    sub.stop_with(ex)
            except BaseException:
                self._end(sub)
                raise
        except BaseException:
            old.seeking = False
            if isinstance(old.flow, ManualCredit):  # (its successor took it)
                old.flow.bind(old)
            raise
        if self._ended:  # (while subscribing)
            self._end(sub)
            return
        moved(sub.next_offset if sub.offset_spec.type == OffsetSpecType.OFFSET else None)
        if old.gaps is not None:  # (a report still under way raises in the read going on)
            old.gaps.hand_over(sub.stop_with)
        self._end(old)
        old.interrupt()  # (a take waiting on it waits on its successor)
        self._replace(old, sub)
        self._wake()

    def _replace(self, old: Subscription, sub: Subscription) -> None:
        """Read ``sub`` in the place of ``old``."""
        if self._stalls is not None:
            self._stalls.forget(old)
        sub.paused = old.paused
        self.subs[self.subs.index(old)] = sub
        for subs in (self._active, self._polled):
            if old in subs:
                subs.remove(old)
        if not sub.finished:
            self._active.append(sub)
            if not sub.paused:
                self._polled.append(sub)

    def end(self) -> None:
        self._ended = True
        if self._stalls is not None:
            self._stalls.close()
        self._active = []
        self._polled = []
        for sub in [*self.subs, *self._waiting]:
            self._end(sub)
            sub.interrupt()  # (a take waiting on it: the progress ended)
        resumed = self._resumed
        if resumed is not None and not resumed.done():
            resumed.set_result(None)

def _filter(flt: MessageFilter, chunk: Chunk) -> None:
    """
    Keep the messages of a chunk a filter matches; a chunk left empty is
    not handed out, so the credit a flow strategy holds for it goes back.
    """
    chunk[:] = post_filter(flt, chunk)
    if not chunk and chunk.release is not None:
        chunk.release()

__all__ = ['Make', 'Remake', 'Source', 'Subscriptions', 'post_filter']
