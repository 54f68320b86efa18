"""
Offset specification: where a subscription starts reading a stream.

The API is the one of RbFly 0.10::

    Offset.FIRST                 # the first message in the stream
    Offset.LAST                  # the first message of the last chunk
    Offset.NEXT                  # only messages published from now on
    Offset.offset(1000)          # from offset 1000
    Offset.timestamp(t)          # from messages stored at time t (seconds)
    Offset.reference('app-1')    # after the offset stored as 'app-1'
    Offset.reference('app-1', default=Offset.NEXT)  # ... or, with none, what comes

and, resolved by the client when the subscription starts::

    Offset.from_end(100)         # the last 100 messages, then what comes
"""

from __future__ import annotations

import dataclasses as dtc
import enum
import math
import typing as tp

from .names import check_name

MAX_TIMESTAMP = (2 ** 63 - 1) // 1000
"""Latest (and, negated, earliest) timestamp of an offset, in seconds: int64 milliseconds."""

class OffsetType(enum.IntEnum):
    """
    Offset specification type; values 1-5 are the protocol's.
    """
    FIRST = 0x0001
    LAST = 0x0002
    NEXT = 0x0003
    OFFSET = 0x0004
    TIMESTAMP = 0x0005
    REFERENCE = 0xffff  # resolved by the client with QueryOffset
    FROM_END = 0xfffe  # resolved by the client from the stream's end

@dtc.dataclass(frozen=True, slots=True)
class Offset:
    """
    Offset specification of a subscription.

    :param type: Offset specification type.
    :param value: Offset (int), timestamp in seconds (float) or offset
        reference name (str), depending on the type.
    :param default: Of a reference: where to start when nothing is stored
        under its name (``None``: the first message).
    """
    type: OffsetType
    value: int | float | str | None = None
    default: Offset | None = None

    FIRST: tp.ClassVar[Offset]
    LAST: tp.ClassVar[Offset]
    NEXT: tp.ClassVar[Offset]

    def __post_init__(self) -> None:
        t = self.type
        v = self.value
        if t == OffsetType.OFFSET:
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 2 ** 64:
                raise ValueError('offset must be an integer 0..2**64-1, got {!r}'.format(v))
        elif t == OffsetType.TIMESTAMP:
            # sent as int64 milliseconds
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) \
                    or not -MAX_TIMESTAMP <= v <= MAX_TIMESTAMP:
                raise ValueError('timestamp must be seconds since epoch, got {!r}'.format(v))
        elif t == OffsetType.FROM_END:
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 2 ** 64:
                raise ValueError('from_end takes a count of messages 0..2**64-1, got {!r}'.format(
                    v))
        elif t == OffsetType.REFERENCE:
            if not isinstance(v, str) or not v:
                raise ValueError('offset reference must be a non-empty str, got {!r}'.format(v))
            check_name('offset reference', v)
        elif v is not None:
            raise ValueError('offset {} takes no value, got {!r}'.format(t.name, v))
        d = self.default
        if d is not None:
            if t != OffsetType.REFERENCE:
                raise ValueError('only a reference has a default, not offset {}'.format(t.name))
            if not isinstance(d, Offset) or d.type == OffsetType.REFERENCE:
                raise ValueError('the default of a reference is an offset that is not a'
                                 ' reference (Offset.FIRST, Offset.NEXT, ...), got {!r}'.format(d))

    @staticmethod
    def offset(offset: int) -> Offset:
        """
        Start reading at the message with the given offset.
        """
        return Offset(OffsetType.OFFSET, offset)

    @staticmethod
    def timestamp(timestamp: float) -> Offset:
        """
        Start reading at messages stored at the given time (seconds since
        the Unix epoch). The broker starts at the chunk just before the
        time, so a few older messages may arrive.
        """
        return Offset(OffsetType.TIMESTAMP, timestamp)

    @staticmethod
    def reference(reference: str, default: Offset | None = None) -> Offset:
        """
        Start reading after the offset stored under the reference name
        (see :py:meth:`rbfly.streams.StreamsClient.write_offset`); when
        nothing is stored yet, at ``default`` (``None``: the first message;
        ``Offset.NEXT``: only what comes, as Kafka's
        ``auto_offset_reset='latest'``).
        """
        return Offset(OffsetType.REFERENCE, reference, default)

    @staticmethod
    def from_end(count: int) -> Offset:
        """
        Start ``count`` messages before the end of the stream, as it is
        when the subscription starts (its last ``count`` messages, then
        what comes; fewer when the stream holds fewer; ``from_end(0)``:
        from the end on, as ``Offset.NEXT``, but resolved to an offset).

        The end is the offset after the stream's last message: on RabbitMQ
        4.3+ resolved by the broker (``next``); before, read from the
        stream's last chunk of messages (a subscription at
        ``Offset.LAST`` taking one chunk); an empty stream has none, which
        RabbitMQ 3.11+ says in its statistics, and 3.10 only by sending
        nothing (the client waits for ``PROBE_TIMEOUT`` seconds, 2, then,
        and logs a warning that it takes the stream for an empty one; see
        ``rbfly.streams.parts.subscribing``). When the broker said the
        stream has chunks and its last one does not come in time,
        :py:class:`~rbfly.streams.error.StreamEndUnknown` is raised.
        Also taken by a ``resume`` callback's result,
        ``resolve_offset`` and ``reset_group``.
        Offsets count records: on 4.3+, offsets stored under references
        since the last message are records too (a few messages fewer).
        """
        return Offset(OffsetType.FROM_END, count)

    def __str__(self) -> str:
        result = 'offset={}'.format(self.type.name.lower())
        if self.default is not None:
            result += '({}, default={})'.format(self.value, str(self.default)[7:])
        elif self.value is not None:
            result += '({})'.format(self.value)
        return result

Offset.FIRST = Offset(OffsetType.FIRST)
Offset.LAST = Offset(OffsetType.LAST)
Offset.NEXT = Offset(OffsetType.NEXT)

__all__ = ['MAX_TIMESTAMP', 'Offset', 'OffsetType']
