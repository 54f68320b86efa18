"""
A single active consumer leaving its group while the broker asks it to
step down answers the broker before it unsubscribes: RabbitMQ 4.0,
told that a member it asked to step down left, waits for the answer that
never comes and activates no other member (a super stream's partition
was left with one member, inactive, in a loop of
``test_windows_consumer_group_handoff``).
"""

from __future__ import annotations

import asyncio
import struct
import typing as tp
import zlib

from rbfly.streams import Offset
from rbfly.streams.parts.subscribing import SubscribeOptions, Subscribing
from rbfly.streams.protocol.commands import OffsetSpec
from rbfly.streams.subscriptions.subscription import Subscription

def chunk(first: int, records: int) -> bytes:
    data = b''.join(struct.pack('>I', 1) + b'x' for _ in range(records))
    return struct.pack(
        '>BBHIqQQIIIB3x', 0x50, 0, records, records, 1_700_000_000_000, 1, first,
        zlib.crc32(data), len(data), 0, 0,
    ) + data

class Connection:
    """What goes to the broker, in order: answers and Unsubscribes."""
    def __init__(self) -> None:
        self.is_open = True
        self.sent: list[str] = []

    def send(self, command: object) -> None:
        pass  # (credits)

    def answer_consumer_update(self, correlation_id: int, spec: OffsetSpec) -> None:
        self.sent.append('answer {}'.format(correlation_id))

class Placer:
    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    async def place_new(self, sub: Subscription) -> None:
        sub.protocol = tp.cast(tp.Any, self.connection)
        sub.ident = 0
        sub.attached()

    def release_subscription(self, sub: Subscription) -> bool:
        return False

class Declarer:
    def unsubscribe(self, protocol: Connection, sub: Subscription) -> None:
        protocol.sent.append('unsubscribe')
        sub.protocol = None

class Offsets:
    def tracker(self, *args: object) -> None:
        return None  # (no offset tracking)

class Options:
    credit = 2
    buffer_bytes = 1 << 20

async def test_step_down_answered_before_unsubscribe() -> None:
    """
    The broker asks the member to step down while it holds a chunk of the
    stream; the application ends the iteration: the step-down is answered
    (once the chunk is processed), then the subscription unsubscribed.
    """
    connection = Connection()

    async def activation(active: bool, on: tp.Callable[[], bool]) -> OffsetSpec:
        await asyncio.sleep(0)  # (the stored offset, looked up)
        return OffsetSpec.none()

    sub = Subscription(
        'p-3', OffsetSpec.first(), 0, False, 2, {'name': 'g', 'single-active-consumer': 'true'},
        activation=activation, resume_offset=Offset.FIRST,
    )
    sub.active = True  # (activated before)

    async def make() -> list[Subscription]:
        return [sub]

    none = tp.cast(tp.Any, None)
    subscribing = Subscribing(
        tp.cast(tp.Any, Options()), none, tp.cast(tp.Any, Placer(connection)),
        tp.cast(tp.Any, Declarer()), tp.cast(tp.Any, Offsets()), none,
    )
    chunks = subscribing.chunks(
        make, SubscribeOptions(name='g', single_active=True, offset=Offset.FIRST),
    )
    fetch = asyncio.ensure_future(anext(chunks))
    await asyncio.sleep(0)
    sub.on_chunk(chunk(0, 3), None)
    assert len(await fetch) == 3  # held by the application
    sub.on_consumer_update(tp.cast(tp.Any, connection), 7, False)
    await asyncio.sleep(0)
    assert sub.describe().updating == 1  # waits for the chunk held
    await chunks.aclose()
    assert connection.sent == ['answer 7', 'unsubscribe']
