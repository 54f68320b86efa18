"""
Offset specifications made of an :py:class:`~rbfly.streams.Offset`
(:py:meth:`rbfly.streams.parts.offsets.Offsets.spec`): each type's value
with its class, a reference read with a typed `QueryOffset` request; and
where a subscription resumes, told when retention removed that offset
(:py:meth:`~rbfly.streams.parts.offsets.Offsets.resume_spec`).
"""

from __future__ import annotations

import typing as tp

import pytest

from rbfly.streams import Offset
from rbfly.streams.error import ConnectionLost, OffsetOutOfRange, RequestTimeout, error_for_code
from rbfly.streams.parts.offsets import Offsets
from rbfly.streams.protocol import OffsetSpec, QueryOffset, QueryOffsetResponse, ResponseCode
from rbfly.streams.subscriptions.gaps import GapWatch
from rbfly.streams.subscriptions.options import ReadOptions
from rbfly.streams.subscriptions.subscription import Subscription

from ..subscriptions._chunks import chunk

class Connections:
    """Answers QueryOffset with the offsets stored (none: "no offset")."""
    def __init__(self, stored: dict[str, int]) -> None:
        self.stored = stored
        self.asked: list[tuple[QueryOffset, str]] = []

    async def call(self, command: QueryOffset, context: str = '') -> QueryOffsetResponse:
        self.asked.append((command, context))
        offset = self.stored.get(command.reference)
        if offset is None:
            raise error_for_code(ResponseCode.NO_OFFSET, context)
        return QueryOffsetResponse(1, ResponseCode.OK, offset)

def offsets(stored: dict[str, int] | None = None) -> tuple[Offsets, Connections]:
    connections = Connections(stored or {})
    return Offsets(tp.cast(tp.Any, connections), tp.cast(tp.Any, None)), connections

SPECS = [
    (Offset.FIRST, OffsetSpec.first(), 0),
    (Offset.LAST, OffsetSpec.last(), 0),
    (Offset.NEXT, OffsetSpec.next(), 0),
    (Offset.offset(0), OffsetSpec.offset(0), 0),
    (Offset.offset(2 ** 64 - 1), OffsetSpec.offset(2 ** 64 - 1), 2 ** 64 - 1),
    (Offset.timestamp(1.5), OffsetSpec.timestamp(1500), 0),
    (Offset.timestamp(-2), OffsetSpec.timestamp(-2000), 0),
]

@pytest.mark.parametrize(('offset', 'spec', 'start'), SPECS, ids=[str(s[0]) for s in SPECS])
async def test_spec(offset: Offset, spec: OffsetSpec, start: int) -> None:
    """An offset without a reference is made a specification without a request."""
    parts, connections = offsets()
    assert await parts.spec('orders', offset) == (spec, start)
    assert connections.asked == []

async def test_reference_stored() -> None:
    """A reference starts after the offset stored, read with QueryOffset."""
    parts, connections = offsets({'app': 41})
    assert await parts.spec('orders', Offset.reference('app')) == (OffsetSpec.offset(42), 42)
    assert connections.asked == [
        (QueryOffset('app', 'orders'), "offset reference 'app' of stream 'orders'"),
    ]

async def test_reference_not_stored() -> None:
    """A reference with nothing stored starts at the first message."""
    parts, _ = offsets()
    assert await parts.spec('orders', Offset.reference('app')) == (OffsetSpec.first(), 0)

async def test_invalid_offset() -> None:
    """An offset whose value is not of its type's class (made past its checks) is refused."""
    offset = Offset.offset(5)
    object.__setattr__(offset, 'value', '5')
    parts, _ = offsets()
    with pytest.raises(ValueError, match='not a valid offset'):
        await parts.spec('orders', offset)

#
# resuming at an offset retention removed (rbfly/streams/subscriptions/gaps.py)
#

def resumable(
        first: int | Exception, told: list[OffsetOutOfRange], raises: bool = False,
) -> Subscription:
    """
    A subscription that received offsets 0 to 9; its stream starts at
    ``first`` now (or asking for it raises ``first``).
    """
    async def stats(stream: str) -> int:
        if isinstance(first, Exception):
            raise first
        return first

    async def report(gap: OffsetOutOfRange) -> None:
        told.append(gap)
        if raises:
            raise gap

    sub = Subscription(
        'orders', OffsetSpec.first(), 0, {}, ReadOptions(amqp=False), resume_offset=Offset.FIRST,
        gaps=GapWatch('orders', stats, report),
    )
    sub.on_chunk(chunk(0, 10), None)
    return sub

async def test_resume_removed() -> None:
    """Resumed at an offset retention removed meanwhile: told, as at the start."""
    told: list[OffsetOutOfRange] = []
    sub = resumable(50, told)
    parts, _ = offsets()
    assert await parts.resume_spec(sub) == OffsetSpec.offset(10)  # (the broker: at its first)
    [gap] = told
    assert (gap.stream, gap.offset, gap.first, gap.lost, gap.when) == \
        ('orders', 10, 50, 40, 'resume')

async def test_resume_removed_raise() -> None:
    """
    ``on_gap='raise'``: not subscribed again; the read ends with the
    error once the chunks received before are taken.
    """
    told: list[OffsetOutOfRange] = []
    sub = resumable(50, told, raises=True)
    parts, _ = offsets()
    assert await parts.resume_spec(sub) is None
    [gap] = told
    assert sub.error is gap
    taken = sub.poll()
    assert taken is not None and [m.stream_offset for m in taken] == list(range(10))
    with pytest.raises(OffsetOutOfRange):
        sub.poll()

async def test_resume_kept() -> None:
    """Resumed at an offset still in the stream: nothing said."""
    told: list[OffsetOutOfRange] = []
    sub = resumable(5, told)
    parts, _ = offsets()
    assert await parts.resume_spec(sub) == OffsetSpec.offset(10)
    assert told == []

async def test_resume_first_not_known() -> None:
    """
    The stream's first offset cannot be asked for at the resume (the
    statistics timed out on a busy broker): the subscription resumes
    unchecked, not failed (its read's check tells a gap after it).
    """
    told: list[OffsetOutOfRange] = []
    sub = resumable(RequestTimeout('no response to StreamStats in 10s'), told)
    parts, _ = offsets()
    assert await parts.resume_spec(sub) == OffsetSpec.offset(10)
    assert told == [] and sub.error is None

async def test_resume_connection_lost() -> None:
    """The connection lost again while asking: the recovery's to retry."""
    told: list[OffsetOutOfRange] = []
    sub = resumable(ConnectionLost('lost again'), told)
    parts, _ = offsets()
    with pytest.raises(ConnectionLost):
        await parts.resume_spec(sub)
