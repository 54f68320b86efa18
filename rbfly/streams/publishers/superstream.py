"""
Super streams: a stream partitioned into several streams (RabbitMQ 3.11+).

A super stream is an exchange bound to its partition streams. A publisher
of a super stream picks the partition of each message from the message's
routing key:

- hash routing: 32-bit MurmurHash3 of the routing key's UTF-8 bytes, with
  the seed the Java, Go, .NET and Python (rstream) clients use, modulo the
  number of partitions; a key goes to the same partition whichever of
  these clients publishes it;
- key routing: the broker's bindings decide (a `Route` request, cached per
  key); a key without a binding raises :py:class:`~rbfly.streams.error.NoRoute`;
  a key bound to several partitions sends the message to each of them (as
  the Java client does);
- a routing strategy of the application's (:py:data:`RoutingStrategy`):
  a function of the message and the partitions returning the partitions
  it goes to, any number of them (the Java client's ``RoutingStrategy``).

Messages of one routing key stay in order: they all go to the same
partitions, through one publisher each.

A named (deduplicating) super stream publisher keeps a publishing id
sequence per partition. An application numbering its messages itself
(``MessageCtx(..., stream_publish_id=n)``) resumes after a restart from
:py:meth:`SuperStreamPublisher.last_publishing_id`, the lowest of the
partitions' last stored ids: a message sent again to a partition that
stored it already is dropped by the broker there, so each message is
stored once in each of its partitions.
"""

from __future__ import annotations

import asyncio
import typing as tp
from collections.abc import Callable, Coroutine, Sequence

from ..error import NoRoute
from ._hash import hash_index, murmur3_32
from .base import PublisherTrait
from .contracts import EntryPoints

HASH_SEED = 104729
"""Seed of the MurmurHash3 of hash routing (the one of the other clients)."""

MAX_ROUTES = 65_536
"""
Routing keys whose partitions a key-routing publisher keeps (the broker's
answer to a Route); past them it forgets all and asks again: memory stays
bounded when the keys have no end (an order id each).
"""

RoutingKey = Callable[[tp.Any], str]
"""Function returning the routing key of a message."""

RoutingStrategy = Callable[[tp.Any, Sequence[str]], Sequence[str]]
"""
Function of a message and the super stream's partitions (in the broker's
order) returning the partitions the message goes to (one or more).
"""

def hash_partition(routing_key: str, partitions: Sequence[str]) -> str:
    """
    Partition of a routing key with hash routing.
    """
    return partitions[hash_index(routing_key, HASH_SEED, len(partitions))]

def partition_names(
        super_stream: str, partitions: int | None, binding_keys: Sequence[str] | None,
) -> tuple[list[str], list[str]]:
    """
    Names of the partitions of a new super stream and their binding keys,
    named as the other clients and the CLI name them:
    ``<super stream>-<binding key>``, the binding keys being ``0`` to
    ``partitions - 1`` unless given. With both, the partitions are named
    ``<super stream>-0`` and on, and bound with the keys in turn: a key
    may then bind several partitions.

    :raises ValueError: When neither is given, a count below 1, or keys
        that are empty or, without a count, not unique.
    :raises TypeError: When the count is not an int, or the keys not a
        sequence of str (a str alone would be taken for its characters).
    """
    if partitions is None and binding_keys is None:
        raise ValueError('give the number of partitions or the binding keys')
    if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, int)):
        raise TypeError('partitions must be an int, got {!r}'.format(partitions))
    if binding_keys is not None and (
            isinstance(binding_keys, str | bytes) or not isinstance(binding_keys, Sequence)
            or not all(isinstance(k, str) for k in binding_keys)):
        raise TypeError('binding_keys must be a sequence of str, got {!r}'.format(binding_keys))
    if partitions is not None and binding_keys is not None:
        keys = list(binding_keys)
        if len(keys) != partitions or not all(keys):
            raise ValueError('give a binding key for each of the {} partitions, got {!r}'.format(
                partitions, keys,
            ))
        return ['{}-{}'.format(super_stream, i) for i in range(partitions)], keys
    if binding_keys is None:
        assert partitions is not None
        if partitions < 1:
            raise ValueError('a super stream needs at least 1 partition, got {}'.format(
                partitions
            ))
        keys = [str(i) for i in range(partitions)]
    else:
        keys = list(binding_keys)
        if not keys or len(set(keys)) != len(keys):
            raise ValueError('binding keys must be unique and not empty, got {!r}'.format(keys))
    return ['{}-{}'.format(super_stream, key) for key in keys], keys

