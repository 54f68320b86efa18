"""
The watchdog of a stuck application: a reader's progress
(:py:mod:`rbfly.streams.subscriptions.progress`) with a
``processing_timeout`` gives up when the application holds messages and
makes no move for that long (Kafka's ``max.poll.interval.ms``): it
commits what was processed and ends the subscriptions, so that another
member of a consumer group takes the streams over.

The watchdog only reads the clock and the progress's marks; what giving
up does is the progress's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

class Watchdog:
    """
    Looks every quarter of ``timeout`` whether the application moved.

    :param timeout: Seconds without a move after which it gives up.
    :param seen: What the application was seen at (a move changes it).
    :param held: The streams the application holds something of (none:
        not stuck, only idle).
    :param give_up: Called with those streams and the timeout, once.
    :param done: Whether the watch is over (the reading ended).
    """
    def __init__(
            self, timeout: float, seen: Callable[[], tuple[object, ...]],
            held: Callable[[], list[str]], give_up: Callable[[list[str], float], None],
            done: Callable[[], bool],
    ) -> None:
        self._timeout = timeout
        self._seen = seen
        self._held = held
        self._give_up = give_up
        self._done = done
        self._handle: asyncio.TimerHandle | None = None
        self._last: tuple[object, ...] = ()
        self._since = 0.0

    def start(self) -> None:
        """Watch from now on."""
        loop = asyncio.get_running_loop()
        self._since = loop.time()
        self._handle = loop.call_later(self._timeout / 4, self._check)

    def stop(self) -> None:
        """Watch no more."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _check(self) -> None:
        """
        No move since the last change, for the whole timeout, while the
        application holds something: stuck.
        """
        self._handle = None
        if self._done():
            return
        timeout = self._timeout
        loop = asyncio.get_running_loop()
        seen = self._seen()
        held = self._held()
        if seen != self._last or not held:
            self._last = seen
            self._since = loop.time()
        elif loop.time() - self._since >= timeout:
            self._give_up(held, timeout)
            return
        self._handle = loop.call_later(timeout / 4, self._check)

__all__ = ['Watchdog']
