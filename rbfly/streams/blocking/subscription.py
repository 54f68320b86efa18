"""
A blocking subscription: an iterator over the records of a stream's
messages, taken one at a time from the async API's subscription on the
client's loop.

With offset tracking (``store_every``) or a flow strategy, a record is
taken from the async subscription's bodies when the application asks for
it, never ahead: tracking then stores only offsets of records the
application was handed and asked past, and a flow strategy releases
credit as the application goes, as in async code. Without them, a chunk
is taken at a time (the chunk-level API), and its records are handed out
in the calling thread: one round trip to the loop a chunk, not a message
(measured in :doc:`/blocking`). A
serializer then decodes in the calling thread, a message at a time, so a
mismatch is raised at its record.

A wait that times out leaves the take pending: the next call gets its
record, none is lost. A record taken that way and not collected yet was
never seen by the application: :py:meth:`BlockingSubscription.commit` and
:py:meth:`BlockingSubscription.close` hand it back to the iterator first
(``Bodies.hand_back``), so that offset tracking stores only offsets of
records the application got.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses as dtc
import threading
import typing as tp
from collections import deque
from collections.abc import Callable, Iterator

from ...amqp import MessageCtx, get_message_ctx
from ..offset import Offset
from ..serializers import Codec
from ..subscriptions._bodies import Bodies
from ..subscriptions.decoded import Decoded
from ..subscriptions.subscription import Chunk
from .loop import LoopThread, check_no_loop

T = tp.TypeVar('T')

_WAIT: tp.Final = object()

@dtc.dataclass(frozen=True, slots=True)
class Record(tp.Generic[T]):
    """
    A message received by a blocking subscription.

    :ivar stream: Its stream (the partition, for a super stream).
    :ivar offset: Its offset in the stream.
    :ivar timestamp: When the broker stored it (seconds since the epoch).
    :ivar body: Its body (decoded, with a serializer).
    :ivar message: The message with all its AMQP sections.
    """
    stream: str
    offset: int
    timestamp: float
    body: T
    message: MessageCtx

class BlockingSubscription(Iterator[Record[tp.Any]]):
    """
    The records of a subscription (see :py:meth:`BlockingClient.subscribe
    <rbfly.streams.blocking.BlockingClient.subscribe>`): iterate, or call
    :py:meth:`next` with a timeout; :py:meth:`close` (or leaving its
    ``with`` block) unsubscribes.

    Iterate from one thread at a time (calls from several are served in
    turn); :py:meth:`close` may come from any.
    """
    def __init__(
            self, runner: LoopThread, make: Callable[[], tp.Any], stream: str,
            timeout: float | None, call_timeout: float | None,
            forget: Callable[[], None] = lambda: None, *, chunks: bool = False,
            codec: Codec | None = None,
    ) -> None:
        self._runner = runner
        self._forget = forget
        self.stream = stream
        self._timeout = timeout
        self._call_timeout = call_timeout
        self._lock = threading.Lock()
        # taken and not handed out yet (the rest of a chunk), and the take
        # in progress on the loop
        self._ready: deque[Record[tp.Any]] = deque()
        self._chunks = chunks
        self._codec = codec
        self._pending: concurrent.futures.Future[list[Record[tp.Any]] | None] | None = None
        self._task: asyncio.Task[tp.Any] | None = None
        # a take completed and its record not collected by the application
        # (set on the loop, cleared by the collecting thread or the loop)
        self._held = False
        self._closed = False
        # streams paused, and the records of them taken in a chunk and
        # held back (chunk-level reading; else the progress holds them);
        # with the records ready, under their own lock: pause() and
        # resume() come from any thread, also while one waits in next()
        self._paused: set[str] = set()
        self._held_back: dict[str, deque[Record[tp.Any]]] = {}
        self._records = threading.Lock()
        # a thread waits for a take (the record it brings is its), and a
        # take whose record went back to the iterator (not to be collected)
        self._waiting = False
        self._returned: concurrent.futures.Future[tp.Any] | None = None
        # the take a thread waits for was cancelled to hand out records
        # held back of a stream resumed
        self._interrupted = False
        self._iterator: tp.Any = runner.run(
            self._make(make), call_timeout, 'subscribing to {!r}'.format(stream),
        )

    def __repr__(self) -> str:
        return 'BlockingSubscription(stream={!r})'.format(self.stream)

    @staticmethod
    async def _make(make: Callable[[], tp.Any]) -> tp.Any:
        return make()

    def __iter__(self) -> tp.Self:
        return self

    def __next__(self) -> Record[tp.Any]:
        return self.next()

    def next(self, timeout: float | object | None = _WAIT) -> Record[tp.Any]:
        """
        The next record: wait ``timeout`` seconds at most (by default the
        subscription's ``timeout``; ``None``: as long as it takes).

        :raises TimeoutError: When no message came in time (the
            subscription goes on: the next call may get it).
        :raises StopIteration: When the subscription ended (closed, or
            ``stop_at_end`` reached the end).
        """
        check_no_loop('BlockingSubscription.next')
        wait = self._timeout if timeout is _WAIT else tp.cast(float | None, timeout)
        with self._lock:
            if self._closed:
                raise StopIteration
            while True:  # (a take may bring records of paused streams only)
                with self._records:
                    if self._ready:
                        record = self._ready.popleft()
                        break
                self._fill(wait)
        codec = self._codec
        if codec is None:
            return record
        # (a mismatch raised here has its record handed out: the next call
        # goes on with the next one)
        msg = record.message
        return Record(record.stream, record.offset, record.timestamp,
                      codec.decode(msg, record.stream), msg)

    def _fill(self, wait: float | None) -> None:
        """Take records from the loop (under the lock)."""
        pending = self._pending
        if pending is None:
            pending = self._pending = self._runner.submit(self._take())
        self._waiting = True
        try:
            records = pending.result(wait)
        except concurrent.futures.CancelledError:
            self._pending = None
            if self._interrupted:  # (records of a resumed stream are ready)
                self._interrupted = False
                return
            raise StopIteration from None
        except concurrent.futures.TimeoutError:
            if not pending.done():
                raise TimeoutError('no message from {!r} in {}s'.format(
                    self.stream, wait,
                )) from None
            self._pending = None
            raise
        except BaseException:
            self._pending = None
            raise
        finally:
            self._waiting = False
        self._pending = None
        self._held = False
        if records is None:
            raise StopIteration
        with self._records:
            if self._returned is pending:  # (its record went back: taken again)
                self._returned = None
                return
            self._ready.extend(records)
            self._hold_back()

    def _hold_back(self) -> None:
        """Hold back the records of paused streams taken (a chunk taken before the pause)."""
        if not self._paused or not self._ready:
            return
        kept: deque[Record[tp.Any]] = deque()
        for record in self._ready:
            if record.stream in self._paused:
                self._held_back.setdefault(record.stream, deque()).append(record)
            else:
                kept.append(record)
        self._ready = kept

    async def _take(self) -> list[Record[tp.Any]] | None:
        self._task = asyncio.current_task()
        try:
            if self._chunks:
                chunk: Chunk = await anext(self._iterator)
                while not chunk:  # all its messages filtered out
                    chunk = await anext(self._iterator)
                stream = chunk.stream
                return [
                    Record(stream, m.stream_offset, m.stream_timestamp, m.body, m) for m in chunk
                ]
            body = await anext(self._iterator)
        except StopAsyncIteration:
            return None
        msg = get_message_ctx()
        self._held = True
        return [Record(
            msg.stream or self.stream, msg.stream_offset, msg.stream_timestamp, body, msg,
        )]

    def _give_back(self) -> None:
        """
        On the loop: the record of a take that completed after its caller
        stopped waiting, not collected since, goes back to the iterator
        (the next take gets it again): the application never saw it, so
        its offset is neither committed nor stored at the end.
        """
        with self._records:
            if not self._held:
                return
            self._held = False
            self._returned, self._pending = self._pending, None
            tp.cast(Bodies | Decoded, self._iterator).hand_back()

    def commit(self) -> None:
        """
        Store the offset of the last record :py:meth:`next` returned under
        the subscription's name and wait until the broker reports it
        stored (between records: a thread waiting in :py:meth:`next` is
        waited for).
        """
        check_no_loop('BlockingSubscription.commit')
        if self._chunks:
            raise TypeError('commit() needs automatic offset tracking: subscribe with a name'
                            ' and store_every, or call client.commit_offset()')
        with self._lock:
            self._runner.run(self._commit(), self._call_timeout,
                             'committing the offset of {!r}'.format(self.stream))

    async def _commit(self) -> None:
        self._give_back()
        await tp.cast(Bodies | Decoded, self._iterator).commit()

    def pause(self, *streams: str) -> None:
        """
        Hand out no record of ``streams`` (the stream, or partitions of a
        super stream) until :py:meth:`resume`; the others go on, nothing
        is lost or read twice (see ``subscribe()``'s ``pause``). From any
        thread, also while another waits in :py:meth:`next`.
        """
        self._runner.run(self._pause(streams), self._call_timeout,
                         'pausing {!r}'.format(streams))
        with self._records:
            self._paused.update(streams)
            self._hold_back()

    async def _pause(self, streams: tuple[str, ...]) -> None:
        # a record taken and not collected (nobody waits for it) goes back:
        # the progress holds it back
        if not self._waiting:
            self._give_back()
        self._iterator.pause(*streams)

    def resume(self, *streams: str) -> None:
        """Hand out the records of paused ``streams`` again, those held back first."""
        self._runner.run(self._resume(streams), self._call_timeout,
                         'resuming {!r}'.format(streams))
        with self._records:
            self._paused.difference_update(streams)
            back = [self._held_back.pop(stream, deque()) for stream in streams]
            for records in back:
                self._ready.extendleft(reversed(records))
        if any(back) and self._waiting:
            # a thread waits for a take: it takes these first
            self._runner.run(self._interrupt(), self._call_timeout, 'resuming')

    async def _resume(self, streams: tuple[str, ...]) -> None:
        self._iterator.resume(*streams)

    async def _interrupt(self) -> None:
        """End the take a thread waits for (safe to cancel): it looks at the records ready."""
        task = self._task
        if task is not None and not task.done():
            self._interrupted = True
            task.cancel()

    def paused(self) -> frozenset[str]:
        """The streams paused."""
        return frozenset(self._paused)

    def seek(self, stream: str, offset: Offset | int) -> None:
        """
        Read ``stream`` from ``offset`` on (an ``Offset``, or an offset):
        the records of it taken are dropped, and the last one :py:meth:`next`
        returned does not count as processed (see ``subscribe()``'s
        ``seek``); a seek that fails leaves the subscription as it was.
        Between records: a thread waiting in :py:meth:`next` is waited for.
        """
        with self._lock:
            self._runner.run(self._stop_take(), self._call_timeout,
                             'seeking {!r}'.format(stream))
            pending, self._pending = self._pending, None
            if pending is not None and pending.done() and not pending.cancelled() \
                    and pending.exception() is None and (records := pending.result()):
                with self._records:
                    if self._returned is pending:
                        self._returned = None
                    else:  # (another stream's may be among them)
                        self._ready.extend(records)
                        self._hold_back()
            self._runner.run(self._iterator.seek(stream, offset), self._call_timeout,
                             'seeking {!r}'.format(stream))
            with self._records:
                self._ready = deque(r for r in self._ready if r.stream != stream)
                self._held_back.pop(stream, None)

    async def _stop_take(self) -> None:
        """A take under way ends (safe to cancel); one completed, not collected, goes back."""
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait([task])
        self._give_back()

    def close(self) -> None:
        """Unsubscribe (a thread waiting in :py:meth:`next` gets ``StopIteration``)."""
        if self._closed:
            return
        self._closed = True
        if self._runner.closed:
            return
        check_no_loop('BlockingSubscription.close')
        try:
            self._runner.run(self.aclose(), self._call_timeout, 'unsubscribing from {!r}'.format(
                self.stream,
            ))
        finally:
            self._forget()

    async def aclose(self) -> None:
        """Unsubscribe, on the client's loop (the client closing)."""
        self._closed = True
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait([task])
        self._give_back()
        await self._iterator.aclose()

    def __enter__(self) -> tp.Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

__all__ = ['BlockingSubscription', 'Record']
