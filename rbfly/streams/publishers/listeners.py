"""
What a publisher tells the application of its messages' outcomes: the
listeners of confirmed and failed messages, and the status of each
message a pipelined publisher gives its status listeners (see
:py:meth:`~rbfly.streams.PublisherPipelined.add_listener`).
"""

from __future__ import annotations

import dataclasses as dtc
import typing as tp

ConfirmListener: tp.TypeAlias = tp.Callable[[tp.Sequence[int]], None]
"""Called with the publishing ids of each group of confirmed messages."""

ErrorListener: tp.TypeAlias = tp.Callable[[int, Exception], None]
"""Called with the publishing id and the error of a rejected message."""

@dtc.dataclass(frozen=True, slots=True)
class ConfirmationStatus:
    """
    The outcome of one message of a pipelined publisher, as given to its
    status listeners (see :py:meth:`~rbfly.streams.PublisherPipelined.add_listener`).

    :ivar publishing_id: The message's publishing id.
    :ivar message: The message, as sent.
    :ivar confirmed: Whether the broker confirmed it.
    :ivar error: Why not, when not confirmed (e.g.
        :py:class:`~rbfly.streams.MessageRejected`).
    """
    publishing_id: int
    message: tp.Any
    confirmed: bool
    error: Exception | None = None

StatusListener: tp.TypeAlias = tp.Callable[[tp.Sequence[ConfirmationStatus]], None]
"""
Called with the outcome of each group of messages: those confirmed by one
broker frame, or one failed message.
"""

__all__ = ['ConfirmListener', 'ConfirmationStatus', 'ErrorListener', 'StatusListener']
