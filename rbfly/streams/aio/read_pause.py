"""
Pausing a connection's reads while a subscription catches up
(:py:class:`ReadPause`), a part of the asyncio adapter
(:py:class:`~rbfly.streams.aio.connection.StreamsProtocol`).
"""

from __future__ import annotations

import asyncio
import time

from ...error import ChunkError
from ..protocol._chunk import read_header

HISTORY_AGE = 1.0
"""
A chunk written this many seconds or more before it arrived is history:
the application is catching up, and a read paused a moment costs it
nothing it would notice.
"""

class ReadPause:
    """
    Stop reading a connection for :py:attr:`seconds` after a read that
    brought a chunk of history (a subscription catching up), so that the
    broker's next chunks arrive together, in one read, not a wake-up each.

    A client that sleeps between chunks makes the broker slower: each
    chunk the broker sends wakes the client's task on another core, and
    that costs the broker's sending thread too. Measured here (2 vCPUs,
    RabbitMQ 3.10, a stream of 50-message chunks, a consumer that decodes
    nothing): 230-250k msg/s sleeping at 1.4 us of client CPU a message,
    305-312k polling with a busy core (2.9 us), and 310-350k pausing its
    reads for 1 ms at 0.5 us. Live chunks (written less than
    :py:data:`HISTORY_AGE` before they arrive, by the clocks of the
    broker and of this machine) never pause a read by themselves; what
    else the connection carries (a live subscription, confirmations)
    waits with a subscription catching up on it. Over TLS the socket is
    still read into the TLS layer's buffer while paused: less is saved.

    The connection tells it of each chunk delivered (:py:meth:`note`) and
    of the end of each read (:py:meth:`read_done`), and cancels the
    pause with the connection (:py:meth:`cancel`).

    :param loop: The event loop whose clock times the pause.
    :ivar seconds: How long a pause lasts (0: never pause; the client
        sets its option ``read_pause``).
    :ivar history: The read being handled brought history (the
        connection tests it before it calls :py:meth:`read_done`: a call
        every read cost ``Publisher.send`` 340 more instructions a
        message, 0.3%; Callgrind, ``python -m perf.instructions send``,
        3 layouts: 117,956 with the call, 117,619 with the test).
    """
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.seconds = 0.0
        self.history = False
        self._resume: asyncio.TimerHandle | None = None

    def note(self, chunk: bytes | bytearray | memoryview) -> None:
        """
        Note whether a chunk delivered in the read being handled is
        history, by its header's timestamp: written :py:data:`HISTORY_AGE`
        or more before now (once a read brought history, the read's other
        chunks are not looked at).
        """
        if not self.seconds or self.history:
            return
        try:
            written = read_header(chunk).timestamp
        except ChunkError:
            return  # malformed: its subscription reports it when it is taken
        self.history = written <= time.time() - HISTORY_AGE

    def read_done(self, transport: asyncio.Transport | None) -> None:
        """The read is handled: pause ``transport``'s reads if it brought history."""
        if self.history:
            self.history = False
            self._pause(transport)

    def cancel(self) -> None:
        """The connection is lost: the pending resume, if any, is cancelled."""
        if self._resume is not None:
            self._resume.cancel()
            self._resume = None

    def _pause(self, transport: asyncio.Transport | None) -> None:
        if self.seconds <= 0 or self._resume is not None or transport is None \
                or transport.is_closing():
            return
        transport.pause_reading()
        self._resume = self.loop.call_later(self.seconds, self._resume_reading, transport)

    def _resume_reading(self, transport: asyncio.Transport) -> None:
        self._resume = None
        if not transport.is_closing():
            transport.resume_reading()

__all__ = ['HISTORY_AGE', 'ReadPause']
