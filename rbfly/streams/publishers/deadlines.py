"""
Confirmation timeouts of a publisher: the messages handed over with a
``confirm_timeout`` fail when the broker does not confirm them by then.

The deadlines are kept in order, as the messages were handed over (each
group of messages shares one), with a single timer, of the first: a
publisher sending a million messages in batches of a hundred keeps ten
thousand deadlines and one timer, not a timer a message. Confirmed groups
are forgotten as confirmations come (:py:meth:`ConfirmDeadlines.prune`).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Container, Iterable

class ConfirmDeadlines:
    """
    The confirmation deadlines of one publisher's messages (see the
    module's description).

    :param unconfirmed: The publisher's messages not confirmed yet, by
        publishing id (its dictionary, never replaced; read only here: a
        message confirmed or failed is no longer in it).
    :param overdue: Called with the publishing id of each message not
        confirmed by its deadline: the publisher fails it.
    :param live: Whether the publisher still sends: a failed or closed one
        arms no timer again.
    """
    __slots__ = ('_deadlines', '_live', '_overdue', '_timer', '_unconfirmed')

    def __init__(
            self, unconfirmed: Container[int], overdue: Callable[[int], None],
            live: Callable[[], bool],
    ) -> None:
        self._unconfirmed = unconfirmed
        self._overdue = overdue
        self._live = live
        self._deadlines: deque[tuple[float, Iterable[int]]] = deque()
        self._timer: asyncio.TimerHandle | None = None

    def __len__(self) -> int:
        """Groups of messages with a deadline, not all confirmed yet (as last pruned)."""
        return len(self._deadlines)

    @property
    def armed(self) -> bool:
        """Whether the timer of the first deadline is set."""
        return self._timer is not None

    def add(self, ids: Iterable[int], timeout: float | None) -> None:
        """
        Messages (their ids) were handed to the publisher just now: with a
        ``timeout``, they fail when not confirmed by then.
        """
        if timeout is None:
            return
        loop = asyncio.get_running_loop()
        self._deadlines.append((loop.time() + timeout, ids))
        if self._timer is None:
            self._timer = loop.call_at(self._deadlines[0][0], self._expire)

    def prune(self) -> None:
        """Forget the deadlines of the oldest messages, once all confirmed."""
        deadlines = self._deadlines
        unconfirmed = self._unconfirmed
        while deadlines and not any(pid in unconfirmed for pid in deadlines[0][1]):
            deadlines.popleft()

    def stop(self) -> None:
        """Forget every deadline, and stop the timer (the publisher ends)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._deadlines.clear()

    def _expire(self) -> None:
        """Fail the messages whose confirmation is overdue."""
        self._timer = None
        deadlines = self._deadlines
        unconfirmed = self._unconfirmed
        loop = asyncio.get_running_loop()
        now = loop.time()
        while deadlines and deadlines[0][0] <= now:
            _, ids = deadlines.popleft()
            for pid in ids:
                if pid in unconfirmed:
                    self._overdue(pid)
        self.prune()
        # a failure above may have armed the timer already (the pipelined
        # publisher sends its buffer then): one timer, never two
        if deadlines and self._live() and self._timer is None:
            self._timer = loop.call_at(deadlines[0][0], self._expire)

__all__ = ['ConfirmDeadlines']
