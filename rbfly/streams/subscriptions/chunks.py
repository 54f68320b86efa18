"""
The chunk iterator of ``client.subscribe_chunks()``: the chunks of a
subscription as lists of messages, a view over the reader's progress
(:py:mod:`rbfly.streams.subscriptions.progress`).

A chunk counts as processed when the application asks for the next one,
or ends the iteration (automatic offset tracking stores its last
message's offset; a messages the application removed from the chunk do
not count). Taking the next chunk is safe to cancel.

An async generator's API (``asend``, ``athrow``, ``aclose``), as
``subscribe_chunks()`` returned an async generator before.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from types import TracebackType

from ..offset import Offset
from .progress import Progress
from .subscription import Chunk

logger = logging.getLogger('rbfly.streams.subscriber')

class Chunks(AsyncGenerator[Chunk, None]):
    """
    Async iterator over the chunks of a subscription.

    :param progress: The reader's progress.
    """
    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._closed = False

    def __aiter__(self) -> Chunks:
        return self

    async def __anext__(self) -> Chunk:
        if self._closed:
            raise StopAsyncIteration
        progress = self._progress
        progress.moved()  # the chunk handed out last is processed
        try:
            chunk = await progress.take()
        except asyncio.CancelledError:
            raise  # (safe to cancel: nothing was taken)
        except BaseException:  # ended, failed, timed out: the subscription ends
            self._closed = True
            await progress.close()
            raise
        assert chunk is not None  # (no deadline)
        progress.hand_out(chunk)
        return chunk

    async def asend(self, value: None) -> Chunk:
        if value is not None:
            raise TypeError('can only send None to a subscription')
        return await self.__anext__()

    async def athrow(
            self,
            typ: type[BaseException] | BaseException,
            val: BaseException | object = None,
            tb: TracebackType | None = None,
    ) -> Chunk:
        await self.aclose()
        if isinstance(typ, BaseException):
            raise typ
        if isinstance(val, BaseException):
            raise val
        raise typ()

    def pause(self, *streams: str) -> None:
        """Hand out no chunk of ``streams`` until ``resume()`` (see ``Bodies.pause``)."""
        self._progress.pause(*streams)

    def resume(self, *streams: str) -> None:
        """Hand out the chunks of paused ``streams`` again."""
        self._progress.resume(*streams)

    def paused(self) -> frozenset[str]:
        """The streams paused."""
        return frozenset(self._progress.paused.streams)

    async def seek(self, stream: str, offset: Offset | int) -> None:
        """Read ``stream`` from ``offset`` on (see ``Bodies.seek``)."""
        await self._progress.seek(stream, offset)

    async def aclose(self) -> None:
        """End the subscription: the chunk handed out last is processed."""
        if self._closed:
            return
        self._closed = True
        await self._progress.close()

    def __del__(self) -> None:
        # dropped without aclose() (a break out of the loop): the progress
        # is closed as an async generator's finalizer would close it
        if not self._closed:
            self._closed = True
            try:
                self._progress.abandon()
            except Exception:
                logger.exception('ending a subscription dropped by the application failed')

__all__ = ['Chunks']
