"""
When the pipelined publisher sends its buffer (no ``linger``), without a
broker: a lone message at once; messages sent while another waits for its
confirmation, when that confirmation (or a rejection) comes, or after
``DEFER_MAX`` at most; a full buffer at once. Also its window in bytes.
"""

import asyncio
import typing as tp

import pytest

from rbfly.streams import ConnectionLost
from rbfly.streams.error import PublisherError
from rbfly.streams.metrics import Counters
from rbfly.streams.protocol import Publish, PublishV2, decode
from rbfly.streams.protocol._publish import PublishEncoder
from rbfly.streams.publishers.pipelined import DEFER_MAX, PublisherPipelined

class Client:
    """A publisher's host (:py:class:`rbfly.streams.publishers.base.PublisherHost`)."""
    def __init__(self) -> None:
        self.counters = Counters()
        self.spin = 0.0

    def publisher_unknown(self, publisher: object) -> None:
        raise AssertionError('not in these tests')

class Protocol:
    """An open connection that keeps the Publish frames sent."""
    is_open = True
    is_writable = True

    def __init__(self) -> None:
        self.publish_encoder = PublishEncoder(1 << 20)
        self.frames: list[list[int]] = []

    def send_frame(self, frame: bytes | memoryview) -> None:
        cmd = decode(bytes(frame)[4:])
        assert isinstance(cmd, Publish | PublishV2)
        self.frames.append([m[0] for m in cmd.messages])

def publisher() -> tuple[PublisherPipelined, Protocol]:
    p = PublisherPipelined(tp.cast(tp.Any, Client()), 'orders', 0, 'name', 0)
    protocol = Protocol()
    p.protocol = tp.cast(tp.Any, protocol)
    return p, protocol

async def iterations(n: int = 3) -> None:
    for _ in range(n):
        await asyncio.sleep(0)

async def test_lone_message_at_once() -> None:
    """With nothing waiting for a confirmation, a message goes at the end of the iteration."""
    p, protocol = publisher()
    assert await p.send(b'a') == 1
    await iterations()
    assert protocol.frames == [[1]]
    p.on_confirm([1])
    await p.send(b'b')
    await iterations()
    assert protocol.frames == [[1], [2]]

async def test_wait_for_the_confirmation_in_flight() -> None:
    """
    Messages sent, one an iteration, while one waits for its confirmation go
    together when it comes; then a lone message goes at once again.
    """
    p, protocol = publisher()
    await p.send(b'a')
    await iterations()
    for m in (b'b', b'c', b'd'):
        await p.send(m)
        await iterations()
    assert protocol.frames == [[1]]
    p.on_confirm([1])
    assert protocol.frames == [[1], [2, 3, 4]]
    p.on_confirm([2, 3, 4])
    await p.send(b'e')
    await iterations()
    assert protocol.frames == [[1], [2, 3, 4], [5]]
    assert not p._deferred

async def test_rejection_sends_too() -> None:
    """A rejection of what was in flight answers it as a confirmation does."""
    p, protocol = publisher()
    await p.send(b'a')
    await iterations()
    await p.send(b'b')
    await iterations()
    p.on_error([(1, 0x02)])
    assert protocol.frames == [[1], [2]]

async def test_wait_bounded() -> None:
    """Without any answer, the buffer goes after DEFER_MAX."""
    p, protocol = publisher()
    await p.send(b'a')
    await iterations()
    await p.send(b'b')
    await iterations()
    assert protocol.frames == [[1]]
    await asyncio.sleep(DEFER_MAX * 2)
    assert protocol.frames == [[1], [2]]

async def test_full_buffer_at_once() -> None:
    """A buffer of ``batch_size`` messages does not wait."""
    p, protocol = publisher()
    p.batch_size = 3
    await p.send(b'a')
    await iterations()
    for m in (b'b', b'c', b'd'):
        await p.send(m)
    assert protocol.frames == [[1], [2, 3, 4]]

async def test_flush_sends_at_once() -> None:
    """flush() sends a waiting buffer at once."""
    p, protocol = publisher()
    await p.send(b'a')
    await iterations()
    await p.send(b'b')
    await iterations()
    flushed = asyncio.create_task(p.flush())
    await iterations()
    assert protocol.frames == [[1], [2]]
    p.on_confirm([1, 2])
    await asyncio.wait_for(flushed, 1)

async def test_window_bytes_counts_bodies() -> None:
    """
    The window in bytes counts bodies buffered and unconfirmed, off as they
    are confirmed or rejected; send() waits while it is full.
    """
    p, _ = publisher()
    p.window_bytes = 100
    p.batch_bytes = 40
    await p.send(b'x' * 60)
    await p.send('y' * 30)
    assert p._pending_bytes == 90
    await p.send(b'z' * 20)  # room left: it goes in
    assert p._pending_bytes == 110
    waiting = asyncio.create_task(p.send(b'w'))
    await iterations()
    assert not waiting.done()
    p.on_confirm([3])
    await iterations()
    assert not waiting.done()  # 10 bytes free: not room for a batch (40)
    p.on_confirm([1])
    assert await asyncio.wait_for(waiting, 1) == 4
    assert p._pending_bytes == 31
    p.on_error([(2, 0x02)])
    assert p._pending_bytes == 1
    await iterations()
    p.on_confirm([4])
    assert p._pending_bytes == 0

