"""
A single active consumer's activation (``Subscribing.activate``) whose
subscription leaves its connection while the stored offset is looked up:
the activation is void, and the application's ``consumer_update`` callback
is not told it is active (it was told of the loss already; the subscription
made again may be an inactive member, which the broker never tells so).
"""

import asyncio
import typing as tp

import pytest

from rbfly.streams import ConsumerUpdateContext, Offset
from rbfly.streams.error import ConnectionLost
from rbfly.streams.parts.subscribing import Subscribing
from rbfly.streams.protocol.base import OffsetSpec

class Offsets:
    """Stored offsets, looked up when the test says."""
    def __init__(self) -> None:
        self.answer: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def query(self, stream: str, reference: str) -> int:
        return await self.answer


def subscribing(offsets: Offsets) -> Subscribing:
    none = tp.cast(tp.Any, None)  # (the parts an activation lost meanwhile does not use)
    return Subscribing(none, none, none, tp.cast(tp.Any, offsets), none, none)


async def test_activation_lost_meanwhile_not_told() -> None:
    """The connection is lost during the offset's lookup: ConnectionLost, no callback."""
    offsets = Offsets()
    told: list[ConsumerUpdateContext] = []
    on = [True]
    task = asyncio.ensure_future(subscribing(offsets).activate(
        'orders-1', 'group', Offset.FIRST, told.append, True, lambda: on[0],
    ))
    await asyncio.sleep(0)
    on[0] = False  # the subscription's connection lost
    offsets.answer.set_result(41)
    with pytest.raises(ConnectionLost, match="activating on stream 'orders-1'"):
        await task
    assert told == []


async def test_step_down_told_when_lost() -> None:
    """Stepping down is told whatever happened to the connection (nothing to void)."""
    offsets = Offsets()
    offsets.answer.set_result(41)
    told: list[ConsumerUpdateContext] = []
    spec = await subscribing(offsets).activate(
        'orders-1', 'group', Offset.FIRST, told.append, False, lambda: False,
    )
    assert spec == OffsetSpec.none()
    assert told == [ConsumerUpdateContext('orders-1', 'group', False, 41, Offset.offset(42))]
