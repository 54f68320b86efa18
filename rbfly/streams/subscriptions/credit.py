"""
Credit policies: when a subscription gives the broker credits for more
chunks.

The broker sends a subscription a chunk only against a credit. A policy
counts the credits a subscription's broker holds and says, at each event
of the subscription, how many more to grant; it sends nothing, waits for
nothing and reads no clock, so a table of events tests it whole. The
subscription (:py:class:`rbfly.streams.subscriptions.subscription.Subscription`) owns the
buffer of chunks, reports each event with what the policy needs (a
chunk's size, the chunks in its buffer, a chunk's message count), sends
the Credit command the policy asks for when its connection is open, and
then tells the policy it was sent (:py:meth:`CreditPolicy.granted`): a
grant asked for while no connection is open is not counted, and is asked
for again at a later event.

One policy per way to read (:py:func:`credit_policy` picks it):

- :py:class:`ByteBounded`, the default: bounds the bytes a subscription
  holds, and grants as chunks arrive;
- :py:class:`OnTake`, :py:class:`WhenProcessed`, :py:class:`Manual`:
  the flow strategies an application chooses (:py:mod:`rbfly.streams.subscriptions.flow`),
  counting chunks.

Events, in the order a subscription reports them:

``attached()``
    subscribed on a connection: the Subscribe command granted ``credit``
    (first, and again after each lost connection);
``arrived(size, buffered)``
    a chunk arrived and was buffered (``buffered`` counts it);
``dropped(buffered)``
    a chunk arrived for an inactive single active consumer, and was
    dropped;
``idle(buffered)``
    the application asked for a chunk and the buffer is empty;
``taken(buffered)``
    the application took a chunk out of the buffer, before it is decoded;
``hold(messages)``
    the chunk taken was decoded into ``messages`` messages: whether the
    chunk keeps a credit until processed;
``handed(buffered)``
    the chunk is handed to the application;
``released(buffered)``
    a chunk holding a credit is processed.

Each event but ``attached`` and ``hold`` returns the credits to grant now
(0: none).
"""

from __future__ import annotations

import math
import typing as tp

from .flow import CreditOnTake, CreditWhenProcessed, FlowStrategy

MAX_CREDIT = 64
"""
Most chunks a subscription lets the broker send ahead. A broker works off
its outstanding credit before it handles the next Subscribe or Unsubscribe
on the connection, about 2 ms per credit (measured: a 2 s stall with
1,000 credits). On a stream of 50-message chunks (RabbitMQ 3.10, 2 vCPUs,
alternating runs of 3 rounds) the broker delivered more with 16 or 64
credits ahead (510-575k msg/s, 94-104% of a client that decodes nothing)
than with 32, 48, 96 or 128 (430-510k); big chunks read the same with 64
and 128 (their target is below both).
"""

MAX_GRANT = 0xffff
"""Most credits one Credit command carries (its field is a uint16)."""

class CreditPolicy(tp.Protocol):
    """
    When a subscription grants credits (see the module's documentation for
    the events).

    :ivar credit: Credits the Subscribe command grants.
    :ivar inflight: Credits the broker holds: granted, not used by a chunk
        yet.
    """
    credit: int
    inflight: int

    def attached(self) -> None: ...
    def granted(self, grant: int) -> None: ...
    def arrived(self, size: int, buffered: int) -> int: ...
    def dropped(self, buffered: int) -> int: ...
    def idle(self, buffered: int) -> int: ...
    def taken(self, buffered: int) -> int: ...
    def hold(self, messages: int) -> int | None: ...
    def handed(self, buffered: int) -> int: ...
    def released(self, buffered: int) -> int: ...

