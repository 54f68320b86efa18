"""
A subscription sends the Credit commands its policy asks for, only while
its connection is open, and marks the chunks whose credit is held
(no event loop: chunks are handed to it as the connection would).
"""

from __future__ import annotations

import typing as tp

from rbfly.streams.offset import Offset
from rbfly.streams.protocol.commands import Credit, OffsetSpec
from rbfly.streams.subscriptions.flow import CreditWhenProcessed, FlowStrategy, ManualCredit
from rbfly.streams.subscriptions.options import ReadOptions
from rbfly.streams.subscriptions.subscription import Subscription

from ._chunks import chunk

class Connection:
    """Records the commands sent; open until closed."""
    def __init__(self) -> None:
        self.sent: list[object] = []
        self.is_open = True

    def send(self, command: object) -> None:
        self.sent.append(command)

def subscribed(flow: FlowStrategy | None = None) -> tuple[Subscription, Connection]:
    sub = Subscription(
        's', OffsetSpec.first(), 0, {},
        ReadOptions(amqp=False, credit=2, buffer_bytes=20_000, flow=flow),
        resume_offset=Offset.FIRST,
    )
    connection = Connection()
    sub.protocol = tp.cast(tp.Any, connection)
    sub.ident = 3
    sub.attached()
    return sub, connection

def test_default_grants_as_chunks_arrive() -> None:
    """
    The first chunk (98 bytes) sets the target to 64 chunks (at most): 63 credits go
    at once; none while the connection is closed, the missing ones after.
    """
    sub, connection = subscribed()
    assert sub.credit == 2
    sub.on_chunk(chunk(0, 10), None)
    assert connection.sent == [Credit(3, 63)]
    connection.is_open = False
    for i in range(1, 17):
        sub.on_chunk(chunk(i * 10, 10), None)
    assert connection.sent == [Credit(3, 63)]
    connection.is_open = True
    sub.on_chunk(chunk(170, 10), None)
    assert connection.sent == [Credit(3, 63), Credit(3, 17)]

def test_manual_credit() -> None:
    """A taken chunk holds its credit until the application says it is processed."""
    flow = ManualCredit(credit=2)
    sub, connection = subscribed(flow)
    sub.on_chunk(chunk(0, 4), None)
    taken = sub.poll()
    assert taken is not None and taken.release_at == -1
    assert connection.sent == []
    flow.processed()
    assert connection.sent == [Credit(3, 1)]

def test_credit_when_processed() -> None:
    """The iterator releases the credit at the ratio's message; asking for more does too."""
    sub, connection = subscribed(CreditWhenProcessed(ratio=0.5, credit=2))
    sub.on_chunk(chunk(0, 4), None)
    taken = sub.poll()
    assert taken is not None and taken.release_at == 2 and taken.release is not None
    assert connection.sent == []
    assert sub.poll() is None  # the chunk taken is processed
    assert connection.sent == [Credit(3, 1)]
    taken.release()  # the iterator's release, late: nothing more
    assert connection.sent == [Credit(3, 1)]

def test_paused_grants_nothing() -> None:
    """
    A paused subscription (the application paused its stream) grants no
    credit, whatever the policy asks; the policy asks again once it is
    taken from after the resume.
    """
    sub, connection = subscribed()
    sub.paused = True
    for i in range(3):
        sub.on_chunk(chunk(i * 10, 10), None)
    assert connection.sent == []
    sub.paused = False
    assert sub.poll() is not None
    assert connection.sent and all(isinstance(c, Credit) for c in connection.sent)

def test_paused_flow_strategy_withholds_release() -> None:
    """A chunk processed under a flow strategy while paused: its credit goes back after."""
    sub, connection = subscribed(CreditWhenProcessed(1))
    sub.on_chunk(chunk(0, 10), None)
    taken = sub.poll()
    assert taken is not None and taken.release is not None
    sent = len(connection.sent)
    sub.paused = True
    taken.release()
    assert len(connection.sent) == sent
    sub.paused = False
    assert sub.poll() is None  # (idle: the policy asks again)
    assert len(connection.sent) == sent + 1
