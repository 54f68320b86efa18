"""
The client's background tasks: one owner for all of them.

Work the client starts on its own (deleting an abandoned declaration,
closing a node's last connection, restoring a stream's publishers and
subscriptions, placing them anew, renewing a token) runs as a task held
here (a connection's recovery is its manager's, a single active
consumer's answer its subscription's), so that
:py:meth:`~rbfly.streams.StreamsClient.disconnect` can stop or wait for
every one of them and none is garbage collected while it runs.
"""

from __future__ import annotations

import asyncio
import typing as tp

Coro: tp.TypeAlias = tp.Coroutine[tp.Any, tp.Any, None]

class Background:
    """
    Tasks of a client.

    A task is either *awaited* at close (it finishes a step the broker
    should see, e.g. deleting a publisher) or
    *cancelled* at close (it retries until something happens, e.g. placing
    a subscription anew on a member's node, or renewing a token, or
    restoring a changed stream's publishers and subscriptions, which
    :py:meth:`wait` waits for still). The
    connection managers' own recovery tasks are theirs (their ``close``
    ends them).
    """
    def __init__(self) -> None:
        self._awaited: set[asyncio.Task[None]] = set()
        self._cancelled: set[asyncio.Task[None]] = set()

    def spawn(
            self, coro: Coro, *, cancel_at_close: bool = False, awaited: bool | None = None,
    ) -> asyncio.Task[None]:
        """
        Run ``coro`` in the background.

        :param cancel_at_close: Cancel it at close (:py:meth:`cancel`).
        :param awaited: Whether :py:meth:`wait` waits for it (by default,
            unless cancelled at close). A task both cancelled at close and
            awaited finishes a step a test waits for, which the client does
            not wait for when it disconnects (restoring a changed stream:
            up to two minutes while the stream has no leader).
        """
        if awaited is None:
            awaited = not cancel_at_close
        task = asyncio.ensure_future(coro)
        for tasks, member in ((self._awaited, awaited), (self._cancelled, cancel_at_close)):
            if member:
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        return task

    async def cancel(self) -> None:
        """Cancel the tasks marked so, and wait until they ended."""
        while self._cancelled:
            tasks = list(self._cancelled)
            for task in tasks:
                task.cancel()
            # wait() neither raises the tasks' cancellation nor hides ours
            await asyncio.wait(tasks)

    async def wait(self) -> None:
        """Wait until the awaited tasks (and those they started) ended."""
        while self._awaited:
            await asyncio.wait(list(self._awaited))

    def __len__(self) -> int:
        return len(self._awaited | self._cancelled)

__all__ = ['Background']
