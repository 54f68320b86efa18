"""
Bookkeeping of unconfirmed messages (rbfly.streams.publishers._confirm) and the
awaitable that is done at once (rbfly.streams.aio._ready), without a broker.
"""

import asyncio
import typing as tp

import pytest

from rbfly.amqp import MessageCtx
from rbfly.streams.aio._ready import ready
from rbfly.streams.publishers._confirm import Confirmation, confirm, explicit_ids, track
from rbfly.streams.publishers._unconfirmed import Unconfirmed

def kept(items: dict[int, object]) -> Unconfirmed:
    """Unconfirmed messages, as a dictionary of them."""
    u = Unconfirmed()
    for pid, m in items.items():
        u[pid] = m
    return u

def test_explicit_ids_none() -> None:
    """Plain messages and messages without an id of their own: None."""
    assert explicit_ids(['a', MessageCtx('b'), b'c'], 7, Unconfirmed()) is None
    assert explicit_ids([], 7, Unconfirmed()) is None

def test_explicit_ids_continue_from_own() -> None:
    """A message with its own id; later messages continue from it."""
    messages = ['a', MessageCtx('b', stream_publish_id=20), 'c', 'd']
    assert explicit_ids(messages, 7, Unconfirmed()) == [7, 20, 21, 22]

def test_explicit_ids_repeat_or_waiting() -> None:
    """An id twice, or one waiting for confirmation: ValueError."""
    with pytest.raises(ValueError, match='must not repeat'):
        explicit_ids(['a', MessageCtx('b', stream_publish_id=7)], 7, Unconfirmed())
    with pytest.raises(ValueError, match=r'waiting for confirmation: 3\.\.3'):
        explicit_ids([MessageCtx('b', stream_publish_id=3)], 7, kept({3: 'x'}))

async def test_track_and_confirm() -> None:
    """A group's future is done when its last message is confirmed."""
    unconfirmed = Unconfirmed()
    waiting: dict[int, Confirmation] = {}
    future = asyncio.get_running_loop().create_future()
    c = Confirmation(future, 3)
    track(unconfirmed, waiting, ['a', 'b', 'c'], 10, None, c)
    assert unconfirmed == {10: 'a', 11: 'b', 12: 'c'}
    assert waiting == {10: c, 11: c, 12: c}
    confirm(unconfirmed, waiting, [10, 12, 99])  # 99: unknown, ignored
    assert not future.done()
    assert unconfirmed == {11: 'b'}
    confirm(unconfirmed, waiting, (11,))
    assert future.done()
    assert unconfirmed == {} and waiting == {}

def test_confirm_counts_body_bytes() -> None:
    """
    ``confirm`` returns the body bytes of the messages it forgot, as the
    pipelined publisher's window in bytes counts them: bytes, str
    (characters), bare or in a MessageCtx; other bodies count 0.
    """
    unconfirmed = kept({
        1: b'abc', 2: 'żółw', 3: MessageCtx(b'12345'), 4: {'a': 1}, 5: MessageCtx(7),
    })
    assert confirm(unconfirmed, {}, [1, 2, 99]) == 7
    assert confirm(unconfirmed, {}, [3, 4, 5]) == 5
    assert unconfirmed == {}

async def test_track_with_ids_without_confirmation() -> None:
    """Explicit ids; no confirmation: only the unconfirmed messages."""
    unconfirmed = Unconfirmed()
    waiting: dict[int, Confirmation] = {}
    track(unconfirmed, waiting, ['a', 'b'], 0, [5, 9], None)
    assert unconfirmed == {5: 'a', 9: 'b'} and waiting == {}
    with pytest.raises(ValueError, match='1 ids for 2 messages'):
        track(unconfirmed, waiting, ['a', 'b'], 0, [5], None)

async def test_confirmation_fail() -> None:
    """A failed group raises the error; a later confirmation is ignored."""
    future = asyncio.get_running_loop().create_future()
    c = Confirmation(future, 2)
    c.fail(RuntimeError('gone'))
    c.confirm()
    c.confirm()
    with pytest.raises(RuntimeError, match='gone'):
        await future

