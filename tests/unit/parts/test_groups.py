"""
Consumer group tooling (:py:mod:`rbfly.streams.parts.groups`): the offset
stored for a group to resume at an offset, the status computed from a
stream's statistics, and what a reset stores on brokers of each version,
with typed fakes of the parts it uses (no sockets).
"""

from __future__ import annotations

import typing as tp

import pytest

from rbfly.streams import FeatureNotSupported, Offset
from rbfly.streams.error import GroupActive, StreamDoesNotExist, error_for_code
from rbfly.streams.parts.ends import stream_end
from rbfly.streams.parts.groups import (
    BEFORE_FIRST,
    Groups,
    partition_status,
    resume_after,
    stored_before,
)
from rbfly.streams.parts.offsets import Offsets
from rbfly.streams.protocol import OffsetSpec, QueryOffsetResponse, ResponseCode
from rbfly.streams.types import PartitionReset, PartitionStatus

@pytest.mark.parametrize('start', [0, 1, 2, 41, 2 ** 63, 2 ** 64 - 1])
def test_stored_before(start: int) -> None:
    """The offset stored for a start is one a group resumes after, at the start."""
    stored = stored_before(start)
    assert 0 <= stored < 2 ** 64
    assert resume_after(stored) == start

def test_before_first() -> None:
    """Offset 0 has no offset before it: 2**64 - 1 (-1 modulo 2**64) is stored."""
    assert stored_before(0) == BEFORE_FIRST == 2 ** 64 - 1
    assert resume_after(BEFORE_FIRST) == 0

async def test_reference_before_first() -> None:
    """``Offset.reference`` of a group storing 2**64 - 1 starts at offset 0."""
    class Connections:
        async def call(self, command: object, context: str = '') -> QueryOffsetResponse:
            return QueryOffsetResponse(1, ResponseCode.OK, BEFORE_FIRST)

    offsets = Offsets(tp.cast(tp.Any, Connections()), tp.cast(tp.Any, None))
    assert await offsets.spec('orders', Offset.reference('app')) == (OffsetSpec.offset(0), 0)

STATS_43 = {'first_chunk_id': 0, 'committed_chunk_id': 9, 'committed_offset': 12,
            'last_chunk_id': 9}
STATS_40 = {'first_chunk_id': 0, 'committed_chunk_id': 9, 'last_chunk_id': 9}
EMPTY_43 = {'first_chunk_id': -1, 'committed_chunk_id': -1, 'committed_offset': -1,
            'last_chunk_id': -1}
EMPTY_311 = {'first_chunk_id': -1, 'committed_chunk_id': -1}

@pytest.mark.parametrize(('stats', 'expected'), [
    (STATS_43, (0, 12, True)),
    (STATS_40, (0, 9, False)),
    ({'first_chunk_id': 100, 'committed_chunk_id': 150}, (100, 150, False)),
    (EMPTY_43, (None, None, True)),
    (EMPTY_311, (None, None, False)),
])
def test_stream_end(stats: dict[str, int], expected: tuple[int | None, int | None, bool]) -> None:
    """The committed offset when the broker gives it (4.3), else the committed chunk id."""
    assert stream_end(stats) == expected

