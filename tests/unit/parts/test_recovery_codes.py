"""
What the recovery of a changed stream does with each answer of the
broker's Metadata for it (:py:class:`~rbfly.streams.parts.recovery.Recovery`,
:py:mod:`rbfly.streams.parts.metadata`): every code other than OK, "not
available" and "does not exist" was read as a deleted stream, so an access
refused or an internal error of the moment ended the stream's publishers
and subscriptions with ``StreamDoesNotExist``. No sockets, no broker.
"""

from __future__ import annotations

import asyncio
import typing as tp

import pytest

from rbfly.streams.error import AccessRefused, ConnectionLost, StreamDoesNotExist
from rbfly.streams.parts.declare import Declarer as RealDeclarer
from rbfly.streams.parts.tasks import Background
from rbfly.streams.protocol.commands import (
    Broker,
    Metadata,
    MetadataResponse,
    MetadataUpdate,
    StreamMetadata,
)
from rbfly.streams.protocol.constants import ResponseCode

from .test_recovery_scope import STREAM, Connections, Declarer, Item, Manager, Protocol, recovery

class Answers(Protocol):
    """A connection whose Metadata answers the codes given, in turn (the last one then)."""

    def __init__(self, *codes: int) -> None:
        super().__init__('own')
        self.codes = list(codes)

    async def request(self, command: object, *args: object) -> object:
        assert isinstance(command, Metadata), command
        code = self.codes.pop(0) if len(self.codes) > 1 else self.codes[0]
        return MetadataResponse(
            1, [Broker(0, 'localhost', 5552)],
            [StreamMetadata(s, code, 0, []) for s in command.streams],
        )


async def restore(protocol: Answers, *, sub: bool = True) -> tuple[Item, Item | None, Declarer]:
    """
    Restore a publisher and a subscription (or a publisher alone: the fake
    declarer declares publishers only) of a changed stream.
    """
    own = Manager(protocol)
    publisher = Item('publishers', STREAM, own, own.protocol)
    subscription = Item('subscriptions', STREAM, own, own.protocol) if sub else None
    declarer = Declarer()
    tasks = Background()
    recovery(Connections(own, []), declarer, tasks).metadata_update(
        tp.cast(tp.Any, own.protocol), MetadataUpdate(6, STREAM),
    )
    await tasks.wait()
    return publisher, subscription, declarer


async def test_access_refused() -> None:
    """
    A stream the user may not use any more ends its publishers and
    subscriptions with the broker's error, naming its code, not as deleted.
    """
    publisher, sub, declarer = await restore(Answers(ResponseCode.ACCESS_REFUSED))
    assert sub is not None
    for item in (publisher, sub):
        assert isinstance(item.error, AccessRefused)
        assert not isinstance(item.error, StreamDoesNotExist)
        assert item.error.code == ResponseCode.ACCESS_REFUSED
        assert item.owner is None
    assert declarer.declared == []


@pytest.mark.parametrize('code', [ResponseCode.INTERNAL_ERROR, 0x7f])
async def test_error_of_the_moment(code: int) -> None:
    """
    An error code of the moment is asked again; once the stream has a
    leader, its publisher is declared again.
    """
    publisher, _sub, declarer = await restore(Answers(code, code, ResponseCode.OK), sub=False)
    assert declarer.declared == [publisher]
    assert publisher.error is None


async def test_deleted() -> None:
    """A deleted stream ends them with ``StreamDoesNotExist``, as before."""
    publisher, sub, declarer = await restore(Answers(ResponseCode.STREAM_DOES_NOT_EXIST))
    assert isinstance(publisher.error, StreamDoesNotExist)
    assert sub is not None and isinstance(sub.error, StreamDoesNotExist)
    assert declarer.declared == []


@pytest.mark.parametrize(
    ('code', 'listed'),
    [(ResponseCode.OK, True), (ResponseCode.STREAM_NOT_AVAILABLE, True),
     (ResponseCode.INTERNAL_ERROR, True), (ResponseCode.STREAM_DOES_NOT_EXIST, False)],
)
async def test_declare_again_listed(code: int, listed: bool) -> None:
    """
    A declaration after a reconnection refused while the stream is listed
    is asked again; an internal error of the Metadata is no deletion.
    """
    assert await RealDeclarer._listed(tp.cast(tp.Any, Answers(code)), STREAM) is listed


async def test_declare_again_refused() -> None:
    """Metadata refused (access refused) ends the declaration with that error."""
    with pytest.raises(AccessRefused):
        await RealDeclarer._listed(tp.cast(tp.Any, Answers(ResponseCode.ACCESS_REFUSED)), STREAM)


async def test_disconnect_cancels_restore() -> None:
    """
    Cancelling the client's background tasks (what ``disconnect()`` does
    first) ends the restore of a stream that has no leader at once, instead
    of leaving it to ask for up to ``STREAM_RECOVERY_TIMEOUT`` seconds
    (``disconnect()`` waited that long); what it had still to declare ends
    with ``ConnectionLost`` saying why.
    """
    own = Manager(Answers(ResponseCode.STREAM_NOT_AVAILABLE))
    publisher = Item('publishers', STREAM, own, own.protocol)
    sub = Item('subscriptions', STREAM, own, own.protocol)
    tasks = Background()
    recovery(Connections(own, []), Declarer(), tasks).metadata_update(
        tp.cast(tp.Any, own.protocol), MetadataUpdate(6, STREAM),
    )
    for _ in range(5):  # asked once: no leader, it sleeps
        await asyncio.sleep(0)
    assert len(tasks) == 1

    await tasks.cancel()
    assert len(tasks) == 0  # nothing left for disconnect() to wait for
    for item in (publisher, sub):
        assert isinstance(item.error, ConnectionLost)
        assert 'disconnected' in str(item.error)
        assert item.owner is None


async def test_cancelled_while_declaring() -> None:
    """
    A publisher whose declaration is under way when the restore is
    cancelled ends too, and the cancellation is not swallowed.
    """
    own = Manager(Answers(ResponseCode.OK))
    publisher = Item('publishers', STREAM, own, own.protocol)

    class Stuck(Declarer):
        async def restore_publisher(self, protocol: Protocol, item: Item) -> None:
            await asyncio.get_running_loop().create_future()  # never answered

    class Recorded(Background):
        def __init__(self) -> None:
            super().__init__()
            self.spawned: list[asyncio.Task[None]] = []

        def spawn(self, *args: tp.Any, **kw: tp.Any) -> asyncio.Task[None]:
            task = super().spawn(*args, **kw)
            self.spawned.append(task)
            return task

    tasks = Recorded()
    recovery(Connections(own, []), Stuck(), tasks).metadata_update(
        tp.cast(tp.Any, own.protocol), MetadataUpdate(6, STREAM),
    )
    for _ in range(5):
        await asyncio.sleep(0)
    (task,) = tasks.spawned
    await tasks.cancel()
    assert task.cancelled()
    assert isinstance(publisher.error, ConnectionLost)
    assert publisher.owner is None
