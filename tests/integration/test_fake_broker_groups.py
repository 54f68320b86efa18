"""
The fake broker's single-active-consumer groups seen from a test: who is
active in a group (:py:meth:`~rbfly.testing.FakeBroker.group_members`), a
hand-off on demand (:py:meth:`~rbfly.testing.FakeBroker.hand_off`), and
the connection closed when a client leaves a ``ConsumerUpdate``
unanswered. What RabbitMQ does as well is in ``test_behaviour.py``.
"""

import asyncio
from collections.abc import AsyncIterator

import pytest

from rbfly.streams import streams_client
from rbfly.testing import FakeBroker, GroupMember

from .test_behaviour import Consumer, Trace

@pytest.fixture
async def broker() -> AsyncIterator[FakeBroker]:
    async with FakeBroker() as broker:
        yield broker

def states(members: list[GroupMember]) -> list[tuple[str | None, str]]:
    return [(m.connection_name, m.state) for m in members]

async def joined(broker: FakeBroker, stream: str, count: int) -> None:
    """
    Wait until the group named ``group`` of a stream has ``count`` members
    (a client tells nothing when its subscription is answered).
    """
    async with asyncio.timeout(10):
        await broker.wait_group(stream, 'group', lambda members: len(members) == count)

async def publish(url: str, stream: str, *bodies: str) -> None:
    """Publish to a stream, created if there is none."""
    client = streams_client(url)
    try:
        await client.create_stream(stream)
        async with client.publisher(stream) as pub:
            for body in bodies:
                await pub.send(body)
    finally:
        await client.disconnect()

async def test_group_members(broker: FakeBroker) -> None:
    """
    Each partition of a super stream has a group of its own; its members
    are in the order they joined, with their states: while the first
    member steps down from partition 1 it is ``deactivating``, and the
    second waits for its answer.
    """
    partitions = await _super_stream(broker, 3)
    trace = Trace()
    gate = asyncio.Event()
    a = Consumer(broker.url, 'a', trace, gate)
    b = Consumer(broker.url, 'b', trace)
    try:
        a.start('orders')
        await trace.until(lambda: trace.calls == ['a+'] * 3)
        b.start('orders')
        await trace.until(lambda: 'a-' in trace.calls)
        assert states(broker.group_members(partitions[1], 'group')) == [
            ('a', 'deactivating'), ('b', 'waiting'),
        ]
        gate.set()
        await trace.until(lambda: 'b+' in trace.calls)
        await publish(broker.url, partitions[1], 'x')
        await trace.until(lambda: trace.bodies('b') == ['x'])
        p1 = broker.group_members(partitions[1], 'group')
        assert states(p1) == [('a', 'waiting'), ('b', 'active')]
        assert [m.receiving for m in p1] == [False, True]
        assert [m.active for m in p1] == [False, True]
        for p in partitions[0], partitions[2]:
            assert states(broker.group_members(p, 'group')) == [('a', 'active'), ('b', 'waiting')]
        assert broker.group_members(partitions[0], 'no-such-group') == []
    finally:
        await a.close()
        await b.close()
    assert broker.group_members(partitions[0], 'group') == []

async def test_hand_off_plain_stream(broker: FakeBroker) -> None:
    """
    A hand-off on demand: the active member steps down (storing its
    offset), then the next one is active and continues after that offset;
    the next hand-off goes back to the first.
    """
    await publish(broker.url, 'orders', *('m{}'.format(i) for i in range(5)))
    trace = Trace()
    a, b = Consumer(broker.url, 'a', trace), Consumer(broker.url, 'b', trace)
    try:
        a.start(stream='orders')
        await trace.until(lambda: len(trace.bodies('a')) == 5)
        b.start(stream='orders')
        await joined(broker, 'orders', 2)
        assert trace.calls == ['a+']  # b waits, told nothing

        member = await broker.hand_off('orders', 'group')
        assert member is not None
        assert (member.connection_name, member.state, member.receiving) == ('b', 'active', True)
        assert trace.calls == ['a+', 'a-', 'a answers', 'b+']
        assert states(broker.group_members('orders', 'group')) == [
            ('b', 'active'), ('a', 'waiting'),
        ]
        await publish(broker.url, 'orders', 'm5')
        await trace.until(lambda: trace.bodies('b') == ['m5'])

        member = await broker.hand_off('orders', 'group')
        assert member is not None and member.connection_name == 'a'
        assert trace.calls[4:] == ['b-', 'b answers', 'a+']
        await publish(broker.url, 'orders', 'm6')
        await trace.until(lambda: len(trace.bodies('a')) == 6)
        assert trace.bodies('a') == ['m{}'.format(i) for i in (0, 1, 2, 3, 4, 6)]
        assert trace.bodies('b') == ['m5']
    finally:
        await a.close()
        await b.close()

