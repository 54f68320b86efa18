"""
Automatic offset tracking (:py:mod:`rbfly.streams.subscriptions.tracking`)
without sockets: what is stored, committed and forgotten as a single
active consumer's streams are handed over and back.
"""

from __future__ import annotations

import typing as tp

import pytest

from rbfly.streams.error import ConnectionLost
from rbfly.streams.protocol import StoreOffset
from rbfly.streams.subscriptions.tracking import OffsetTracker

class Protocol:
    """An open connection: the offsets stored on it."""
    def __init__(self) -> None:
        self.is_open = True
        self.stored: list[tuple[str, int]] = []

    def send(self, command: StoreOffset) -> None:
        self.stored.append((command.stream, command.offset))

class Broker:
    """Commits: what was committed (or a lost connection)."""
    def __init__(self) -> None:
        self.committed: list[tuple[str, int]] = []
        self.lost = False

    async def commit(self, stream: str, reference: str, offset: int) -> None:
        if self.lost:
            raise ConnectionLost('lost')
        self.committed.append((stream, offset))

def tracker(every: int = 100) -> tuple[OffsetTracker, Protocol, Broker]:
    protocol, broker = Protocol(), Broker()
    t = OffsetTracker(lambda: tp.cast(tp.Any, protocol), 'group', every, 60, broker.commit)
    return t, protocol, broker

async def test_commit_stream() -> None:
    """A commit of a stream stores its last processed offset and waits for it."""
    t, _protocol, broker = tracker()
    t.processed('s-0', 4)
    t.processed('s-1', 9)
    await t.commit('s-0')
    assert broker.committed == [('s-0', 4)]
    await t.commit()
    assert broker.committed == [('s-0', 4), ('s-1', 9)]
    await t.commit()  # nothing new
    assert len(broker.committed) == 2
    t.close()

async def test_released_stream_not_stored() -> None:
    """A stream handed over: nothing more stored of it, until owned again."""
    t, protocol, broker = tracker(every=1)
    t.processed('s-0', 4)
    t.release('s-0')
    t.processed('s-0', 5)
    await t.commit()
    assert protocol.stored == [('s-0', 4)]
    assert broker.committed == []
    t.own('s-0', 10)
    t.processed('s-0', 10)
    await t.commit()
    assert broker.committed == [('s-0', 10)]
    t.close()

async def test_owned_again_ignores_older_offsets() -> None:
    """
    Handed over and back: a message handed out before (processed late)
    is not stored, which would move the offset the other owner stored
    backwards.
    """
    t, protocol, broker = tracker(every=1)
    t.release('s-0')
    t.own('s-0', 6)  # the other owner stored 5
    t.processed('s-0', 0)  # the application moves past a message it held since
    await t.commit()
    assert protocol.stored == []
    assert broker.committed == []
    t.processed('s-0', 6)
    await t.commit()
    assert broker.committed == [('s-0', 6)]
    t.close()

async def test_commit_lost_connection() -> None:
    """A commit on a lost connection raises (a hand-off logs it, an end warns)."""
    t, _protocol, broker = tracker()
    t.processed('s-0', 4)
    broker.lost = True
    with pytest.raises(ConnectionLost):
        await t.commit()
    t.close()

async def test_commit_without_connection() -> None:
    """No connection: nothing committed, a warning, no error."""
    t, protocol, broker = tracker()
    t.processed('s-0', 4)
    protocol.is_open = False
    await t.commit()
    assert broker.committed == []
    t.close()
