"""
The fake broker's single-active-consumer groups, sans-IO: rbfly's client
cores on broker sessions (:py:class:`.test_fake_core.Pair`), frame by
frame, as RabbitMQ 4.3 runs the groups (:py:mod:`rbfly.testing.groups`).
"""

import pytest

from rbfly.streams.protocol import (
    CreateSuperStream,
    DeclarePublisher,
    Deliver,
    OffsetSpec,
    Publish,
    ResponseCode,
    Subscribe,
    SubscribeResponse,
    Unsubscribe,
)
from rbfly.streams.protocol.states import ConsumerUpdateRequested
from rbfly.testing.config import BrokerConfig
from rbfly.testing.core import BrokerCore
from rbfly.testing.store import Store

from .test_fake_core import Pair, message

class Clock:
    """The broker's clock, in milliseconds, moved by the test."""
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now

@pytest.fixture
def clock() -> Clock:
    return Clock()

@pytest.fixture
def broker(clock: Clock) -> BrokerCore:
    return BrokerCore(BrokerConfig(port=5999, request_timeout=60_000), clock)

def member(broker: BrokerCore, partitions: int = 3) -> Pair:
    """A client on the broker, with super stream ``ss`` (partitions ``ss-0``...)."""
    pair = Pair(broker)
    pair.open()
    names = ['ss-{}'.format(i) for i in range(partitions)]
    pair.client.request(CreateSuperStream('ss', names, [str(i) for i in range(partitions)], {}),
                        0.0)
    pair.run()
    return pair

def subscribe(
        pair: Pair, stream: str, sid: int = 0, super_stream: str | None = 'ss',
) -> list[object]:
    props = {'single-active-consumer': 'true', 'name': 'g'}
    if super_stream is not None:
        props['super-stream'] = super_stream
    pair.client.request(Subscribe(sid, stream, OffsetSpec.first(), 10, props), 0.0)
    return pair.run()

def updates(events: list[object]) -> list[ConsumerUpdateRequested]:
    return [e for e in events if isinstance(e, ConsumerUpdateRequested)]

def answer(pair: Pair, update: ConsumerUpdateRequested,
           spec: OffsetSpec | None = None) -> list[object]:
    pair.client.answer_consumer_update(update.correlation_id, spec or OffsetSpec.none(), 0.0)
    return pair.run()

def states(broker: BrokerCore, stream: str) -> list[str]:
    return [m.state for m in broker.group_members(stream, 'g')]

def test_partition_index() -> None:
    """A partition's index is its place in its super stream; -1 for no partition of it."""
    store = Store()
    store.super_streams['ss'] = [('ss-a', 'a'), ('ss-b', 'b')]
    assert [store.partition_index('ss', s) for s in ('ss-a', 'ss-b', 'x')] == [0, 1, -1]
    assert store.partition_index('none', 'ss-a') == -1

def test_step_down_waits_for_the_answer(broker: BrokerCore) -> None:
    """
    A member joining partition 1 (1 % 2 members: the second) makes the
    active one step down: it gets ``active=false`` and no chunk after it;
    the joining member is told nothing until the answer, then it is
    active, and reads from where its own answer says.
    """
    a, b = member(broker), Pair(broker)
    b.open()
    [up] = updates(subscribe(a, 'ss-1'))
    assert up.active
    answer(a, up)
    assert states(broker, 'ss-1') == ['active']

    assert updates(subscribe(b, 'ss-1')) == []
    [down] = updates(a.run())
    assert not down.active and down.subscription_id == 0
    assert states(broker, 'ss-1') == ['deactivating', 'waiting']

    a.client.request(DeclarePublisher(1, '', 'ss-1'), 0.0)
    a.run()
    a.client.send(Publish(1, [(1, message(0))]), 0.0)
    assert not [e for e in a.run() if isinstance(e, Deliver)]  # stepping down: no chunk
    assert b.run() == []

    answer(a, down)
    [up] = updates(b.run())
    assert up.active
    assert states(broker, 'ss-1') == ['waiting', 'active']
    events = answer(b, up, OffsetSpec.first())
    assert [type(e) for e in events] == [Deliver]
    assert [m.receiving for m in broker.group_members('ss-1', 'g')] == [False, True]

