"""
Acknowledged commits (:py:meth:`rbfly.streams.parts.offsets.Offsets.commit`):
a store, then queries until the broker reports the offset, sent again on a
new connection, and a typed timeout when it never comes. A broker stub
without sockets: what the commit sends, and what the queries answer.
"""

from __future__ import annotations

import typing as tp

import pytest

from rbfly.streams.error import ConnectionLost, OffsetCommitTimeout, error_for_code
from rbfly.streams.parts.offsets import Offsets
from rbfly.streams.protocol import QueryOffset, QueryOffsetResponse, ResponseCode, StoreOffset

class Protocol:
    """
    A connection: StoreOffset is applied after ``lag`` queries (the
    broker writes it asynchronously), unless ``drop``; a query may lose
    the connection once.
    """
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.sent: list[StoreOffset] = []

    def send(self, command: StoreOffset) -> None:
        self.sent.append(command)
        if not self.broker.drop:
            self.broker.pending = (command.offset, self.broker.lag)

    async def request(self, command: QueryOffset, context: str = '') -> QueryOffsetResponse:
        broker = self.broker
        broker.queries += 1
        if broker.lose_at == broker.queries:
            broker.pending = None  # lost with the connection
            broker.lost = True
            raise ConnectionLost('lost')
        if broker.pending is not None:
            value, lag = broker.pending
            broker.pending = None if lag == 0 else (value, lag - 1)
            if lag == 0:
                broker.stored = value
        if broker.stored is None:
            raise error_for_code(ResponseCode.NO_OFFSET, context)
        return QueryOffsetResponse(1, ResponseCode.OK, broker.stored)

class Broker:
    def __init__(self, lag: int = 0, drop: bool = False, stored: int | None = None) -> None:
        self.lag = lag
        self.drop = drop
        self.stored = stored
        self.pending: tuple[int, int] | None = None
        self.queries = 0
        self.lose_at = -1
        self.lost = False
        self.connections: list[Protocol] = []

    async def get(self) -> Protocol:
        """The connection: a new one after a loss."""
        if not self.connections or self.lost:
            self.connections.append(Protocol(self))
            self.lost = False
        return self.connections[-1]

def offsets(broker: Broker) -> Offsets:
    return Offsets(tp.cast(tp.Any, broker), tp.cast(tp.Any, None))

async def test_commit_waits_for_the_broker() -> None:
    """The store is written after a few queries: the commit returns then."""
    broker = Broker(lag=3, stored=1)
    await offsets(broker).commit('orders', 'billing', 7)
    assert broker.stored == 7
    assert broker.queries == 4
    assert [c.offset for c in broker.connections[0].sent] == [7]

async def test_commit_first_offset() -> None:
    """Nothing stored before: "no offset" answers until the store is written."""
    broker = Broker(lag=2)
    await offsets(broker).commit('orders', 'billing', 0)
    assert broker.stored == 0

async def test_commit_again_on_a_new_connection() -> None:
    """A connection lost during the commit may have lost the store: sent again."""
    broker = Broker(lag=5, stored=1)
    broker.lose_at = 2
    await offsets(broker).commit('orders', 'billing', 9)
    assert broker.stored == 9
    assert [[c.offset for c in p.sent] for p in broker.connections] == [[9], [9]]

async def test_commit_timeout() -> None:
    """A store the broker never reports: a typed timeout, naming it."""
    broker = Broker(drop=True, stored=2)
    with pytest.raises(OffsetCommitTimeout) as info:
        await offsets(broker).commit('orders', 'billing', 4, timeout=0.2)
    error = info.value
    assert isinstance(error, TimeoutError)
    assert (error.stream, error.reference, error.offset, error.seen) == \
        ('orders', 'billing', 4, 2)
    assert str(error) == (
        "offset 4 of stream 'orders' under reference 'billing' not stored in 0.2s (the"
        ' broker reports offset 2); does another consumer store under that name?'
    )
    # queried again (at 1 ms, then up to 50 ms apart), and not a busy
    # loop (thousands); the count moves with the machine's speed: 3 under
    # emulation (aarch64), so no lower bound finer than "again"
    assert 2 <= broker.queries <= 20

async def test_commit_timeout_nothing_stored() -> None:
    broker = Broker(drop=True)
    with pytest.raises(OffsetCommitTimeout, match='reports nothing') as info:
        await offsets(broker).commit('orders', 'billing', 4, timeout=0.1)
    assert info.value.seen is None

@pytest.mark.parametrize(('value', 'error'), [
    ('4', TypeError), (True, TypeError), (-1, ValueError), (2 ** 64, ValueError),
])
async def test_commit_bad_offset(value: object, error: type[Exception]) -> None:
    broker = Broker()
    with pytest.raises(error, match='offset must be'):
        await offsets(broker).commit('orders', 'billing', value)  # type: ignore[arg-type]
    assert broker.connections == []
