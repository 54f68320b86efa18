"""
Waiting for chunks: a reader with nothing buffered waits on its
subscriptions (:py:mod:`rbfly.streams.subscriptions.subscription`)
without taking a chunk, so a wait cancelled loses nothing.

When chunks arrive in quick succession (reading a stream's history) and
the buffer runs empty, the application's task keeps polling the
connection for up to ``spin`` seconds before it sleeps. A sleeping task
on an idle CPU is slow to wake, and the broker's send that wakes it is
slow too: measured here (2 vCPUs, RabbitMQ 3.10, 50-message chunks), a
chunk arrived every 270-330 us with the task sleeping between chunks, and
every 90-110 us with it polling (180k vs 340-480k msg/s; RbFly 0.10 is
fast there only because its per-message work keeps its CPU busy). A
subscription spins only while its average gap between chunks is below
``spin``: a consumer at the live end of a quiet stream sleeps at once.

These functions only read the subscriptions' buffers and arrival times
(the subscription is their one owner: ``Waitable`` names what is
read), and set the callback a subscription calls when a chunk arrives or
it ends (``notify``) for the time of a wait.
"""

from __future__ import annotations

import asyncio
import typing as tp
from collections.abc import Callable, Sized
from time import monotonic

class Waitable(tp.Protocol):
    """What a wait reads of a subscription (and its ``notify``, set)."""
    notify: Callable[[], None] | None

    @property
    def spin(self) -> float:
        """Seconds to poll for after a chunk arrived."""

    @property
    def _arrived(self) -> float:
        """When the last chunk arrived (monotonic clock)."""

    @property
    def _gap(self) -> float:
        """Moving average of the time between chunks."""

    @property
    def _chunks(self) -> Sized:
        """The chunks buffered."""

    @property
    def _error(self) -> Exception | None:
        """The error that ended the subscription."""

    @property
    def _stop(self) -> Exception | None:
        """The error that ends the read at its next take."""

async def spin_wait(subs: tp.Sequence[Waitable]) -> bool:
    """
    Poll the connection (yield to the event loop without sleeping) until
    one of the subscriptions has a chunk or an error, or until ``spin``
    seconds passed since a chunk last arrived.

    Return true when a subscription has something to take.
    """
    deadline = max(s._arrived + s.spin for s in subs)
    while monotonic() < deadline:
        await asyncio.sleep(0)
        for s in subs:
            if s._chunks or s._error is not None or s._stop is not None:
                return True
    return False

async def wait_any(subs: tp.Sequence[Waitable], timeout: float | None) -> None:
    """
    Wait until one of the subscriptions has a chunk to take, or ended
    (polling first when chunks come in quick succession).

    :raises TimeoutError: When nothing came in ``timeout`` seconds.
    """
    if any(s._gap < s.spin for s in subs) and await spin_wait(subs):
        return
    waiter = asyncio.get_running_loop().create_future()

    def wake() -> None:
        if not waiter.done():
            waiter.set_result(None)

    for s in subs:
        s.notify = wake
    try:
        async with asyncio.timeout(timeout):
            await waiter
    finally:
        for s in subs:
            s.notify = None

__all__ = ['Waitable', 'spin_wait', 'wait_any']