STATUS = [
    # nothing stored: the whole stream
    (None, STATS_43, PartitionStatus('s', None, 0, 12, 13, True)),
    # stored 3: resumes at 4, up to 12
    (3, STATS_43, PartitionStatus('s', 3, 0, 12, 9, True)),
    # stored the end: nothing left
    (12, STATS_43, PartitionStatus('s', 12, 0, 12, 0, True)),
    # stored past the end (a reset to an offset not written yet)
    (40, STATS_43, PartitionStatus('s', 40, 0, 12, 0, True)),
    # reset to the first message of a stream starting at 0
    (BEFORE_FIRST, STATS_43, PartitionStatus('s', BEFORE_FIRST, 0, 12, 13, True)),
    # retention removed what the group did not read: from the first offset
    (10, {'first_chunk_id': 100, 'committed_chunk_id': 150},
     PartitionStatus('s', 10, 100, 150, 51, False)),
    (None, {'first_chunk_id': 100, 'committed_chunk_id': 150},
     PartitionStatus('s', None, 100, 150, 51, False)),
    # empty stream: no lag
    (None, EMPTY_43, PartitionStatus('s', None, None, None, 0, True)),
    (BEFORE_FIRST, EMPTY_311, PartitionStatus('s', BEFORE_FIRST, None, None, 0, False)),
    # RabbitMQ 3.10: no statistics
    (5, None, PartitionStatus('s', 5, None, None, None, False)),
    (None, None, PartitionStatus('s', None, None, None, None, False)),
]

MESSAGES = [
    # messages end at 11 (offset 11 and 12 are stored offsets): caught up at 10
    (10, 11, PartitionStatus('s', 10, 0, 12, 0, True, True)),
    (11, 11, PartitionStatus('s', 11, 0, 12, 0, True, True)),
    (9, 11, PartitionStatus('s', 9, 0, 12, 1, True, False)),
    (None, 11, PartitionStatus('s', None, 0, 12, 11, True, False)),
    (BEFORE_FIRST, 11, PartitionStatus('s', BEFORE_FIRST, 0, 12, 11, True, False)),
    # no messages at all, offsets stored only
    (None, 0, PartitionStatus('s', None, 0, 12, 0, True, True)),
]

@pytest.mark.parametrize(('stored', 'messages_end', 'expected'), MESSAGES)
def test_lag_counts_to_the_last_message(
        stored: int | None, messages_end: int, expected: PartitionStatus,
) -> None:
    """The offsets stored after the last message are no lag: a group processed every message."""
    assert partition_status('s', stored, STATS_43, messages_end) == expected

@pytest.mark.parametrize(('stored', 'stats', 'expected'), STATUS)
def test_partition_status(
        stored: int | None, stats: dict[str, int] | None, expected: PartitionStatus,
) -> None:
    """Lag: offsets from where the group resumes (not before the first) to the end."""
    assert partition_status('s', stored, stats) == expected

# -- the part, with fakes of what it uses --

class Protocol:
    def __init__(self, version: tuple[int, ...]) -> None:
        self.broker_version = version

    def require(self, version: tuple[int, ...], feature: str) -> None:
        if self.broker_version < version:
            raise FeatureNotSupported('{} needs a newer broker'.format(feature))

class Connections:
    def __init__(self, version: tuple[int, ...]) -> None:
        self.protocol = Protocol(version)

    async def get(self) -> Protocol:
        return self.protocol

class FakeOffsets:
    """Stored offsets by (stream, reference); ``moving``: a consumer storing at each query."""
    def __init__(self, stored: dict[tuple[str, str], int], streams: set[str]) -> None:
        self.stored = stored
        self.streams = streams
        self.moving: set[str] = set()
        self.commits: list[tuple[str, str, int, float]] = []

    async def query(self, stream: str, reference: str) -> int:
        if stream not in self.streams:
            raise StreamDoesNotExist('stream {!r}'.format(stream))
        key = (stream, reference)
        if stream in self.moving:
            self.stored[key] = self.stored.get(key, 0) + 1
        if key not in self.stored:
            raise error_for_code(ResponseCode.NO_OFFSET)
        return self.stored[key]

    async def commit(self, stream: str, reference: str, value: int, timeout: float) -> None:
        self.commits.append((stream, reference, value, timeout))
        self.stored[(stream, reference)] = value