async def test_connection_lost_keeps_order() -> None:
    """
    A buffer waiting for a confirmation when the connection is lost joins
    the unconfirmed messages at once: the recovery sends them all again in
    the order of their ids, even when it confirms some itself.
    """
    p, protocol = publisher()
    for m in (b'a', b'b', b'c'):
        await p.send(m)
        await iterations()
    assert protocol.frames == [[1]]
    p.on_connection_lost(ConnectionLost('gone'))
    assert p._buffer == [] and not p._deferred
    assert list(p._unconfirmed) == [1, 2, 3]
    new = Protocol()
    p.protocol = tp.cast(tp.Any, new)
    p.restore(1)  # the broker stored the first: confirmed, not sent again
    assert new.frames == [[2, 3]]
    await asyncio.sleep(DEFER_MAX * 2)  # no timer of the old connection left
    assert new.frames == [[2, 3]]

async def test_failing_filter_rejects_its_message() -> None:
    """
    A ``filter_extract`` that raises fails its message alone (to its waiter
    and flush), the others go; the publisher, and its connection, go on.
    """
    p, protocol = publisher()

    def extract(m: tp.Any) -> str:
        return {b'a': 'x', b'c': 'z'}[m.body]  # KeyError for b'b'

    p._filter_extract = extract
    for m in (b'a', b'b', b'c'):
        await p.send(m)
    await iterations()
    assert protocol.frames == [[1, 3]]
    p.on_confirm([1, 3])
    with pytest.raises(KeyError):
        await p.flush()
    assert p._pending_bytes == 0

async def test_cancelled_sender_leaves_the_others_waiting() -> None:
    """
    Senders waiting for room share one future: one of them cancelled (e.g.
    by its enqueue_timeout) must not cancel the others' wait.
    """
    p, _ = publisher()
    p.window = 2
    await p.send(b'a')
    await p.send(b'b')
    first = asyncio.create_task(p.send(b'c'))
    second = asyncio.create_task(p.send(b'd'))
    await iterations()
    assert not first.done() and not second.done()
    first.cancel()
    await iterations()
    assert first.cancelled()
    assert not second.done()
    p.on_confirm([1, 2])
    assert await asyncio.wait_for(second, 1) == 3

async def test_filter_failing_when_encoded_again() -> None:
    """
    A ``filter_extract`` that fails for a message only now and then: the
    messages found good one by one are sent even when encoding them
    together fails, not lost.
    """
    p, protocol = publisher()
    calls = {b'a': 0, b'b': 0, b'c': 0}

    def extract(m: tp.Any) -> str:
        calls[m.body] += 1
        if m.body == b'b' or (m.body == b'c' and calls[b'c'] == 2):
            raise ValueError('no filter value for {!r}'.format(m.body))
        return 'x'

    p._filter_extract = extract
    for m in (b'a', b'b', b'c'):
        await p.send(m)
    await iterations()
    assert sorted(pid for frame in protocol.frames for pid in frame) == [1, 3]
    assert sorted(p._unconfirmed) == [1, 3]
    p.on_confirm([1, 3])
    with pytest.raises(ValueError, match="b'b'"):
        await p.flush()

async def test_close_wakes_waiting_sender_and_flush() -> None:
    """
    A sender waiting for room and a flush waiting for confirmations in
    other tasks get the publisher's error when its context ends: nothing
    would wake them once it is detached.
    """
    p, _ = publisher()
    p.window = 2
    await p.send(b'a')
    await p.send(b'b')
    sender = asyncio.create_task(p.send(b'c'))
    flush = asyncio.create_task(p.flush())
    await iterations()
    assert not sender.done() and not flush.done()
    p.close()
    with pytest.raises(PublisherError, match='closed'):
        await asyncio.wait_for(sender, 1)
    with pytest.raises(PublisherError, match='closed'):
        await asyncio.wait_for(flush, 1)

async def test_listener_error_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    """
    A listener runs in the connection's callback: its error is logged and
    the other listeners, and the publisher, go on.
    """
    p, _ = publisher()
    seen: list[int] = []

    def broken(ids: tp.Sequence[int]) -> None:
        raise RuntimeError('listener bug')

    def broken_error(pid: int, error: Exception) -> None:
        raise ZeroDivisionError('listener bug')

    p.add_listener(on_confirm=broken)
    p.add_listener(on_confirm=seen.extend, on_error=broken_error)
    await p.send(b'a')
    await p.send(b'b')
    await iterations()
    p.on_confirm([1])
    p.on_error([(2, 0x02)])
    assert seen == [1]
    assert not p._unconfirmed
    failed = [r for r in caplog.records if 'listener' in r.getMessage()]
    assert len(failed) == 2
    assert failed[0].exc_info is not None and isinstance(failed[0].exc_info[1], RuntimeError)
    assert failed[1].exc_info is not None \
        and isinstance(failed[1].exc_info[1], ZeroDivisionError)

async def test_close_fails_confirmed_waiters() -> None:
    """
    ``confirmed()`` waiting in another task gets the error when the
    context ends (a detached publisher gets no confirmation), and a later
    call raises it at once; a flush cancelled before leaves no future with
    an unretrieved exception.
    """
    p, _ = publisher()
    pid = await p.send(b'a')
    await iterations()
    waiter = asyncio.create_task(p.confirmed(pid))
    flush = asyncio.create_task(p.flush())
    await iterations()
    flush.cancel()
    await iterations()
    p.close()
    with pytest.raises(PublisherError, match='closed'):
        await asyncio.wait_for(waiter, 1)
    with pytest.raises(PublisherError, match='closed'):
        await p.confirmed(pid)
    drained = p._drained
    assert drained is not None and drained.done()
    assert drained._log_traceback is False
