"""
``until_signal`` (:py:mod:`rbfly.streams.worker`): the work stopped by a
signal or a timeout is cancelled and waited for (its cleanup runs), and
``None`` returned; its result or error otherwise; a caller cancelled
cancels the work first.
"""

import asyncio
import os
import signal

import pytest

from rbfly.streams import until_signal

class Work:
    """Waits until cancelled, then cleans up for a while (a drain and a commit)."""
    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cleaned = False

    async def run(self) -> str:
        self.started.set()
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0.01)  # (the cleanup awaits too)
            self.cleaned = True
        return 'never'

@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGINT])
async def test_signal_stops(signum: signal.Signals) -> None:
    work = Work()
    task = asyncio.ensure_future(until_signal(work.run()))
    await work.started.wait()
    os.kill(os.getpid(), signum)
    assert await task is None
    assert work.cleaned
    # the handlers are removed: the loop has none for the signal now
    assert not asyncio.get_running_loop().remove_signal_handler(signum)

async def test_timeout_stops() -> None:
    work = Work()
    assert await until_signal(work.run(), timeout=0.01) is None
    assert work.cleaned

async def test_result_and_error() -> None:
    async def ok() -> int:
        return 7

    async def bad() -> int:
        raise ValueError('stream deleted')

    assert await until_signal(ok()) == 7
    with pytest.raises(ValueError, match='stream deleted'):
        await until_signal(bad())

async def test_caller_cancelled() -> None:
    work = Work()
    task = asyncio.ensure_future(until_signal(work.run()))
    await work.started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert work.cleaned

async def test_bad_timeout() -> None:
    async def ok() -> None:
        pass

    coro = ok()
    with pytest.raises(ValueError, match='timeout must be seconds'):
        await until_signal(coro, timeout=-1)
    coro.close()

async def test_second_signal_cancels_the_stop() -> None:
    """A stop that waits (a drain) is cancelled by a second signal."""
    draining = asyncio.Event()
    interrupted = False

    async def slow_stop() -> None:
        nonlocal interrupted
        try:
            await asyncio.Event().wait()
        finally:
            draining.set()
            try:
                await asyncio.Event().wait()   # a drain that would never end
            except asyncio.CancelledError:
                interrupted = True
                raise

    task = asyncio.ensure_future(until_signal(slow_stop()))
    await asyncio.sleep(0)
    os.kill(os.getpid(), signal.SIGTERM)
    await draining.wait()
    os.kill(os.getpid(), signal.SIGTERM)
    await task   # (stopped: None, not a CancelledError)
    assert interrupted