class ByteBounded:
    """
    The default policy: a subscription holds about ``buffer_bytes`` in
    chunks, buffered and on their way.

    It starts with ``credit`` credits, learns the average chunk size, and
    keeps as many credits with the broker as chunks fit into half of
    ``buffer_bytes`` (at least ``credit``, at most :py:data:`MAX_CREDIT`)
    while the buffer holds fewer chunks than that. A slow application
    therefore never makes the client buffer without limit, while a stream
    of small chunks still has enough of them in flight: with a fixed 16
    credits a stream of 100-message chunks was read at 280k msg/s, bound by
    round trips to the broker.

    Credits are granted as chunks arrive, not only as the application
    takes them: the broker then sends steadily (RabbitMQ 3.10, a stream of
    50-message chunks: 250k msg/s granting on take, 295k on arrival, the
    same as RbFly 0.10; the broker's CPU is the limit). They go in groups
    of a quarter of the target (or at once when the broker has none left):
    the broker always holds at least three quarters of the target, and
    handles one Credit command per several chunks. (Granting each missing
    credit as soon as the buffer ran empty sent a Credit per 1.5 chunks to
    a consumer faster than the broker, and the broker, the bottleneck on
    streams of small chunks, spent its time on them.)

    :param credit: Credits at the start, and the least kept.
    :param buffer_bytes: Bytes the subscription may hold in chunks.
    """
    __slots__ = ('buffer_bytes', 'chunk_size', 'credit', 'inflight', 'target')

    def __init__(self, credit: int, buffer_bytes: int) -> None:
        self.credit = credit
        self.buffer_bytes = buffer_bytes
        self.inflight = 0
        self.chunk_size = 0.0  # moving average of the sizes of chunks arrived
        # chunks the subscription may hold, buffered and on their way: the
        # initial credit until a chunk's size is known
        self.target = credit

    def attached(self) -> None:
        self.inflight = self.credit

    def granted(self, grant: int) -> None:
        self.inflight += grant

    def arrived(self, size: int, buffered: int) -> int:
        self.inflight -= 1
        avg = self.chunk_size
        self.chunk_size = avg = size if avg == 0 else avg + (size - avg) / 16
        if avg:  # half for chunks on their way, half for chunks in the buffer
            self.target = int(min(MAX_CREDIT, max(self.credit, self.buffer_bytes // 2 // avg)))
        return self._wanted(buffered)

    def dropped(self, buffered: int) -> int:
        self.inflight -= 1
        return self._wanted(buffered)

    def idle(self, buffered: int) -> int:
        return self._wanted(buffered)

    def taken(self, buffered: int) -> int:
        return self._wanted(buffered)

    def hold(self, messages: int) -> int | None:
        return None

    def handed(self, buffered: int) -> int:
        return 0

    def released(self, buffered: int) -> int:
        return 0

    def _wanted(self, buffered: int) -> int:
        """Credits up to the target, in groups of a quarter of it."""
        target = self.target
        if buffered >= target:
            return 0
        inflight = self.inflight
        grant = target - inflight
        if grant <= 0 or (grant < max(1, target // 4) and inflight > 0):
            return 0
        return min(grant, MAX_GRANT)

class Counting:
    """
    A flow strategy's policy: ``credit`` chunks at most buffered, on their
    way, or taken and held (until processed, as each strategy says).

    :param credit: Chunks at most, and the credits at the start.
    """
    __slots__ = ('credit', 'held', 'inflight')

    def __init__(self, credit: int) -> None:
        self.credit = credit
        self.inflight = 0
        # chunks taken whose credit is held until they are processed; kept
        # across a lost connection (the application still holds them)
        self.held = 0

    def attached(self) -> None:
        self.inflight = self.credit

    def granted(self, grant: int) -> None:
        self.inflight += grant

    def arrived(self, size: int, buffered: int) -> int:
        self.inflight -= 1
        return 0  # counted in the buffer: its credit comes back as it is taken

    def dropped(self, buffered: int) -> int:
        self.inflight -= 1
        return self._wanted(buffered)

    def idle(self, buffered: int) -> int:
        return self._wanted(buffered)

    def taken(self, buffered: int) -> int:
        return 0  # granted once the chunk is handed out (see handed)

    def hold(self, messages: int) -> int | None:
        """
        Whether the chunk just decoded holds its credit until processed:
        ``None`` (no), -1 (until :py:meth:`released`), or the index of the
        message whose request by the message iterator releases it.
        """
        return None

    def handed(self, buffered: int) -> int:
        return self._wanted(buffered)

    def released(self, buffered: int) -> int:
        if self.held > 0:
            self.held -= 1
            return self._wanted(buffered)
        return 0

    def _wanted(self, buffered: int) -> int:
        grant = self.credit - self.inflight - buffered - self.held
        return grant if grant > 0 else 0

class OnTake(Counting):
    """
    :py:class:`~rbfly.streams.CreditOnTake`: a credit as the application
    takes a chunk.
    """
    __slots__ = ()

class WhenProcessed(Counting):
    """
    :py:class:`~rbfly.streams.CreditWhenProcessed`: a credit when
    ``ratio`` of a chunk's messages is processed (the message iterator asks
    for the next one), or when the application asks for the next chunk,
    which processes the chunks taken before.

    :param credit: Chunks at most.
    :param ratio: Share of a chunk's messages processed before its credit
        goes.
    """
    __slots__ = ('ratio',)

    def __init__(self, credit: int, ratio: float) -> None:
        super().__init__(credit)
        self.ratio = ratio

    def idle(self, buffered: int) -> int:
        self.held = 0  # asking for more: the chunks taken are processed
        return self._wanted(buffered)

    def taken(self, buffered: int) -> int:
        self.held = 0
        return 0

    def hold(self, messages: int) -> int | None:
        if not messages:
            return None
        self.held += 1
        return max(1, math.ceil(self.ratio * messages))

class Manual(Counting):
    """
    :py:class:`~rbfly.streams.ManualCredit`: a credit when the application
    says a chunk is processed.
    """
    __slots__ = ()

    def hold(self, messages: int) -> int | None:
        if not messages:
            return None
        self.held += 1
        return -1

def credit_policy(flow: FlowStrategy | None, credit: int, buffer_bytes: int) -> CreditPolicy:
    """
    The policy of a subscription with a flow strategy (``None``: the
    byte-bounded default, with ``credit`` and ``buffer_bytes``; a strategy
    has its own credit).
    """
    if flow is None:
        return ByteBounded(credit, buffer_bytes)
    if isinstance(flow, CreditOnTake):
        return OnTake(flow.credit)
    if isinstance(flow, CreditWhenProcessed):
        return WhenProcessed(flow.credit, flow.ratio)
    return Manual(flow.credit)

__all__ = [
    'MAX_CREDIT', 'ByteBounded', 'Counting', 'CreditPolicy', 'Manual', 'OnTake',
    'WhenProcessed', 'credit_policy',
]
