"""
Types of the streams API: message filters, where a stream lives, and
where a consumer group stands on a stream.
"""

from __future__ import annotations

import dataclasses as dtc
import typing as tp

from ..amqp import MessageCtx

BloomFilterExtract: tp.TypeAlias = tp.Callable[[MessageCtx], str | None]
"""Function returning the filter value of a message (or ``None``)."""

@dtc.dataclass(frozen=True)
class MessageFilter:
    """
    Filter of a subscription (RabbitMQ 3.13+).

    The broker sends only the chunks whose Bloom filter may contain one of
    the values; the client then drops the messages of those chunks whose
    extracted value is not one of them (the Bloom filter's false
    positives).

    :param extract: Function returning a message's filter value.
    :param values: Filter values to receive.
    :param match_unfiltered: Also receive messages published without a
        filter value (their extracted value must still be in ``values`` to
        pass the client-side check, unless ``extract`` maps them there).
    """
    extract: BloomFilterExtract
    values: set[str]
    match_unfiltered: bool = False

    def __post_init__(self) -> None:
        if not callable(self.extract):
            raise TypeError('message filter extract must be a function of a message,'
                            ' got {!r}'.format(self.extract))
        # a str would be taken for its characters, and the subscription
        # would wait for messages that never match
        if isinstance(self.values, str | bytes) or not isinstance(self.values, tp.Collection):
            raise TypeError('message filter values must be a set of str, got {!r}'.format(
                self.values,
            ))
        if not self.values:
            raise ValueError('message filter needs at least one value')
        for value in self.values:
            if not isinstance(value, str):
                raise TypeError('filter values must be str, got {!r}'.format(value))

@dtc.dataclass(frozen=True)
class StreamInfo:
    """
    Location of a stream.

    :param stream: Stream name.
    :param leader: Host and port of the stream's leader (None while it has
        none).
    :param replicas: Hosts and ports of its replicas.
    """
    stream: str
    leader: tuple[str, int] | None
    replicas: list[tuple[str, int]]

@dtc.dataclass(frozen=True, slots=True)
class PartitionStatus:
    """
    Where a consumer group stands on a stream, or a partition of a super
    stream (:py:meth:`~rbfly.streams.StreamsClient.group_status`).

    Offsets are the stream's: the broker gives them to messages and to
    the offsets it stores (an offset stored while no message waits to be
    written takes an offset of its own). ``lag`` counts the offsets from
    where the group resumes up to the stream's last *message* (read from
    its last chunk of messages, RabbitMQ 3.11+): the offsets stored after
    it do not count, so a group that processed every message has a lag
    of 0 and is ``caught_up``, on RabbitMQ as on the fake broker. Offsets
    stored between messages still count (an upper bound of the messages,
    as Kafka's lag counts transaction markers).

    :param stream: The stream, or the partition.
    :param stored: The offset stored under the group's name, the last one
        it processed (``None``: nothing stored; the group starts at the
        first message). 2**64 - 1 is stored "before offset 0" (a reset to
        the first message of a stream starting at 0): the group resumes
        at 0.
    :param first: The stream's first offset (``None``: the stream is
        empty, or the broker gives no statistics: RabbitMQ 3.10).
    :param end: The stream's last committed offset (``None``: empty, or
        RabbitMQ 3.10): RabbitMQ 4.3's ``committed_offset``; before, the
        first offset of the last committed chunk (``committed_chunk_id``),
        a lower bound (``end_exact`` false).
    :param lag: Offsets from the one the group resumes at up to the
        last message (0: caught up; ``None`` when the end is unknown);
        when the last message could not be read, up to ``end`` included
        (then a lower bound unless ``end_exact``).
    :param end_exact: Whether ``end`` is the last offset, or the first
        of the last chunk.
    :param caught_up: Whether the group processed every message of the
        stream (``None``: not known, RabbitMQ 3.10).
    """
    stream: str
    stored: int | None
    first: int | None
    end: int | None
    lag: int | None
    end_exact: bool
    caught_up: bool | None = None

@dtc.dataclass(frozen=True, slots=True)
class PartitionReset:
    """
    What a reset of a consumer group stores on a stream, or a partition
    (:py:meth:`~rbfly.streams.StreamsClient.reset_group`).

    :param stream: The stream, or the partition.
    :param before: The offset stored before (``None``: nothing).
    :param stored: The offset stored: the one before ``resume`` (2**64 -
        1 when ``resume`` is 0).
    :param resume: The first offset the group reads next
        (``Offset.reference`` starts there).
    """
    stream: str
    before: int | None
    stored: int
    resume: int

__all__ = ['BloomFilterExtract', 'MessageFilter', 'PartitionReset', 'PartitionStatus', 'StreamInfo']
