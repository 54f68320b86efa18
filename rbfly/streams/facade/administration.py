"""
Streams and super streams administered: created, deleted, looked up (where
a stream lives, its statistics, where an offset specification or its end
resolves to), and a super stream's partitions and routes; the methods of
:py:class:`~rbfly.streams.StreamsClient` that do it (see
:py:mod:`.forward`), over the parts that talk to the broker
(:py:mod:`rbfly.streams.parts.streams`, :py:mod:`~rbfly.streams.parts.ends`,
:py:mod:`~rbfly.streams.parts.superstreams`).
"""

from __future__ import annotations

import typing as tp

from ..offset import Offset
from ..parts.ends import Ends
from ..parts.streams import Streams
from ..parts.superstreams import SuperStreams
from ..types import MessageFilter, StreamInfo

class Administration:
    """
    The facade's methods administering streams and super streams.

    :param streams: Creates, deletes and looks up streams.
    :param ends: Where a stream ends.
    :param super_streams: Creates, deletes and looks up super streams.
    """
    def __init__(self, streams: Streams, ends: Ends, super_streams: SuperStreams) -> None:
        self._streams = streams
        self._ends = ends
        self._super_streams = super_streams

    # -- streams --

    async def create_stream(
            self, stream: str, *, max_length_bytes: int | None = None,
            max_age: str | None = None, max_segment_size_bytes: int | None = None,
            filter_size: int | None = None, leader_locator: str | None = None,
            initial_cluster_size: int | None = None, initial_offset: int | None = None,
            arguments: tp.Mapping[str, str] | None = None, exist_ok: bool = True,
    ) -> None:
        """
        Create a stream.

        :param max_length_bytes: Retention: maximum size of the stream.
        :param max_age: Retention: maximum age of messages (``'7D'``, ``'12h'``).
        :param max_segment_size_bytes: Size of the stream's segment files.
        :param filter_size: Bloom filter size in bytes (16-255, 3.13+).
        :param leader_locator: ``client-local``, ``balanced`` or
            ``least-leaders``.
        :param initial_cluster_size: Number of stream replicas.
        :param initial_offset: The offset of the stream's first message
            (0 to 2**62 - 1; ``stream-initial-offset``, a broker newer than
            RabbitMQ 4.3: rabbitmq-server PR 17300; 3.10, 4.0 and 4.3 take
            it without an error and drop it, and the stream starts at 0),
            e.g. to continue the offsets of a stream it replaces.
        :param arguments: Any other stream arguments.
        :param exist_ok: Do not fail when the stream exists (with the same
            arguments), as RbFly 0.10 did.
        """
        await self._streams.create(stream, {
            'max_length_bytes': max_length_bytes, 'max_age': max_age,
            'max_segment_size_bytes': max_segment_size_bytes, 'filter_size': filter_size,
            'leader_locator': leader_locator, 'initial_cluster_size': initial_cluster_size,
            'initial_offset': initial_offset,
        }, arguments, exist_ok)

    async def delete_stream(self, stream: str, *, missing_ok: bool = True) -> None:
        """
        Delete a stream.

        :param missing_ok: Do not fail when the stream does not exist.
        """
        await self._streams.delete(stream, missing_ok)

    async def stream_exists(self, stream: str) -> bool:
        """Whether a stream exists (also while it elects a leader)."""
        return await self._streams.exists(stream)

    async def stream_metadata(self, stream: str) -> StreamInfo:
        """
        Where a stream lives: its leader and replicas.

        :raises rbfly.streams.error.StreamDoesNotExist: When there is no
            such stream.
        """
        return await self._streams.info(stream)

    async def stream_stats(self, stream: str) -> dict[str, int]:
        """
        Statistics of a stream (RabbitMQ 3.11+): ``first_chunk_id``,
        ``committed_chunk_id``; newer brokers: ``last_chunk_id``, ``committed_offset``.

        :raises rbfly.streams.FeatureNotSupported: On older brokers.
        """
        return await self._streams.stats(stream)

    async def resolve_offset(
            self, stream: str, offset: Offset = Offset.NEXT, *,
            filter: MessageFilter | None = None,
    ) -> int:
        """
        The offset of the first message a subscription to a stream with
        this offset (and filter) receives (RabbitMQ 4.3+): e.g. the first
        message stored at or after a time, or the end of the stream now
        (``Offset.NEXT``). The broker resolves to the first offset of a
        chunk; for ``Offset.offset(n)`` and references the result is ``n``
        (or later, when the stream no longer holds ``n``).
        :py:meth:`Offset.from_end <rbfly.streams.Offset.from_end>` is
        resolved by the client first, as a subscription does (see
        :py:meth:`end_offset`).

        :raises rbfly.streams.FeatureNotSupported: On older brokers.
        :raises rbfly.streams.error.StreamDoesNotExist: When there is no
            such stream.
        """
        return await self._streams.resolve(stream, offset, filter)

    async def end_offset(self, stream: str) -> int | None:
        """
        The offset after the stream's last message (where the next one
        goes; ``None``: the stream has no messages), as
        :py:meth:`Offset.from_end <rbfly.streams.Offset.from_end>` finds
        it, on every broker: read from the stream's last chunk (on
        RabbitMQ 3.10, an empty stream costs
        ``PROBE_TIMEOUT`` seconds, 2, of waiting for a chunk that does not
        come).

        :raises rbfly.streams.error.StreamDoesNotExist: When there is no
            such stream.
        """
        last = await self._ends.last_chunk(stream)
        return None if last is None else last[1]

    # -- super streams --

    async def create_super_stream(
            self, super_stream: str, partitions: int | None = None, *,
            binding_keys: tp.Sequence[str] | None = None,
            arguments: tp.Mapping[str, str] | None = None, exist_ok: bool = True,
    ) -> list[str]:
        """
        Create a super stream (RabbitMQ 3.13+): its partition streams, an
        exchange of its name and the bindings between them. Return the
        names of the partitions.

        :param partitions: Number of partitions, named
            ``<super stream>-0`` ... and bound with keys ``0`` ...
        :param binding_keys: Or binding keys, one partition each, named
            ``<super stream>-<key>``. With both, the partitions are named
            ``<super stream>-0`` ... and bound with the keys in turn (a key
            given twice binds two partitions: key routing sends its
            messages to both).
        :param arguments: Stream arguments of the partitions (e.g.
            ``max-age``, ``max-length-bytes``).
        :param exist_ok: Do not fail when the super stream exists.
        """
        return await self._super_streams.create(
            super_stream, partitions, binding_keys, arguments, exist_ok,
        )

    async def delete_super_stream(self, super_stream: str, *, missing_ok: bool = True) -> None:
        """
        Delete a super stream and its partitions (RabbitMQ 3.13+).

        :param missing_ok: Do not fail when it does not exist.
        """
        await self._super_streams.delete(super_stream, missing_ok)

    async def super_stream_exists(self, super_stream: str) -> bool:
        """Whether a super stream exists (RabbitMQ 3.11+)."""
        return await self._super_streams.exists(super_stream)

    async def super_stream_partitions(self, super_stream: str) -> list[str]:
        """
        The partitions of a super stream (RabbitMQ 3.11+), in order.

        :raises rbfly.streams.error.StreamDoesNotExist: When there is no
            such super stream.
        """
        return await self._super_streams.partitions(super_stream)

    async def route(self, super_stream: str, routing_key: str) -> list[str]:
        """The partitions the broker binds a routing key to (RabbitMQ 3.11+)."""
        return await self._super_streams.route(super_stream, routing_key)

__all__ = ['Administration']