class FakeStreams:
    """Statistics of each stream, and offsets ``next`` and times resolve to."""
    def __init__(self, stats: dict[str, dict[str, int]], resolved: dict[object, int]) -> None:
        self.stats_of = stats
        self.resolved = resolved
        self.resolves: list[tuple[str, Offset]] = []

    async def stats(self, stream: str) -> dict[str, int]:
        return self.stats_of[stream]

    async def resolve(self, stream: str, offset: Offset, filter: object) -> int:
        self.resolves.append((stream, offset))
        return self.resolved[offset.value if offset.value is not None else offset.type]

class FakeSuperStreams:
    def __init__(self, partitions: dict[str, list[str]]) -> None:
        self.partitions_of = partitions

    async def partitions(self, super_stream: str) -> list[str]:
        if super_stream not in self.partitions_of:
            raise StreamDoesNotExist('super stream {!r}'.format(super_stream))
        return self.partitions_of[super_stream]

class FakeEnds:
    """The offset after each stream's last message (none: no messages)."""
    def __init__(self, ends: dict[str, int]) -> None:
        self.ends = ends

    async def last_chunk(self, stream: str) -> tuple[int, int, float] | None:
        end = self.ends.get(stream)
        return None if end is None else (end - 1, end, 0.0)

class Setup(tp.NamedTuple):
    groups: Groups
    offsets: FakeOffsets
    streams: FakeStreams

def setup(
        version: tuple[int, ...] = (4, 3, 0), stored: dict[tuple[str, str], int] | None = None,
) -> Setup:
    """Streams ``s`` (offsets 100-150, RabbitMQ 4.0 statistics), ``p-0``, ``p-1``, ``q``."""
    stats = {
        's': {'first_chunk_id': 100, 'committed_chunk_id': 150},
        'p-0': STATS_43, 'p-1': EMPTY_43, 'q': STATS_40,
    }
    offsets = FakeOffsets(dict(stored or {}), set(stats))
    streams = FakeStreams(stats, {Offset.NEXT.type: 151, 1000.0: 120})
    super_streams = FakeSuperStreams({'p': ['p-0', 'p-1'], 'none': []})
    groups = Groups(
        tp.cast(tp.Any, Connections(version)), tp.cast(tp.Any, offsets),
        tp.cast(tp.Any, streams), tp.cast(tp.Any, super_streams),
        tp.cast(tp.Any, FakeEnds({'p-0': 13})),
    )
    return Setup(groups, offsets, streams)

async def test_status_super_stream() -> None:
    """A status per partition, in order; nothing stored on one."""
    groups = setup(stored={('p-0', 'g'): 3}).groups
    assert await groups.status('g', None, 'p') == [
        # messages up to 12 (offset 13 is their end): 4..12 left
        PartitionStatus('p-0', 3, 0, 12, 9, True, False),
        PartitionStatus('p-1', None, None, None, 0, True, True),
    ]

async def test_status_310() -> None:
    """RabbitMQ 3.10: the stored offset, no statistics."""
    groups = setup((3, 10, 8), {('q', 'g'): 3}).groups
    assert await groups.status('g', 'q', None) == [
        PartitionStatus('q', 3, None, None, None, False),
    ]

@pytest.mark.parametrize(('stream', 'super_stream', 'error', 'match'), [
    (None, None, ValueError, 'exactly one of stream and super_stream, got neither'),
    ('s', 'p', ValueError, 'exactly one of stream and super_stream, got both'),
    ('', None, ValueError, 'stream name must be a non-empty str'),
    ('missing', None, StreamDoesNotExist, "stream 'missing'"),
    (None, 'missing', StreamDoesNotExist, "super stream 'missing'"),
    (None, 'none', StreamDoesNotExist, "super stream 'none' has no partitions"),
])
async def test_bad_streams(
        stream: str | None, super_stream: str | None, error: type[Exception], match: str,
) -> None:
    """Both or neither of stream and super_stream, a missing one: typed errors, nothing stored."""
    s = setup()
    with pytest.raises(error, match=match):
        await s.groups.status('g', stream, super_stream)
    with pytest.raises(error, match=match):
        await s.groups.reset('g', Offset.FIRST, stream, super_stream, True, False, 0)
    assert s.offsets.commits == []

