"""
A worker in a few lines: run a consumer (``client.process_super_stream``,
an ``async for`` loop, anything awaitable) until it ends or the process is
asked to stop (SIGTERM, as a container runtime sends it; SIGINT, Ctrl-C),
then stop it cleanly: it is cancelled, and a consumer cancelled drains
its handlers in flight, commits the offsets of what it processed,
unsubscribes, and the broker moves its partitions to the other members of
its group. Kafka's ``consumer.stop()`` on a signal, without the
boilerplate (signal handlers, two tasks, ``asyncio.wait``, cancel,
``aclosing``)::

    async def main() -> None:
        async with streams_client(URL) as client:
            await until_signal(client.process_super_stream(
                'orders', handle, name='billing', single_active=True,
                store_every=100, concurrency=16, key=lambda msg: msg.stream,
            ))

    asyncio.run(main())
"""

from __future__ import annotations

import asyncio
import logging
import signal
import typing as tp
from collections.abc import Awaitable, Sequence

logger = logging.getLogger('rbfly.streams.worker')

T = tp.TypeVar('T')

SIGNALS: tp.Final = (signal.SIGTERM, signal.SIGINT)
"""The signals that stop a worker by default."""

async def until_signal(
        work: Awaitable[T], *, signals: Sequence[signal.Signals] = SIGNALS,
        timeout: float | None = None,
) -> T | None:
    """
    Await ``work`` until it ends, or until one of ``signals`` comes (or
    ``timeout`` seconds pass): then cancel it, wait until it has stopped,
    and return ``None``; a second signal cancels it again (what its stop
    waits for: a drain, a commit). The signal handlers are those of the
    running loop, removed at the end (the loop's handlers of these signals
    from before are not restored; where the loop cannot install them, e.g.
    outside the main thread, no signal stops the work).

    :return: What ``work`` returned, or ``None`` when it was stopped.
    :raises Exception: What ``work`` raised (also while stopping).
    :raises asyncio.CancelledError: When the caller itself is cancelled
        (``work`` is cancelled and waited for first).
    """
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)
                                or not timeout >= 0):
        raise ValueError('timeout must be seconds, 0 or more, or None, got {!r}'.format(timeout))
    task = asyncio.ensure_future(work)
    loop = asyncio.get_running_loop()
    stopped: list[str] = []

    def stop(why: str) -> None:
        if task.done():
            return
        if stopped:  # a second signal: what the stop waits for is cancelled too
            logger.warning('stopping at once: %s', why)
        else:
            logger.info('stopping: %s', why)
        stopped.append(why)
        task.cancel()

    installed = []
    for signum in signals:
        try:
            loop.add_signal_handler(signum, stop, signal.Signals(signum).name)
        except (NotImplementedError, RuntimeError, ValueError) as ex:
            logger.warning('signal %s does not stop the work: %s', signum, ex)
        else:
            installed.append(signum)
    timer = None if timeout is None else loop.call_later(timeout, stop, 'timeout')
    try:
        await asyncio.wait([task])
    except asyncio.CancelledError:
        task.cancel()
        await asyncio.wait([task])
        raise
    finally:
        if timer is not None:
            timer.cancel()
        for signum in installed:
            loop.remove_signal_handler(signum)
    if task.cancelled():
        if stopped:
            return None
        raise asyncio.CancelledError()  # cancelled by someone else
    return task.result()

__all__ = ['SIGNALS', 'until_signal']