def test_join_and_leave_spread_partitions(broker: BrokerCore) -> None:
    """
    Three partitions, members joining and leaving: the active member of
    partition ``i`` is member ``i % n``; one that leaves hands over at once.
    """
    a, b, c = member(broker), Pair(broker), Pair(broker)
    b.open()
    c.open()
    for i in range(3):
        for up in updates(subscribe(a, 'ss-{}'.format(i), i)):
            answer(a, up)
    for i in range(3):
        assert updates(subscribe(b, 'ss-{}'.format(i), i)) == []
    # partition 1 moves to b
    [down] = updates(a.run())
    assert (down.subscription_id, down.active) == (1, False)
    answer(a, down)
    [up] = updates(b.run())
    assert (up.subscription_id, up.active) == (1, True)
    answer(b, up)
    # c joins: partition 2 (2 % 3) moves to it
    for i in range(3):
        subscribe(c, 'ss-{}'.format(i), i)
    [down] = updates(a.run())
    assert (down.subscription_id, down.active) == (2, False)
    answer(a, down)
    [up] = updates(c.run())
    assert (up.subscription_id, up.active) == (2, True)
    answer(c, up)
    assert [states(broker, 'ss-{}'.format(i)) for i in range(3)] == [
        ['active', 'waiting', 'waiting'],
        ['waiting', 'active', 'waiting'],
        ['waiting', 'waiting', 'active'],
    ]
    # c, active on partition 2, leaves: a (2 % 2) is active at once
    c.client.request(Unsubscribe(2), 0.0)
    c.run()
    [up] = updates(a.run())
    assert (up.subscription_id, up.active) == (2, True)
    assert b.run() == []

def test_told_again_when_the_group_changes_during_a_step_down(broker: BrokerCore) -> None:
    """
    Each member joining or leaving while the active one steps down has it
    told again (as RabbitMQ does), unless the index points back to it; its
    first answer activates the member chosen then, later ones change nothing.
    """
    a, b, c = member(broker), Pair(broker), Pair(broker)
    b.open()
    c.open()
    answer(a, updates(subscribe(a, 'ss-1'))[0])
    subscribe(b, 'ss-1')  # a, b: 1 % 2 is b
    [first] = updates(a.run())
    subscribe(c, 'ss-1')  # a, b, c: 1 % 3 is b
    [second] = updates(a.run())
    subscribe(c, 'ss-1', 1)  # a, b, c, c: 1 % 4 is b
    [third] = updates(a.run())
    b.client.request(Unsubscribe(0), 0.0)
    b.run()
    [fourth] = updates(a.run())  # a, c, c: 1 % 3 is c
    assert not any(u.active for u in (first, second, third, fourth))
    assert states(broker, 'ss-1') == ['deactivating', 'waiting', 'waiting']
    answer(a, first)
    [up] = updates(c.run())
    assert (up.subscription_id, up.active) == (0, True)
    for later in (second, third, fourth):
        answer(a, later)
    assert updates(c.run()) == [] and updates(a.run()) == []
    assert states(broker, 'ss-1') == ['waiting', 'active', 'waiting']

def test_index_back_to_the_stepping_down_member(broker: BrokerCore) -> None:
    """
    When the index points back to the member stepping down, it is not told
    again; its answer makes it active again (told so).
    """
    a, b = member(broker), Pair(broker)
    b.open()
    answer(a, updates(subscribe(a, 'ss-1'))[0])
    subscribe(b, 'ss-1')  # a, b: 1 % 2 is b
    [down] = updates(a.run())
    b.client.request(Unsubscribe(0), 0.0)
    b.run()
    assert updates(a.run()) == []  # a alone: the index is back to it
    assert states(broker, 'ss-1') == ['deactivating']
    [up] = updates(answer(a, down))
    assert up.active
    assert states(broker, 'ss-1') == ['active']

