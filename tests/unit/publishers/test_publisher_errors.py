"""
A publisher's reaction to the broker's PublishError, without a broker: a
message rejected for good fails its waiter; one sent while the broker had
dropped the publisher (its stream's leader moved) is kept to be sent again
and the publisher is declared again. Also how a publisher waits for its
confirmations.
"""

import asyncio
import inspect
import typing as tp
from time import monotonic

import pytest

from rbfly.streams import MessageRejected
from rbfly.streams.metrics import Counters
from rbfly.streams.publishers._confirm import Confirmation
from rbfly.streams.publishers.awaited import Publisher, PublisherPipelined

class Client:
    """A publisher's host (:py:class:`rbfly.streams.publishers.base.PublisherHost`)."""
    def __init__(self) -> None:
        self.unknown: list[object] = []
        self.counters = Counters()
        self.spin = 0.0

    def publisher_unknown(self, publisher: object) -> None:
        self.unknown.append(publisher)

    async def wait_recovery(self, publisher: object) -> None:
        raise AssertionError('no connection to recover')

async def test_publish_errors() -> None:
    client = Client()
    publisher = Publisher(tp.cast(tp.Any, client), 'orders', 0, 'name', 0)
    loop = asyncio.get_running_loop()
    futures = [loop.create_future() for _ in range(2)]
    for pid, fut in zip((1, 2), futures, strict=True):
        publisher._unconfirmed[pid] = 'm{}'.format(pid)
        publisher._waiting[pid] = Confirmation(fut, 1)

    publisher.on_error([(1, 0x12)])  # publisher does not exist
    assert publisher._unconfirmed == {1: 'm1', 2: 'm2'}
    assert not futures[0].done()
    assert client.unknown == [publisher]

    publisher.on_error([(2, 0x02)])  # stream does not exist: rejected
    assert publisher._unconfirmed == {1: 'm1'}
    assert isinstance(futures[1].exception(), MessageRejected)

    publisher.on_confirm([1])
    assert futures[0].result() is None
    assert (client.counters.confirmed, client.counters.errored) == (1, 1)

class SpinClient(Client):
    def __init__(self, spin: float) -> None:
        super().__init__()
        self.spin = spin

async def confirmation_polls(spin: float, since_confirm: float, monkeypatch: tp.Any) -> int:
    """
    Await a confirmation that comes five loop iterations later; return how
    often the publisher looked at the clock while it waited.
    """
    import rbfly.streams.publishers.base as module

    now = 100.0
    calls = 0

    def clock() -> float:
        nonlocal calls
        calls += 1
        return now

    monkeypatch.setattr(module, 'monotonic', clock)
    publisher = Publisher(tp.cast(tp.Any, SpinClient(spin)), 'orders', 0, 'name', 0)
    publisher._confirmed_at = now - since_confirm
    future = asyncio.get_running_loop().create_future()

    async def confirm() -> None:
        for _ in range(5):
            await asyncio.sleep(0)
        future.set_result(None)

    task = asyncio.ensure_future(confirm())
    await publisher._confirmation(future)
    await task
    assert publisher._confirmed_at == now
    return calls

async def test_publishing_loop_polls_for_confirmation(monkeypatch: tp.Any) -> None:
    """
    A publisher sending right after its last confirmation polls the
    connection while it waits; one sending after a pause, or with spin 0,
    sleeps at once.
    """
    assert await confirmation_polls(0.001, 0.0001, monkeypatch) > 4
    assert await confirmation_polls(0.001, 0.01, monkeypatch) == 2
    assert await confirmation_polls(0, 0.0, monkeypatch) == 1

async def test_cancelled_while_polling(monkeypatch: tp.Any) -> None:
    """Cancelling a publisher polling for a confirmation cancels the wait."""
    publisher = Publisher(tp.cast(tp.Any, SpinClient(5)), 'orders', 0, 'name', 0)
    publisher._confirmed_at = monotonic()
    future = asyncio.get_running_loop().create_future()
    task = asyncio.ensure_future(publisher._confirmation(future))
    for _ in range(3):
        await asyncio.sleep(0)
    assert not task.done()  # polling for 5 s
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

async def test_confirm_timeout_bookkeeping() -> None:
    """
    Deadlines are kept only with a confirm_timeout, forgotten as messages
    are confirmed, and an overdue message fails alone.
    """
    from rbfly.streams import ConfirmTimeout

    client = Client()
    publisher = Publisher(tp.cast(tp.Any, client), 'orders', 0, 'name', 0)
    publisher._deadline(range(1, 3))
    assert not publisher._deadlines and not publisher._deadlines.armed  # no timeout set

    publisher.confirm_timeout = 0.05
    loop = asyncio.get_running_loop()
    futures = {pid: loop.create_future() for pid in (1, 2, 3)}
    for pid, fut in futures.items():
        publisher._unconfirmed[pid] = 'm{}'.format(pid)
        publisher._waiting[pid] = Confirmation(fut, 1)
    publisher._deadline(range(1, 3))
    publisher._deadline([3])
    assert len(publisher._deadlines) == 2

    publisher.on_confirm([1, 2])
    assert len(publisher._deadlines) == 1  # the first send's are all confirmed
    await asyncio.sleep(0.1)
    error = futures[3].exception()
    assert isinstance(error, ConfirmTimeout)
    assert error.publishing_id == 3
    assert publisher._unconfirmed == {}
    assert not publisher._deadlines and not publisher._deadlines.armed
    assert client.counters.errored == 1
    assert futures[1].result() is None

class SmallWindow(PublisherPipelined):
    window = 3
    batch_size = 2

async def test_pipelined_window_of_subclass() -> None:
    """
    A subclass's ``window`` and ``batch_size`` are what the C path of
    ``send`` uses: within the window a message is taken at once (a done
    awaitable), past it ``send`` returns a coroutine that waits for room.
    """
    p = SmallWindow(tp.cast(tp.Any, Client()), 'orders', 0, 'name', 0)
    p._send_buffer = lambda: None  # type: ignore[method-assign]
    assert (p.window, p.batch_size) == (3, 2)
    taken = [p.send('m{}'.format(i)) for i in range(3)]
    assert not any(inspect.iscoroutine(t) for t in taken)
    assert [await t for t in taken] == [1, 2, 3]
    waiting = p.send('m3')
    assert inspect.iscoroutine(waiting)
    waiting.close()

    p.window = 5  # as client.publisher(..., window=5) sets it
    assert p.window == 5
    assert not inspect.iscoroutine(p.send('m4'))
    assert PublisherPipelined(tp.cast(tp.Any, Client()), 's', 0, 'n', 0).window == 10_000
