"""
The fake broker's requests that read and write its store and hold nothing
of the session that asks: streams (create, delete, metadata, statistics,
offset specifications), publishers' sequences, stored offsets, and super
streams (create, delete, partitions, routes). Each answers through
``send``; a session (:py:class:`rbfly.testing.session.Session`) hands them
its broker, as a :py:class:`StoreHost`, and its connection.
"""

from __future__ import annotations

import typing as tp
from collections.abc import Callable

from ..streams.protocol.base import Broker, StreamMetadata
from ..streams.protocol.commands import (
    Command,
    Create,
    CreateResponse,
    CreateSuperStream,
    CreateSuperStreamResponse,
    Delete,
    DeleteResponse,
    DeleteSuperStream,
    DeleteSuperStreamResponse,
    Metadata,
    MetadataResponse,
    Partitions,
    PartitionsResponse,
    QueryOffset,
    QueryOffsetResponse,
    QueryPublisherSequence,
    QueryPublisherSequenceResponse,
    ResolveOffsetSpec,
    ResolveOffsetSpecResponse,
    Route,
    RouteResponse,
    StoreOffset,
    StreamStats,
    StreamStatsResponse,
)
from ..streams.protocol.constants import NO_LEADER, OffsetSpecType, ResponseCode
from .config import BrokerConfig
from .store import Store, StreamLog

RC = ResponseCode

Send: tp.TypeAlias = Callable[[Command], None]
"""Sends a response on the asking session's connection."""

class StoreHost(tp.Protocol):
    """
    What these requests ask of the broker (its
    :py:class:`~rbfly.testing.session.SessionHost` has it).
    """
    @property
    def config(self) -> BrokerConfig:
        """What the broker says of itself."""

    @property
    def store(self) -> Store:
        """The streams, publishers' sequences, offsets and super streams."""

    def stream_deleted(self, stream: str) -> None:
        """Tell every session using the stream, and forget their use of it."""

def _log(host: StoreHost, stream: str) -> StreamLog | None:
    return host.store.streams.get(stream)

def create(host: StoreHost, send: Send, c: Create, corr: int) -> None:
    if c.stream.startswith('amq.'):  # reserved, as RabbitMQ's queue names
        send(CreateResponse(corr, RC.PRECONDITION_FAILED))
        return
    ok = host.store.create(c.stream, dict(c.arguments))
    send(CreateResponse(corr, RC.OK if ok else RC.STREAM_ALREADY_EXISTS))

def delete(host: StoreHost, send: Send, c: Delete, corr: int) -> None:
    ok = host.store.delete(c.stream)
    send(DeleteResponse(corr, RC.OK if ok else RC.STREAM_DOES_NOT_EXIST))
    if ok:
        host.stream_deleted(c.stream)

def metadata(host: StoreHost, send: Send, c: Metadata, corr: int) -> None:
    config = host.config
    streams = [
        StreamMetadata(s, RC.OK, 0, []) if _log(host, s) is not None
        else StreamMetadata(s, RC.STREAM_DOES_NOT_EXIST, NO_LEADER, [])
        for s in c.streams
    ]
    send(MetadataResponse(corr, [Broker(0, config.host, config.port)], streams))

def stream_stats(host: StoreHost, send: Send, c: StreamStats, corr: int) -> None:
    log = _log(host, c.stream)
    if log is None:
        send(StreamStatsResponse(corr, RC.STREAM_DOES_NOT_EXIST, {}))
    else:
        send(StreamStatsResponse(corr, RC.OK, log.stats()))

def resolve(host: StoreHost, send: Send, c: ResolveOffsetSpec, corr: int) -> None:
    log = _log(host, c.stream)
    if log is None:
        send(ResolveOffsetSpecResponse(corr, RC.STREAM_DOES_NOT_EXIST, 4, 0))
    else:
        send(ResolveOffsetSpecResponse(
            corr, RC.OK, OffsetSpecType.OFFSET, log.resolve(c.offset_spec),
        ))

def query_sequence(host: StoreHost, send: Send, c: QueryPublisherSequence, corr: int) -> None:
    if _log(host, c.stream) is None:
        send(QueryPublisherSequenceResponse(corr, RC.STREAM_DOES_NOT_EXIST, 0))
        return
    seq = host.store.sequences.get((c.stream, c.reference), 0)
    send(QueryPublisherSequenceResponse(corr, RC.OK, seq))

def store_offset(host: StoreHost, send: Send, c: StoreOffset, corr: None) -> None:
    if _log(host, c.stream) is not None:
        host.store.offsets[(c.stream, c.reference)] = c.offset

def query_offset(host: StoreHost, send: Send, c: QueryOffset, corr: int) -> None:
    if _log(host, c.stream) is None:
        send(QueryOffsetResponse(corr, RC.STREAM_DOES_NOT_EXIST, 0))
        return
    offset = host.store.offsets.get((c.stream, c.reference))
    if offset is None:
        send(QueryOffsetResponse(corr, RC.NO_OFFSET, 0))
    else:
        send(QueryOffsetResponse(corr, RC.OK, offset))

def create_super_stream(host: StoreHost, send: Send, c: CreateSuperStream, corr: int) -> None:
    store = host.store
    if len(c.partitions) != len(c.binding_keys) or not c.partitions:
        code = RC.PRECONDITION_FAILED
    elif any(p.startswith('amq.') for p in c.partitions):
        code = RC.PRECONDITION_FAILED
    elif c.name in store.super_streams or any(p in store.streams for p in c.partitions):
        code = RC.STREAM_ALREADY_EXISTS
    else:
        for p in c.partitions:
            store.create(p, dict(c.arguments))
        store.super_streams[c.name] = list(zip(c.partitions, c.binding_keys, strict=True))
        code = RC.OK
    send(CreateSuperStreamResponse(corr, code))

def delete_super_stream(host: StoreHost, send: Send, c: DeleteSuperStream, corr: int) -> None:
    store = host.store
    bound = store.super_streams.pop(c.name, None)
    if bound is None:
        send(DeleteSuperStreamResponse(corr, RC.STREAM_DOES_NOT_EXIST))
        return
    for partition, _ in bound:
        if store.delete(partition):
            host.stream_deleted(partition)
    send(DeleteSuperStreamResponse(corr, RC.OK))

def partitions(host: StoreHost, send: Send, c: Partitions, corr: int) -> None:
    bound = host.store.super_streams.get(c.super_stream)
    if bound is None:
        send(PartitionsResponse(corr, RC.STREAM_DOES_NOT_EXIST, []))
    else:
        send(PartitionsResponse(corr, RC.OK, [p for p, _ in bound]))

def route(host: StoreHost, send: Send, c: Route, corr: int) -> None:
    bound = host.store.super_streams.get(c.super_stream)
    if bound is None:
        send(RouteResponse(corr, RC.STREAM_DOES_NOT_EXIST, []))
    else:
        send(RouteResponse(corr, RC.OK, [p for p, k in bound if k == c.routing_key]))

__all__ = [
    'Send', 'StoreHost', 'create', 'create_super_stream', 'delete', 'delete_super_stream',
    'metadata', 'partitions', 'query_offset', 'query_sequence', 'resolve', 'route',
    'store_offset', 'stream_stats',
]
