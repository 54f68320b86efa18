"""
The blocking facade's loop thread (no broker): calls from a running event
loop are refused, a call past its timeout is cancelled and raises
RequestTimeout, a closed loop refuses work, closing is idempotent and
runs the closing coroutine once.
"""

import asyncio

import pytest

import rbfly.streams
import rbfly.streams.error
from rbfly.streams import RequestTimeout
from rbfly.streams.blocking import BlockingCallInLoop, ClientClosed
from rbfly.streams.blocking.loop import LoopThread, check_no_loop

def test_run_and_close() -> None:
    closed: list[int] = []

    async def closing() -> None:
        closed.append(1)

    runner = LoopThread('test', closing)

    async def add(a: int, b: int) -> int:
        return a + b

    assert runner.run(add(1, 2), 1, 'add') == 3
    runner.close(5)
    runner.close(5)
    assert closed == [1]
    assert runner.loop.is_closed()
    coro = add(1, 2)
    with pytest.raises(ClientClosed):
        runner.run(coro, 1, 'add')
    # one except clause catches the async client's and the blocking one's
    with pytest.raises(rbfly.streams.ClientClosed) as info:
        runner.call(print)
    assert isinstance(info.value, rbfly.streams.error.ClientClosed)
    assert isinstance(info.value, rbfly.streams.StreamsError)
    assert isinstance(info.value, RuntimeError)
    assert rbfly.streams.ClientClosed is rbfly.streams.error.ClientClosed
    assert 'ClientClosed' in rbfly.streams.__all__

def test_timeout_cancels() -> None:
    """Past its timeout a call raises RequestTimeout (a TimeoutError); its task is cancelled."""
    async def nothing() -> None:
        pass

    runner = LoopThread('test', nothing)
    cancelled = asyncio.Event()

    async def hang() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def was_cancelled() -> bool:
        await cancelled.wait()
        return True

    try:
        with pytest.raises(RequestTimeout, match=r'hanging did not complete in 0\.1s'):
            runner.run(hang(), 0.1, 'hanging')
        assert runner.run(was_cancelled(), 10, 'check')
    finally:
        runner.close(5)

def test_own_timeout_error_kept() -> None:
    """A TimeoutError the coroutine raises itself is raised as it is."""
    async def nothing() -> None:
        pass

    async def fails() -> None:
        raise TimeoutError('its own')

    runner = LoopThread('test', nothing)
    try:
        with pytest.raises(TimeoutError, match='its own'):
            runner.run(fails(), 5, 'failing')
    finally:
        runner.close(5)

async def test_refused_in_loop() -> None:
    with pytest.raises(BlockingCallInLoop, match='use the async API'):
        check_no_loop('x')

def test_allowed_without_loop() -> None:
    check_no_loop('x')
