"""
A subscription's state (:py:meth:`Subscription.describe`): what the
broker may send it, where it is, what it buffers, and the consumer
updates under way (chunks are handed to it as the connection would).
"""

from __future__ import annotations

import asyncio
import typing as tp

from rbfly.streams.lifecycle import ResourceState
from rbfly.streams.offset import Offset
from rbfly.streams.protocol.commands import Credit, OffsetSpec
from rbfly.streams.subscriptions.options import ReadOptions
from rbfly.streams.subscriptions.state import SubscriptionState
from rbfly.streams.subscriptions.subscription import Subscription

from ._chunks import chunk
from .test_subscription_credit import Connection, subscribed

class Answering(Connection):
    """Records the answers to consumer updates too."""
    def __init__(self) -> None:
        super().__init__()
        self.answered: list[tuple[int, OffsetSpec]] = []
        self.answer = asyncio.Event()

    def answer_consumer_update(self, correlation_id: int, spec: OffsetSpec) -> None:
        self.answered.append((correlation_id, spec))
        self.answer.set()

def test_credits_and_buffer() -> None:
    """
    The credits the broker holds as the client counts them: the initial
    2, one used by each chunk, 63 granted after the first; the chunks
    buffered until taken.
    """
    sub, connection = subscribed()
    assert sub.describe() == SubscriptionState(
        's', None, 3, ResourceState.OPENING, True, False, True, 0, None, 0, 0, 2, 0,
    )
    sub.on_chunk(chunk(0, 10), None)
    sub.on_chunk(chunk(10, 5), None)
    assert connection.sent == [Credit(3, 63)]
    state = sub.describe()
    assert (state.credits, state.buffered_chunks, state.buffered_bytes) == (63, 2, 98 + 73)
    assert (state.next_offset, state.received_offset) == (0, 15)
    assert sub.poll() is not None
    state = sub.describe()
    assert (state.buffered_chunks, state.next_offset) == (1, 10)
    connection.is_open = False
    assert not sub.describe().connected

def test_str() -> None:
    """One line, naming what a stalled consumer's report needs."""
    sub, _ = subscribed()
    assert str(sub.describe()) == 's (None) #3 opening: next 0 received None buffered 0 (0 B)' \
        ' credits 2'

async def test_consumer_update_under_way() -> None:
    """
    A single active consumer is inactive until the broker activates it;
    the update counts as under way until it is answered, then the
    subscription is active from the offset found.
    """
    found = asyncio.Event()

    async def activation(active: bool, on: tp.Callable[[], bool]) -> OffsetSpec:
        await found.wait()  # (the stored offset being queried)
        return OffsetSpec.offset(42)

    sub = Subscription(
        'p-0', OffsetSpec.first(), 0, {'name': 'g', 'single-active-consumer': 'true'},
        ReadOptions(amqp=False, credit=2), activation=activation, resume_offset=Offset.FIRST,
    )
    connection = Answering()
    sub.protocol = tp.cast(tp.Any, connection)
    sub.ident = 0
    sub.attached()
    state = sub.describe()
    assert (state.name, state.single_active, state.active, state.updating) == (
        'g', True, False, 0)
    sub.on_consumer_update(tp.cast(tp.Any, connection), 7, True)
    await asyncio.sleep(0)
    state = sub.describe()
    assert (state.active, state.updating) == (False, 1)
    assert str(state) == 'p-0 (g) #0 opening, inactive: next 0 received None buffered 0 (0 B)' \
        ' credits 2, 1 consumer update(s) under way'
    found.set()
    await connection.answer.wait()
    await asyncio.sleep(0)  # (the update's task ends after its answer)
    assert connection.answered == [(7, OffsetSpec.offset(42))]
    state = sub.describe()
    assert (state.active, state.next_offset, state.received_offset) == (True, 42, None)
    assert state.updating == 0