async def test_hand_off_partition(broker: FakeBroker) -> None:
    """
    A hand-off of a partition: its group's order turns by one, and the
    member the partition's index chooses then is the next one; when that
    member leaves, the other takes over at once.
    """
    partitions = await _super_stream(broker, 2)
    trace = Trace()
    a, b = Consumer(broker.url, 'a', trace), Consumer(broker.url, 'b', trace)
    try:
        a.start('orders')
        await trace.until(lambda: trace.calls == ['a+'] * 2)
        b.start('orders')  # partition 1 goes to b
        await trace.until(lambda: 'b+' in trace.calls)
        assert trace.calls == ['a+', 'a+', 'a-', 'a answers', 'b+']

        member = await broker.hand_off(partitions[0], 'group')
        assert member is not None and member.connection_name == 'b'
        assert trace.calls[5:] == ['a-', 'a answers', 'b+']
        assert states(broker.group_members(partitions[0], 'group')) == [
            ('b', 'active'), ('a', 'waiting'),
        ]
        await publish(broker.url, partitions[0], 'x0')
        await publish(broker.url, partitions[1], 'x1')
        await trace.until(lambda: len(trace.bodies('b')) == 2)
        assert trace.bodies('b') == ['x0', 'x1']

        await b.store()
        await b.leave()
        await trace.until(lambda: trace.calls.count('a+') == 4)
        assert trace.calls[8:] == ['a+', 'a+']
        await publish(broker.url, partitions[0], 'y0')
        await publish(broker.url, partitions[1], 'y1')
        await trace.until(lambda: len(trace.bodies('a')) == 2)
        assert trace.bodies('a') == ['y0', 'y1']
    finally:
        await a.close()
        await b.close()

async def test_hand_off_of_one_member(broker: FakeBroker) -> None:
    """A group of one member stays as it is; no group is a ``LookupError``."""
    trace = Trace()
    a = Consumer(broker.url, 'a', trace)
    try:
        await publish(broker.url, 'orders')
        a.start(stream='orders')
        await trace.until(lambda: trace.calls == ['a+'])
        member = await broker.hand_off('orders', 'group')
        assert member is not None and member.connection_name == 'a'
        assert trace.calls == ['a+']
        with pytest.raises(LookupError, match='no-such-group'):
            await broker.hand_off('orders', 'no-such-group')
    finally:
        await a.close()

async def test_step_down_unanswered() -> None:
    """
    A client that never answers its step down holds the group until the
    broker's request timeout: then its connection is closed, and the next
    member is active (the client recovers, and joins the group again, last).
    """
    async with FakeBroker(request_timeout=0.3) as broker:
        await publish(broker.url, 'orders')
        trace = Trace()
        never = asyncio.Event()
        a = Consumer(broker.url, 'a', trace, never)
        b = Consumer(broker.url, 'b', trace)
        try:
            a.start(stream='orders')
            await trace.until(lambda: trace.calls == ['a+'])
            b.start(stream='orders')
            await joined(broker, 'orders', 2)
            async with asyncio.timeout(10):
                member = await broker.hand_off('orders', 'group')
            assert member is not None and member.connection_name == 'b'
            assert trace.calls == ['a+', 'a-', 'b+']
            await joined(broker, 'orders', 2)  # a recovered, and joined again
            assert states(broker.group_members('orders', 'group')) == [
                ('b', 'active'), ('a', 'waiting'),
            ]
        finally:
            never.set()
            await a.close()
            await b.close()

def test_bad_request_timeout() -> None:
    with pytest.raises(ValueError, match='request_timeout'):
        FakeBroker(request_timeout=0)

async def _super_stream(broker: FakeBroker, partitions: int) -> list[str]:
    client = streams_client(broker.url)
    try:
        return await client.create_super_stream('orders', partitions)
    finally:
        await client.disconnect()