def test_leaving_while_stepping_down(broker: BrokerCore) -> None:
    """
    A member that leaves while it steps down has its step down answered
    first (the member chosen with it is activated), then it is removed,
    which steps that member down for the one chosen without it (as
    measured on RabbitMQ 4.3).
    """
    a, b, c = member(broker), Pair(broker), Pair(broker)
    b.open()
    c.open()
    answer(a, updates(subscribe(a, 'ss-1'))[0])
    subscribe(b, 'ss-1')  # a, b: 1 % 2 is b
    subscribe(c, 'ss-1')  # a, b, c: 1 % 3 is b
    assert [u.active for u in updates(a.run())] == [False, False]
    a.client.request(Unsubscribe(0), 0.0)
    a.run()
    # b, chosen with a, is activated; without a (b, c: 1 % 2) c is chosen
    up, down = updates(b.run())
    assert (up.active, down.active) == (True, False)
    assert updates(c.run()) == []
    assert states(broker, 'ss-1') == ['deactivating', 'waiting']
    answer(b, up)
    answer(b, down)
    [up] = updates(c.run())
    assert up.active
    assert states(broker, 'ss-1') == ['waiting', 'active']

def test_plain_stream_member_of_a_partition_group(broker: BrokerCore) -> None:
    """A group is of one partition index: another one is refused."""
    a, b = member(broker), Pair(broker)
    b.open()
    subscribe(a, 'ss-0')
    [response] = [e for e in subscribe(b, 'ss-0', super_stream=None)
                  if isinstance(e, SubscribeResponse)]
    assert response.code == ResponseCode.PRECONDITION_FAILED
    assert len(broker.group_members('ss-0', 'g')) == 1

def test_hand_off(broker: BrokerCore) -> None:
    """The order turns by one; the active member steps down, then the next is active."""
    a, b = member(broker), Pair(broker)
    b.open()
    answer(a, updates(subscribe(a, 'ss-0', super_stream=None))[0])
    subscribe(b, 'ss-0', super_stream=None)
    group = broker.hand_off('ss-0', 'g')
    assert not group.settled
    [down] = updates(a.run())
    assert not down.active
    answer(a, down)
    [up] = updates(b.run())
    assert up.active and not group.settled
    answer(b, up)
    assert group.settled
    assert states(broker, 'ss-0') == ['active', 'waiting']
    assert [m.subscription_id for m in broker.group_members('ss-0', 'g')] == [0, 0]
    with pytest.raises(LookupError):
        broker.hand_off('ss-0', 'other')

def test_unanswered_update_closes_the_connection(broker: BrokerCore, clock: Clock) -> None:
    """
    A ``ConsumerUpdate`` left unanswered for the request timeout closes
    the connection, without a ``Close``; the next member is active.
    """
    a, b = member(broker), Pair(broker)
    b.open()
    answer(a, updates(subscribe(a, 'ss-1'))[0])
    subscribe(b, 'ss-1')
    [down] = updates(a.run())
    assert not down.active
    clock.now += 60_000
    assert broker.expire() == 0
    clock.now += 1
    assert broker.expire() == 1
    assert a.closed and a.session not in broker.sessions
    assert a.run() == []
    [up] = updates(b.run())
    assert up.active
    assert broker.expire() == 0  # b's activation is not overdue yet

def test_no_request_timeout(clock: Clock) -> None:
    broker = BrokerCore(BrokerConfig(port=5999, request_timeout=None), clock)
    a = member(broker)
    [up] = updates(subscribe(a, 'ss-0'))
    assert up.active
    clock.now += 10 ** 9
    assert broker.expire() == 0
    assert not a.closed
