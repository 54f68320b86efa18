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
  key); a key without a binding raises :py:class:`~rbfly.streams.error.NoRoute`.

Messages of one routing key stay in order: they all go to one partition,
through one publisher.
"""

from __future__ import annotations

import asyncio
import typing as tp
from collections.abc import Callable, Sequence

from ._publisher_base import PublisherTrait
from .error import NoRoute

HASH_SEED = 104729
"""Seed of the MurmurHash3 of hash routing (the one of the other clients)."""

RoutingKey = Callable[[tp.Any], str]
"""Function returning the routing key of a message."""

_M32 = 0xffffffff

def murmur3_32(data: bytes, seed: int = 0) -> int:
    """
    32-bit MurmurHash3 (x86 variant) of ``data``, as an unsigned integer.
    """
    c1, c2 = 0xcc9e2d51, 0x1b873593
    h = seed & _M32
    n = len(data)
    tail = n & ~3
    for i in range(0, tail, 4):
        k = int.from_bytes(data[i:i + 4], 'little')
        k = (k * c1) & _M32
        k = ((k << 15) | (k >> 17)) & _M32
        k = (k * c2) & _M32
        h ^= k
        h = ((h << 13) | (h >> 19)) & _M32
        h = (h * 5 + 0xe6546b64) & _M32
    rest = n & 3
    if rest:
        k = int.from_bytes(data[tail:], 'little')
        k = (k * c1) & _M32
        k = ((k << 15) | (k >> 17)) & _M32
        k = (k * c2) & _M32
        h ^= k
    h ^= n
    h ^= h >> 16
    h = (h * 0x85ebca6b) & _M32
    h ^= h >> 13
    h = (h * 0xc2b2ae35) & _M32
    h ^= h >> 16
    return h

def hash_partition(routing_key: str, partitions: Sequence[str]) -> str:
    """
    Partition of a routing key with hash routing.
    """
    return partitions[murmur3_32(routing_key.encode('utf-8'), HASH_SEED) % len(partitions)]

def partition_names(
        super_stream: str, partitions: int | None, binding_keys: Sequence[str] | None,
) -> tuple[list[str], list[str]]:
    """
    Names of the partitions of a new super stream and their binding keys,
    named as the other clients and the CLI name them:
    ``<super stream>-<binding key>``, the binding keys being ``0`` to
    ``partitions - 1`` unless given.

    :raises ValueError: When neither or both are given, or a count below 1.
    """
    if (partitions is None) == (binding_keys is None):
        raise ValueError('give either the number of partitions or the binding keys')
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
    :py:class:`PublisherBin`; ``batch`` and ``flush`` for the batch
    publishers.

    :ivar super_stream: Super stream name.
    :ivar partitions: Its partitions, in the broker's order.
    :ivar publishers: Publisher of each partition.
    """
    def __init__(
            self,
            super_stream: str,
            partitions: Sequence[str],
            publishers: dict[str, PublisherTrait],
            routing_key: RoutingKey,
            route: Callable[[str], tp.Awaitable[list[str]]] | None,
    ) -> None:
        self.super_stream = super_stream
        self.partitions = list(partitions)
        self.publishers = publishers
        self._routing_key = routing_key
        self._route = route  # key routing: ask the broker (None: hash routing)
        self._routes: dict[str, PublisherTrait] = {}
        self._pending: list[tuple[str, tp.Any, tp.Any]] = []

    def __repr__(self) -> str:
        return 'SuperStreamPublisher({!r}, partitions={})'.format(
            self.super_stream, self.partitions,
        )

    def _cached(self, key: str) -> PublisherTrait | None:
        publisher = self._routes.get(key)
        if publisher is None and self._route is None:
            publisher = self.publishers[hash_partition(key, self.partitions)]
            self._routes[key] = publisher
        return publisher

    async def partition(self, message: tp.Any) -> str:
        """
        Partition a message goes to.

        :raises rbfly.streams.error.NoRoute: With key routing, when no
            partition is bound to the message's routing key.
        """
        return (await self._publisher(self._key(message))).stream

    def _key(self, message: tp.Any) -> str:
        key = self._routing_key(message)
        if not isinstance(key, str):
            raise TypeError('routing key must be a str, got {!r}'.format(key))
        return key

    async def _publisher(self, key: str) -> PublisherTrait:
        publisher = self._cached(key)
        if publisher is None:
            assert self._route is not None
            streams = [s for s in await self._route(key) if s in self.publishers]
            if not streams:
                raise NoRoute('no partition of super stream {!r} for routing key {!r}'.format(
                    self.super_stream, key
                ))
            publisher = self._routes[key] = self.publishers[streams[0]]
        return publisher

    async def send(self, message: tp.Any, *args: tp.Any, **kw: tp.Any) -> tp.Any:
        """
        Send a message to its partition, as the partition publisher's
        ``send`` does.
        """
        publisher = await self._publisher(self._key(message))
        return await publisher.send(message, *args, **kw)  # type: ignore[attr-defined]

    def batch(self, message: tp.Any, *args: tp.Any, **kw: tp.Any) -> None:
        """
        Add a message to the batch of its partition's publisher (with key
        routing, a key not routed yet is resolved on :py:meth:`flush`).
        """
        key = self._key(message)
        publisher = self._cached(key)
        if publisher is not None and not self._pending:
            publisher.batch(message, *args, **kw)  # type: ignore[attr-defined]
        else:  # keep the order of the messages behind one not routed yet
            self._pending.append((key, message, (args, kw)))

    async def flush(self) -> None:
        """
        Send the batches of all partitions and wait for their
        confirmation.
        """
        pending, self._pending = self._pending, []
        for key, message, (args, kw) in pending:
            publisher = await self._publisher(key)
            publisher.batch(message, *args, **kw)  # type: ignore[attr-defined]
        flushes = [
            p.flush() for p in self.publishers.values()  # type: ignore[attr-defined]
        ]
        await asyncio.gather(*flushes)

__all__ = ['HASH_SEED', 'SuperStreamPublisher', 'hash_partition', 'murmur3_32', 'partition_names']