async def test_bad_arguments() -> None:
    groups = setup().groups
    with pytest.raises(ValueError, match='consumer group name must be a non-empty str'):
        await groups.status('', 's', None)
    with pytest.raises(TypeError, match="to must be an Offset, got 'int'"):
        await groups.reset('g', tp.cast(tp.Any, 5), 's', None, True, False, 0)
    with pytest.raises(ValueError, match='watch must be seconds, at least 0, got -1'):
        await groups.reset('g', Offset.FIRST, 's', None, False, False, -1)

RESETS = [
    # stream s: offsets 100 to 150, nothing stored; resolved: next 151, t=1000 120
    ((4, 3, 0), Offset.FIRST, 100),
    ((4, 0, 5), Offset.FIRST, 100),
    ((3, 10, 8), Offset.FIRST, 0),  # no statistics: 0, where the broker starts at its first
    ((4, 3, 0), Offset.NEXT, 151),
    ((4, 3, 0), Offset.LAST, 151),
    ((4, 0, 5), Offset.NEXT, 150),  # the last committed chunk
    ((3, 10, 8), Offset.offset(7), 7),
    ((4, 3, 0), Offset.offset(0), 0),
    ((4, 3, 0), Offset.timestamp(1000), 120),
    ((4, 3, 0), Offset.reference('other'), 43),
    ((4, 3, 0), Offset.reference('nobody'), 100),  # nothing stored: the first
]

@pytest.mark.parametrize(('version', 'to', 'resume'), RESETS)
async def test_reset(version: tuple[int, ...], to: Offset, resume: int) -> None:
    """The offset before where the group resumes is committed under its name."""
    s = setup(version, {('s', 'other'): 42})
    result = await s.groups.reset('g', to, 's', None, True, False, 0, timeout=3)
    stored = stored_before(resume)
    assert result == [PartitionReset('s', None, stored, resume)]
    assert s.offsets.commits == [('s', 'g', stored, 3)]

@pytest.mark.parametrize(('version', 'to', 'match'), [
    ((3, 10, 8), Offset.NEXT, 'resetting a consumer group to the end'),
    ((3, 10, 8), Offset.LAST, 'resetting a consumer group to the end'),
    ((4, 0, 5), Offset.timestamp(1000), 'resetting a consumer group to a time'),
])
async def test_reset_not_supported(version: tuple[int, ...], to: Offset, match: str) -> None:
    s = setup(version)
    with pytest.raises(FeatureNotSupported, match=match):
        await s.groups.reset('g', to, 's', None, True, False, 0)
    assert s.offsets.commits == []

async def test_reset_super_stream_dry_run() -> None:
    """A dry run says what each partition would store, and stores nothing."""
    s = setup(stored={('p-0', 'g'): 3})
    result = await s.groups.reset('g', Offset.FIRST, None, 'p', False, True, 0)
    assert result == [
        PartitionReset('p-0', 3, BEFORE_FIRST, 0),
        PartitionReset('p-1', None, BEFORE_FIRST, 0),
    ]
    assert s.offsets.commits == []

async def test_reset_active_group() -> None:
    """An offset stored meanwhile: the group is active, nothing is stored."""
    s = setup(stored={('p-1', 'g'): 3})
    s.offsets.moving.add('p-1')
    with pytest.raises(GroupActive, match="group 'g' is active: its offset of 'p-1' changed") \
            as info:
        await s.groups.reset('g', Offset.FIRST, None, 'p', False, False, 0)
    assert (info.value.name, info.value.streams) == ('g', ['p-1'])
    assert s.offsets.commits == []
    # forced: not watched
    await s.groups.reset('g', Offset.FIRST, None, 'p', True, False, 0)
    assert [c[0] for c in s.offsets.commits] == ['p-0', 'p-1']
