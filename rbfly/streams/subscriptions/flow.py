"""
Flow strategies of a subscription: when it gives the broker a credit for
another chunk.

The broker sends a subscription a chunk only against a credit. By default
(no strategy), a subscription bounds the bytes it holds, chunks buffered
and on their way, to about its ``buffer_bytes``, and grants credits as
chunks arrive (see :py:mod:`rbfly.streams.subscriptions.subscription`): the fastest way to
read, with memory bounded whatever the chunk size. A strategy counts
chunks instead, as the Java, Go and .NET clients do, for an application
that wants to say when the next chunk may come:

- :py:class:`CreditOnTake`: a credit when the application takes a chunk
  (starts on its messages); at most ``credit`` chunks are buffered or on
  their way;
- :py:class:`CreditWhenProcessed`: a credit when a share (``ratio``) of
  a taken chunk's messages is processed (the next message asked for, with
  ``async for``; the next chunk asked for, with the chunk API); at most
  ``credit`` chunks are buffered, on their way or being processed;
- :py:class:`ManualCredit`: a credit when the application calls
  :py:meth:`~rbfly.streams.ManualCredit.processed` (e.g. once the results of a chunk are
  committed elsewhere); without calls, the subscription stops after
  ``credit`` chunks.

RabbitMQ 4.0 and 4.3 send a subscription's chunks once it has more than
half of its initial credit (measured here: with a credit of 2, one credit
given back sent nothing, the second sent two chunks; RabbitMQ 3.10 sends
at each credit); a strategy with a larger credit is therefore served in
batches, and the bounds above hold either way.

A strategy is given to the subscribe methods (``flow=...``), one object
per subscription (or per super stream subscription: its partitions share
it, each with its own credits).
"""

from __future__ import annotations

import dataclasses as dtc
import typing as tp

class Releasable(tp.Protocol):
    """
    What :py:class:`ManualCredit` needs of a subscription: its stream, and
    a way to give the broker the credit a processed chunk held.
    """
    stream: str
    closed: bool
    # being replaced by a subscription of its stream elsewhere (a seek)
    seeking: bool

    def release(self) -> None: ...

def _check_credit(credit: object) -> None:
    if isinstance(credit, bool) or not isinstance(credit, int) or not 1 <= credit <= 0xffff:
        raise ValueError('credit must be 1..65535, got {!r}'.format(credit))

@dtc.dataclass(frozen=True)
class CreditOnTake:
    """
    A credit each time the application takes a chunk.

    :ivar credit: Chunks buffered or on their way, at most.
    """
    credit: int = 2

    def __post_init__(self) -> None:
        _check_credit(self.credit)

@dtc.dataclass(frozen=True)
class CreditWhenProcessed:
    """
    A credit when ``ratio`` of a chunk's messages are processed.

    :ivar ratio: Share of a chunk's messages processed before the credit
        for the next chunk goes (0 < ratio <= 1; 1: the whole chunk).
    :ivar credit: Chunks buffered, on their way or being processed, at
        most.
    """
    ratio: float = 0.5
    credit: int = 2

    def __post_init__(self) -> None:
        _check_credit(self.credit)
        ratio = self.ratio
        if isinstance(ratio, bool) or not isinstance(ratio, int | float) \
                or not 0 < ratio <= 1:
            raise ValueError('ratio must be above 0 and at most 1, got {!r}'.format(ratio))

class ManualCredit:
    """
    A credit when the application says a chunk is processed.

    :param credit: Chunks the subscription may get before the first call
        of :py:meth:`processed`, and buffered, on their way or being
        processed at any time.
    """
    def __init__(self, credit: int = 2) -> None:
        _check_credit(credit)
        self.credit = credit
        self._subscriptions: dict[str, Releasable] = {}

    def bind(self, sub: Releasable) -> None:
        """Grant credits to this subscription (done by the client)."""
        bound = self._subscriptions.get(sub.stream)
        # (a subscription ended, or seeking, is followed by its successor)
        if bound is not None and bound is not sub and not bound.closed and not bound.seeking:
            raise ValueError('ManualCredit: already used by a subscription of stream {!r};'
                             ' give each subscription its own'.format(sub.stream))
        self._subscriptions[sub.stream] = sub

    def processed(self, stream: str | None = None) -> None:
        """
        A chunk taken by the application is processed: the broker may send
        another.

        :param stream: The chunk's stream (``chunk.stream``, or
            ``get_message_ctx().stream``), needed when the strategy serves
            the partitions of a super stream.
        :raises ValueError: When ``stream`` is needed or unknown, or no
            subscription uses the strategy yet.
        """
        subs = self._subscriptions
        if stream is None:
            if len(subs) != 1:
                raise ValueError('ManualCredit serves {} subscriptions; name the chunk\'s'
                                 ' stream'.format(len(subs)))
            sub = next(iter(subs.values()))
        else:
            found = subs.get(stream)
            if found is None:
                raise ValueError('ManualCredit serves no subscription of stream {!r}'.format(
                    stream,
                ))
            sub = found
        sub.release()

    def __repr__(self) -> str:
        return 'ManualCredit(credit={})'.format(self.credit)

FlowStrategy: tp.TypeAlias = CreditOnTake | CreditWhenProcessed | ManualCredit
"""A subscription's flow strategy."""

def check_flow(flow: object) -> None:
    """
    :raises TypeError: When ``flow`` is not a flow strategy.
    """
    if flow is not None and not isinstance(flow, CreditOnTake | CreditWhenProcessed | ManualCredit):
        raise TypeError('flow must be CreditOnTake, CreditWhenProcessed or ManualCredit,'
                        ' got {!r}'.format(flow))

__all__ = [
    'CreditOnTake', 'CreditWhenProcessed', 'FlowStrategy', 'ManualCredit', 'Releasable',
    'check_flow',
]
