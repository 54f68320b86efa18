"""
Types of the streams API: message filters, and where a stream lives.
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

__all__ = ['BloomFilterExtract', 'MessageFilter', 'StreamInfo']