async def test_ready() -> None:
    """Done at once: awaited, as a task, under wait_for and gather."""
    assert await ready(1) == 1
    assert await asyncio.create_task(ready(2)) == 2
    assert await asyncio.wait_for(ready(3), 1) == 3
    assert list(await asyncio.gather(ready(4), ready(5))) == [4, 5]
    assert asyncio.iscoroutine(ready(6))

def test_ready_protocols() -> None:
    """The iterator and coroutine methods: the value once, then None."""
    r = ready((1, 2))
    with pytest.raises(StopIteration) as ex:
        r.send(None)
    assert ex.value.value == (1, 2)  # a tuple stays whole
    with pytest.raises(StopIteration) as ex:
        next(iter(r.__await__()))
    assert ex.value.value is None
    with pytest.raises(KeyError):
        ready(1).throw(KeyError('x'))
    r = ready((1, 2))
    r.close()
    with pytest.raises(StopIteration) as ex:
        r.send(None)
    assert ex.value.value is None

IDS = [0, 1, 255, 256, 2**30 - 1, 2**30, 2**31, 2**63 - 1, 2**63, 2**64 - 2]

def test_track_and_confirm_boundary_ids() -> None:
    """
    Ids around the one-digit ints of CPython (2**30) and the signed 64-bit
    bound are kept and confirmed as the ints they are.
    """
    unconfirmed = Unconfirmed()
    for pid in IDS:
        track(unconfirmed, {}, ['m', 'n'], pid, None, None)
    expected = sorted({p for pid in IDS for p in (pid, pid + 1)})
    assert sorted(unconfirmed) == expected
    assert all(type(p) is int for p in unconfirmed)
    assert confirm(unconfirmed, {}, tuple(expected)) == len(expected)
    assert unconfirmed == {}

def test_confirm_none_body_and_missing() -> None:
    """A message with a None body, or an unknown id, counts 0 bytes."""
    unconfirmed = kept({1: None, 2: b'ab'})
    assert confirm(unconfirmed, {}, [1, 2, 3]) == 2
    assert unconfirmed == {}

async def test_confirm_sees_a_wait_added_by_a_confirmation() -> None:
    """
    A confirmation of another type runs any code: a wait it adds for a
    later id of the same frame is counted off in the same call.
    """
    future = asyncio.get_running_loop().create_future()
    later = Confirmation(future, 1)
    waiting: dict[int, tp.Any] = {}  # confirm() takes any object with confirm()

    class Adds:
        def confirm(self) -> None:
            waiting[3] = later

    waiting[1] = Adds()
    confirm(Unconfirmed(), waiting, [1, 2, 3])
    assert future.done() and waiting == {}

async def test_confirm_ids_of_a_frame() -> None:
    """
    The ids of a PublishConfirm frame as decoded (read as C integers):
    messages forgotten, their bytes counted, waiting callers counted off;
    an id of no message is ignored.
    """
    import struct

    from rbfly.streams.protocol import PublishConfirm
    from rbfly.streams.protocol._frames import decode_hot

    def frame(*ids: int) -> PublishConfirm:
        data = struct.pack('>HHBI', 3, 1, 0, len(ids)) + b''.join(struct.pack('>Q', i) for i in ids)
        decoded = decode_hot(memoryview(data))
        assert isinstance(decoded, PublishConfirm)
        return decoded

    unconfirmed = Unconfirmed()
    waiting: dict[int, Confirmation] = {}
    future = asyncio.get_running_loop().create_future()
    c = Confirmation(future, 2)
    track(unconfirmed, waiting, ['ab', 'cde'], 2**40, None, c)
    track(unconfirmed, {}, ['f'], 2**40 + 2, None, None)
    assert confirm(unconfirmed, waiting, frame(2**40, 7).publishing_ids) == 2
    assert not future.done() and list(unconfirmed) == [2**40 + 1, 2**40 + 2]
    assert confirm(unconfirmed, waiting, frame(2**40 + 1, 2**40 + 2).publishing_ids) == 4
    assert future.done() and not unconfirmed and waiting == {}
