"""
The client's background tasks (:py:class:`~rbfly.streams.parts.tasks.Background`):
awaited tasks finish at close, cancelled ones are cancelled, tasks started
by tasks are waited for, and the caller's own cancellation is never
swallowed. Every task waits on a future the test resolves: no clock.
"""

from __future__ import annotations

import asyncio

import pytest

from rbfly.streams.parts.tasks import Background

async def settle() -> None:
    """Let the ready callbacks and tasks of the loop run (a few iterations, no time)."""
    for _ in range(5):
        await asyncio.sleep(0)

def future() -> asyncio.Future[None]:
    return asyncio.get_running_loop().create_future()

async def test_awaited_and_cancelled() -> None:
    """
    ``cancel`` cancels the tasks marked so and leaves the others; ``wait``
    waits for the others to finish on their own.
    """
    tasks = Background()
    done = future()
    log: list[str] = []

    async def step() -> None:
        await done
        log.append('step done')

    async def retry() -> None:
        try:
            await future()  # never resolved
        except asyncio.CancelledError:
            log.append('retry cancelled')
            raise

    awaited = tasks.spawn(step())
    cancelled = tasks.spawn(retry(), cancel_at_close=True)
    assert len(tasks) == 2
    await settle()

    await tasks.cancel()
    assert cancelled.cancelled()
    assert not awaited.done()
    assert log == ['retry cancelled']
    assert len(tasks) == 1

    waiter = asyncio.ensure_future(tasks.wait())
    await settle()
    assert not waiter.done()  # the step is not finished
    done.set_result(None)
    await waiter
    assert awaited.done() and not awaited.cancelled()
    assert log == ['retry cancelled', 'step done']
    assert len(tasks) == 0

async def test_nothing_to_do() -> None:
    tasks = Background()
    await tasks.cancel()
    await tasks.wait()
    assert len(tasks) == 0

async def test_spawned_by_tasks_are_waited_for() -> None:
    """A task started by an awaited task while ``wait`` runs is waited for too."""
    tasks = Background()
    gates = [future() for _ in range(3)]
    finished: list[int] = []

    async def work(n: int) -> None:
        await gates[n]
        if n + 1 < len(gates):
            tasks.spawn(work(n + 1))  # started as this one ends
        finished.append(n)

    tasks.spawn(work(0))
    waiter = asyncio.ensure_future(tasks.wait())
    for n, gate in enumerate(gates):
        await settle()
        assert not waiter.done()
        assert finished == list(range(n))
        gate.set_result(None)
    await waiter
    assert finished == [0, 1, 2]
    assert len(tasks) == 0

async def test_spawned_by_cancelled_tasks_are_cancelled() -> None:
    """A task started by a cancelled task as it ends is cancelled too."""
    tasks = Background()
    started: list[asyncio.Task[None]] = []

    async def forever() -> None:
        await future()

    async def retry() -> None:
        try:
            await future()
        finally:
            started.append(tasks.spawn(forever(), cancel_at_close=True))

    tasks.spawn(retry(), cancel_at_close=True)
    await settle()
    await tasks.cancel()
    assert len(started) == 1 and started[0].cancelled()
    assert len(tasks) == 0

async def test_failed_task_does_not_stop_wait() -> None:
    """A task's error stays in its task: ``wait`` returns, the other tasks finish."""
    tasks = Background()
    gate = future()

    async def fail() -> None:
        raise RuntimeError('boom')

    async def step() -> None:
        await gate

    failed = tasks.spawn(fail())
    other = tasks.spawn(step())
    waiter = asyncio.ensure_future(tasks.wait())
    await settle()
    assert failed.done() and not waiter.done()
    gate.set_result(None)
    await waiter
    assert isinstance(failed.exception(), RuntimeError)
    assert other.result() is None

async def test_cancelled_caller_of_wait() -> None:
    """
    Cancelling the task that waits is not swallowed, and does not cancel
    the awaited tasks.
    """
    tasks = Background()
    gate = future()

    async def step() -> None:
        await gate

    task = tasks.spawn(step())
    waiter = asyncio.ensure_future(tasks.wait())
    await settle()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert waiter.cancelled()
    assert not task.done()
    gate.set_result(None)
    await tasks.wait()
    assert task.done() and not task.cancelled()

async def test_cancelled_caller_of_cancel() -> None:
    """
    Cancelling the task that cancels (a task slow to end) is not
    swallowed either.
    """
    tasks = Background()
    gate = future()
    ended: list[str] = []

    async def slow_to_end() -> None:
        try:
            await future()
        except asyncio.CancelledError:
            await gate  # cleaning up
            ended.append('cleaned up')
            raise

    task = tasks.spawn(slow_to_end(), cancel_at_close=True)
    await settle()
    canceller = asyncio.ensure_future(tasks.cancel())
    await settle()
    assert not canceller.done()
    canceller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await canceller
    assert canceller.cancelled()
    assert not task.done()  # still cleaning up
    gate.set_result(None)
    await asyncio.wait([task])  # (not cancel(): it would cancel the clean-up again)
    assert task.cancelled()
    assert ended == ['cleaned up']
    assert len(tasks) == 0

async def test_task_refusing_cancellation() -> None:
    """A cancelled task that ends normally anyway is still waited for and forgotten."""
    tasks = Background()

    async def stubborn() -> None:
        try:
            await future()
        except asyncio.CancelledError:
            return  # (swallows it)

    task = tasks.spawn(stubborn(), cancel_at_close=True)
    await settle()
    await tasks.cancel()
    assert task.done() and not task.cancelled()
    assert len(tasks) == 0

async def test_cancelled_and_awaited() -> None:
    """
    A task both cancelled at close and awaited: ``wait`` waits for it to
    finish on its own, ``cancel`` cancels it (and counts it once).
    """
    tasks = Background()
    done = future()

    async def step() -> None:
        await done

    first = tasks.spawn(step(), cancel_at_close=True, awaited=True)
    assert len(tasks) == 1
    waiting = asyncio.ensure_future(tasks.wait())
    await settle()
    assert not waiting.done()
    done.set_result(None)
    await waiting
    assert first.done() and not first.cancelled()

    async def stuck() -> None:
        await future()  # never resolved

    second = tasks.spawn(stuck(), cancel_at_close=True, awaited=True)
    await tasks.cancel()
    assert second.cancelled() and len(tasks) == 0
    await tasks.wait()