class SuperStreamPublisher:
    """
    Publisher of a super stream: one publisher per partition (of the class
    given to :py:meth:`StreamsClient.super_stream_publisher`), each message
    routed to the partition of its routing key.

    The methods are those of the partition publishers' class: ``send`` for
    :py:class:`Publisher`, :py:class:`PublisherPipelined` and
    :py:class:`PublisherBin`; ``batch`` for :py:class:`PublisherBatchFast`
    and :py:class:`PublisherBinBatch` (the coroutine ``batch`` of
    :py:class:`PublisherBatchLimit` raises ``TypeError``: this ``batch``
    cannot await it), ``flush`` for the batch publishers; ``send_many``
    for all.

    :ivar super_stream: Super stream name.
    :ivar partitions: Its partitions, in the broker's order.
    :ivar publishers: Publisher of each partition.
    """
    # the partitions' publishers as their entry points (EntryPoints): a
    # publisher of any class, whose entry point a call names (one the
    # class lacks raises AttributeError, as called on the publisher)
    _entries: dict[str, EntryPoints]
    _routes: dict[str, list[EntryPoints]]

    def __init__(
            self,
            super_stream: str,
            partitions: Sequence[str],
            publishers: dict[str, PublisherTrait],
            routing_key: RoutingKey,
            route: Callable[[str], tp.Awaitable[list[str]]] | None,
            strategy: RoutingStrategy | None = None,
            sequence: Callable[[str], tp.Awaitable[int]] | None = None,
    ) -> None:
        self.super_stream = super_stream
        self.partitions = list(partitions)
        self.publishers = publishers
        self._entries = tp.cast(dict[str, EntryPoints], publishers)
        self._routing_key = routing_key
        self._route = route  # key routing: ask the broker (None: hash routing)
        self._strategy = strategy  # the application's routing
        self._sequence = sequence  # a partition's last stored id (None: anonymous)
        self._routes = {}
        # messages batched behind one whose key is not routed yet: its
        # key, the message, and the arguments of batch
        self._pending: list[tuple[str, object, tuple[tuple[object, ...], dict[str, object]]]] = []

    def __repr__(self) -> str:
        return 'SuperStreamPublisher({!r}, partitions={})'.format(
            self.super_stream, self.partitions,
        )

    def _cached(self, message: object) -> tuple[str, list[EntryPoints] | None]:
        """
        The routing key of a message and its partitions' publishers, when
        known without asking the broker.
        """
        if self._strategy is not None:
            return '', self._chosen(message)
        key = self._key(message)
        if self._route is None:  # (hash routing: in C, nothing kept per key)
            partitions = self.partitions
            return key, [self._entries[partitions[hash_index(key, HASH_SEED, len(partitions))]]]
        return key, self._routes.get(key)

    def _chosen(self, message: object) -> list[EntryPoints]:
        """The publishers of the partitions the routing strategy chose."""
        assert self._strategy is not None
        chosen = self._strategy(message, self.partitions)
        if isinstance(chosen, str) or not isinstance(chosen, Sequence):
            raise TypeError('a routing strategy returns a sequence of partitions, got {!r}'.format(
                chosen,
            ))
        unknown = [p for p in chosen if p not in self.publishers]
        if unknown:
            raise NoRoute('routing strategy chose {!r}, not partitions of super stream {!r}'.format(
                unknown, self.super_stream,
            ))
        if not chosen:
            raise NoRoute('routing strategy chose no partition of super stream {!r}'.format(
                self.super_stream,
            ))
        return [self._entries[p] for p in dict.fromkeys(chosen)]

    async def partition(self, message: object) -> str:
        """
        Partition a message goes to (the first, when several).

        :raises rbfly.streams.error.NoRoute: With key routing, when no
            partition is bound to the message's routing key.
        """
        return (await self.partitions_of(message))[0]

    async def partitions_of(self, message: object) -> list[str]:
        """
        Partitions a message goes to (with key routing or a routing
        strategy, possibly several).

        :raises rbfly.streams.error.NoRoute: When it goes to none.
        """
        return [p.stream for p in await self._targets(message)]

    def _key(self, message: object) -> str:
        key = self._routing_key(message)
        if not isinstance(key, str):
            raise TypeError('routing key must be a str, got {!r}'.format(key))
        return key

    async def _targets(self, message: object) -> list[EntryPoints]:
        key, publishers = self._cached(message)
        if publishers is None:
            publishers = await self._routed(key)
        return publishers

    async def _routed(self, key: str) -> list[EntryPoints]:
        """The publishers of the partitions the broker binds a key to."""
        assert self._route is not None
        streams = [s for s in await self._route(key) if s in self.publishers]
        if not streams:
            raise NoRoute('no partition of super stream {!r} for routing key {!r}'.format(
                self.super_stream, key
            ))
        routes = self._routes
        if len(routes) >= MAX_ROUTES:  # (keys without end: bounded memory)
            routes.clear()
        publishers = routes[key] = [self._entries[s] for s in streams]
        return publishers

    async def send(self, message: object, *args: object, **kw: object) -> tp.Any:
        """
        Send a message to its partition, as the partition publisher's
        ``send`` does. A message going to several partitions is sent to
        each, at once; the result is the first partition's (e.g. the
        publishing id of a :py:class:`PublisherPipelined`).
        """
        publishers = await self._targets(message)
        if len(publishers) == 1:
            return await publishers[0].send(message, *args, **kw)
        results = await asyncio.gather(*(p.send(message, *args, **kw) for p in publishers))
        return results[0]

    async def send_many(self, messages: tp.Iterable[object]) -> dict[str, tp.Any]:
        """
        Send messages to their partitions, as the partition publishers'
        ``send_many`` does: each partition's messages go in one call, in
        their order, the partitions at once. A message going to several
        partitions goes to each.

        :return: The result of each partition's ``send_many`` by partition
            (e.g. the publishing id of the last message of a
            :py:class:`PublisherPipelined`; partitions without messages
            are left out).
        :raises rbfly.streams.error.NoRoute: When a message goes to no
            partition (nothing is sent then).
        """
        groups: dict[EntryPoints, list[object]] = {}
        for message in messages:
            key, publishers = self._cached(message)
            if publishers is None:
                publishers = await self._routed(key)
            for publisher in publishers:
                group = groups.get(publisher)
                if group is None:
                    group = groups[publisher] = []
                group.append(message)
        results = await asyncio.gather(*(p.send_many(ms) for p, ms in groups.items()))
        return {p.stream: r for p, r in zip(groups, results, strict=True)}

    def batch(self, message: object, *args: object, **kw: object) -> None:
        """
        Add a message to the batch of its partitions' publishers (with key
        routing, a key not routed yet is resolved on :py:meth:`flush`).
        """
        key, publishers = self._cached(message)
        if publishers is not None and not self._pending:
            for publisher in publishers:
                added = publisher.batch(message, *args, **kw)
                if added is not None:
                    self._awaitable_batch(publisher, added)
        else:  # keep the order of the messages behind one not routed yet
            self._pending.append((key, message, (args, kw)))

    def _awaitable_batch(self, publisher: EntryPoints, added: object) -> tp.NoReturn:
        """
        A partition's ``batch`` returned an awaitable (the coroutine of
        :py:class:`PublisherBatchLimit`), which this ``batch`` cannot
        await: the message would be lost without a word.
        """
        if isinstance(added, Coroutine):
            added.close()  # (not awaited, on purpose: no warning of it)
        raise TypeError(
            'super stream {!r}: the batch of {} is a coroutine, which the super stream'
            " publisher's batch cannot await (the message is not batched): publish with"
            ' cls=PublisherBatchFast, or send_many'.format(
                self.super_stream, type(publisher).__name__,
            ))

    async def last_publishing_id(self) -> int:
        """
        The lowest of the last publishing ids the partitions stored for
        the publisher's name (0: none), asked of the broker: an
        application numbering its messages itself resumes after it (see
        the module's documentation).

        :raises ValueError: For an anonymous publisher (``dedup=False``),
            whose ids the broker does not keep.
        """
        if self._sequence is None:
            raise ValueError('super stream {!r}: an anonymous publisher has no stored'
                             ' publishing ids'.format(self.super_stream))
        sequences = [await self._sequence(p) for p in self.partitions]
        return min(sequences)

    async def flush(self) -> None:
        """
        Send the batches of all partitions and wait for their
        confirmation.
        """
        pending, self._pending = self._pending, []
        for key, message, (args, kw) in pending:
            publishers = self._routes.get(key) or await self._routed(key)
            for publisher in publishers:
                added = publisher.batch(message, *args, **kw)
                if added is not None:
                    self._awaitable_batch(publisher, added)
        await asyncio.gather(*(p.flush() for p in self._entries.values()))

__all__ = [
    'HASH_SEED', 'RoutingKey', 'RoutingStrategy', 'SuperStreamPublisher', 'hash_partition',
    'murmur3_32', 'partition_names',
]
