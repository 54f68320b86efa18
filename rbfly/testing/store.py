"""
What the fake broker keeps: streams as lists of Osiris chunks, the last
publishing id of each named publisher, stored offsets and super streams.

Plain data with no I/O and no clock (a chunk's timestamp is given by the
caller), so that the broker's behaviour can be tested without sockets.

A stream is what RabbitMQ makes of it: each ``Publish`` frame becomes one
chunk, messages get consecutive offsets from 0, and a chunk is committed as
soon as it is written (a single node with no replicas).
"""

from __future__ import annotations

import bisect
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..streams.protocol.base import OffsetSpec
from ..streams.protocol.constants import OffsetSpecType

_HEADER = struct.Struct('>BBHIqQQIIIB3x')
MAGIC_VERSION = 0x50
"""Osiris chunk format: magic 5, version 0."""

@dataclass(frozen=True, slots=True)
class Entry:
    """
    An entry of a chunk as a publisher sent it.

    :param data: The entry's bytes as Osiris stores them: a size-prefixed
        record, or a sub-entry batch with its header.
    :param records: Messages in the entry (offsets it takes).
    :param filter_value: The filter value the publisher gave, if any.
    """
    data: bytes
    records: int
    filter_value: str | None = None

@dataclass(frozen=True, slots=True)
class Chunk:
    """
    A chunk of a stream, ready to be delivered.

    :param first_offset: Offset of its first message (also its chunk id).
    :param records: Messages in the chunk.
    :param timestamp: Milliseconds since the Unix epoch.
    :param data: The chunk's bytes, header included.
    :param filter_values: Filter values of its messages.
    :param unfiltered: Whether one of its messages has no filter value.
    """
    first_offset: int
    records: int
    timestamp: int
    data: bytes
    filter_values: frozenset[str]
    unfiltered: bool

    @property
    def next_offset(self) -> int:
        return self.first_offset + self.records

def build_chunk(entries: Sequence[Entry], first_offset: int, timestamp: int) -> Chunk:
    """
    An Osiris chunk (user data, epoch 1, no trailer) holding the entries,
    with the CRC32 of its data, as RabbitMQ writes it.
    """
    data = b''.join(e.data for e in entries)
    records = sum(e.records for e in entries)
    header = _HEADER.pack(
        MAGIC_VERSION, 0, len(entries), records, timestamp, 1, first_offset,
        zlib.crc32(data), len(data), 0, 0,
    )
    values = frozenset(e.filter_value for e in entries if e.filter_value is not None)
    unfiltered = any(e.filter_value is None for e in entries)
    return Chunk(first_offset, records, timestamp, header + data, values, unfiltered)

@dataclass
class StreamLog:
    """
    A stream's chunks, in offset order.

    :param arguments: The arguments it was created with.
    """
    name: str
    arguments: dict[str, str] = field(default_factory=dict)
    chunks: list[Chunk] = field(default_factory=list)
    _firsts: list[int] = field(default_factory=list)

    @property
    def next_offset(self) -> int:
        """The offset the next message gets."""
        return self.chunks[-1].next_offset if self.chunks else 0

    @property
    def first_offset(self) -> int:
        return self.chunks[0].first_offset if self.chunks else 0

    def append(self, entries: Sequence[Entry], timestamp: int) -> Chunk:
        """Write the entries as one chunk."""
        chunk = build_chunk(entries, self.next_offset, timestamp)
        self.chunks.append(chunk)
        self._firsts.append(chunk.first_offset)
        return chunk

    def start(self, spec: OffsetSpec) -> int:
        """
        Index of the chunk a subscription with ``spec`` starts at; the
        number of chunks when it waits for chunks still to come.
        """
        n = len(self.chunks)
        t = spec.type
        if t == OffsetSpecType.FIRST:
            return 0
        if t == OffsetSpecType.LAST:
            return max(n - 1, 0)
        if t == OffsetSpecType.NEXT:
            return n
        if t == OffsetSpecType.OFFSET:
            assert spec.value is not None
            if spec.value >= self.next_offset:
                return n
            return max(bisect.bisect_right(self._firsts, spec.value) - 1, 0)
        if t == OffsetSpecType.TIMESTAMP:
            assert spec.value is not None
            for i, chunk in enumerate(self.chunks):
                if chunk.timestamp >= spec.value:
                    return i
            return n
        raise ValueError('offset type {} is not valid here'.format(t))

    def resolve(self, spec: OffsetSpec) -> int:
        """The offset a subscription with ``spec`` receives first (RabbitMQ 4.3's answer)."""
        i = self.start(spec)
        if spec.type == OffsetSpecType.OFFSET:
            assert spec.value is not None
            return spec.value if i == len(self.chunks) else max(spec.value, self.first_offset)
        return self.chunks[i].first_offset if i < len(self.chunks) else self.next_offset

    def stats(self) -> dict[str, int]:
        """``StreamStats`` as RabbitMQ 4.x answers it (-1 for an empty stream)."""
        if not self.chunks:
            return {'first_chunk_id': -1, 'last_chunk_id': -1,
                    'committed_chunk_id': -1, 'committed_offset': -1}
        last = self.chunks[-1]
        return {
            'first_chunk_id': self.chunks[0].first_offset,
            'last_chunk_id': last.first_offset,
            'committed_chunk_id': last.first_offset,
            'committed_offset': last.next_offset - 1,
        }

@dataclass
class Store:
    """
    Everything the fake broker keeps, shared by its connections.

    :ivar streams: The streams by name.
    :ivar sequences: Last publishing id stored per (stream, publisher name).
    :ivar offsets: Stored offsets per (stream, reference).
    :ivar super_streams: Partitions and their binding keys per super stream.
    """
    streams: dict[str, StreamLog] = field(default_factory=dict)
    sequences: dict[tuple[str, str], int] = field(default_factory=dict)
    offsets: dict[tuple[str, str], int] = field(default_factory=dict)
    super_streams: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def create(self, name: str, arguments: dict[str, str]) -> bool:
        """Create a stream; ``False`` when it exists already."""
        if name in self.streams:
            return False
        self.streams[name] = StreamLog(name, dict(arguments))
        return True

    def partition_index(self, super_stream: str, stream: str) -> int:
        """
        Index of a partition in its super stream, in the order of its
        partitions (as ``Partitions`` answers, and as RabbitMQ orders the
        bindings, by ``x-stream-partition-order``); -1 when the stream is
        not a partition of the super stream, or there is no such super
        stream (RabbitMQ's answer: the stream is then a plain one).
        """
        partitions = [p for p, _ in self.super_streams.get(super_stream, [])]
        return partitions.index(stream) if stream in partitions else -1

    def delete(self, name: str) -> bool:
        """Delete a stream with its publishers' sequences and stored offsets."""
        if self.streams.pop(name, None) is None:
            return False
        self.sequences = {k: v for k, v in self.sequences.items() if k[0] != name}
        self.offsets = {k: v for k, v in self.offsets.items() if k[0] != name}
        return True

__all__ = ['Chunk', 'Entry', 'Store', 'StreamLog', 'build_chunk']
