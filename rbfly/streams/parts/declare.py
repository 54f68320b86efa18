"""
Declaring publishers and subscriptions on a connection, and ending them
there: the requests (DeclarePublisher, Subscribe, their deletion), the ids
they take on the connection, and asking again after a reconnection while
the stream refuses them.

A declaration cancelled or timed out may still be carried out by the
broker: its id stays taken until the broker answered its deletion (see
:py:func:`rbfly.streams.aio.records.abandon`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import typing as tp

from ..aio.connection import StreamsProtocol
from ..aio.records import abandon, attach, delete_stale, detach, free_id, release_id, reserve
from ..backoff import Backoff
from ..error import RequestTimeout, StreamDoesNotExist, StreamNotAvailable, StreamsError
from ..protocol.commands import (
    DeclarePublisher,
    DeletePublisher,
    OffsetSpec,
    QueryPublisherSequence,
    Subscribe,
    Unsubscribe,
)
from . import metadata
from .tasks import Background

if tp.TYPE_CHECKING:
    from ..publishers.awaited import PublisherTrait
    from ..subscriptions.subscription import Subscription

logger = logging.getLogger('rbfly.streams.client')

T = tp.TypeVar('T')

RESTORE_RETRY_TIME = 30.0
"""
Seconds a publisher or subscription is declared again after a reconnection
while its stream, still listed by the broker, refuses it: a RabbitMQ 4.0
node just reconnected to can answer a Subscribe with "stream does not
exist" for a stream its metadata lists.
"""

RESTORE_BACKOFF = Backoff(initial=0.05, maximum=1.0, multiplier=2.0, jitter=0.0)
"""Delays between those declarations."""

def publisher_context(publisher: PublisherTrait) -> str:
    return 'publisher {!r} of stream {!r}'.format(publisher.name, publisher.stream)

def subscription_context(sub: Subscription) -> str:
    return 'subscription to stream {!r}'.format(sub.stream)

class Declarer:
    """
    Declares publishers and subscriptions on connections.

    :param tasks: Where deleting an abandoned declaration runs.
    """
    def __init__(self, tasks: Background) -> None:
        self._tasks = tasks

    #
    # publishers
    #

    async def declare_publisher(
            self, protocol: StreamsProtocol, publisher: PublisherTrait,
    ) -> tuple[int, int]:
        """
        Declare a publisher on a connection; return its id there and the
        last publishing id the stream stored for its name (0 for an
        anonymous publisher: the broker keeps none). The id is taken on
        the connection; :py:func:`attach` it.
        """
        name = publisher.name
        stream = publisher.stream
        ctx = publisher_context(publisher)
        sequence = 0
        if name:
            response = await protocol.request(QueryPublisherSequence(name, stream), ctx)
            sequence = response.sequence
        ident = reserve(protocol, publisher)
        try:
            await protocol.request(DeclarePublisher(ident, name, stream), ctx)
        except (asyncio.CancelledError, RequestTimeout):
            release_id(protocol, publisher, ident)
            abandon(protocol, 'publishers', ident, DeletePublisher(ident), ctx, self._tasks.spawn)
            raise
        except Exception:
            release_id(protocol, publisher, ident)
            raise
        return ident, sequence

    async def add_publisher(self, protocol: StreamsProtocol, publisher: PublisherTrait) -> None:
        """Declare a new publisher, continuing from its name's stored publishing id."""
        ident, sequence = await self.declare_publisher(protocol, publisher)
        publisher.message_id = sequence
        attach(protocol, publisher, ident)

    async def restore_publisher(
            self, protocol: StreamsProtocol, publisher: PublisherTrait,
    ) -> None:
        """
        Declare a publisher again on a connection; it sends its unconfirmed
        messages again.
        """
        ident, sequence = await self.declare_again(
            protocol, publisher.stream, lambda: self.declare_publisher(protocol, publisher),
        )
        attach(protocol, publisher, ident)
        publisher.restore(sequence)

    async def delete_stale_publisher(
            self, protocol: StreamsProtocol, publisher: PublisherTrait, ident: int,
    ) -> bool:
        """
        Delete the publisher the broker holds still under ``ident`` (the
        publisher's id there before it was detached), unless that id is
        taken on the connection now; true when deleted (or the broker had
        no publisher there any more).
        """
        return await delete_stale(
            protocol, 'publishers', ident, DeletePublisher(ident), publisher_context(publisher),
        )

    def drop_publisher(self, protocol: StreamsProtocol, publisher: PublisherTrait) -> None:
        """
        Take a publisher off its connection, to be declared elsewhere (its
        stream changed): the broker may hold it still (RabbitMQ 3.13+
        forgets on a MetadataUpdate only the publishers whose leader
        failed), so it is deleted there, its id taken until the broker
        answered (an error, when the broker forgot it, is dropped). Else a
        declaration of it again on that connection is refused, its name
        taken.
        """
        ident = publisher.ident
        detach(publisher)
        abandon(protocol, 'publishers', ident, DeletePublisher(ident),
                publisher_context(publisher), self._tasks.spawn)

    async def delete_publisher(self, publisher: PublisherTrait, closing: bool) -> None:
        """
        A publisher ended: free its id, and delete it on the broker unless
        its connection is closing.
        """
        protocol = publisher.protocol
        ident = publisher.ident
        detach(publisher)
        if protocol is not None and protocol.is_open and not closing:
            with contextlib.suppress(StreamsError):  # it ends either way
                await protocol.request(DeletePublisher(ident), publisher_context(publisher))

    #
    # subscriptions
    #

    async def subscribe(
            self, protocol: StreamsProtocol, sub: Subscription, spec: OffsetSpec,
    ) -> None:
        """Subscribe on a connection, starting at ``spec``."""
        attach(protocol, sub, free_id(protocol, 'subscriptions'))
        ident = sub.ident
        ctx = subscription_context(sub)
        try:
            await protocol.request(
                Subscribe(ident, sub.stream, spec, sub.credit, sub.properties), ctx,
            )
        except (asyncio.CancelledError, RequestTimeout):
            detach(sub)
            abandon(protocol, 'subscriptions', ident, Unsubscribe(ident), ctx, self._tasks.spawn)
            raise
        except Exception:
            detach(sub)
            raise
        if sub.protocol is protocol:  # (not lost meanwhile)
            sub.declared()

    def unsubscribe(self, protocol: StreamsProtocol, sub: Subscription) -> None:
        """
        End a subscription on its connection. Its id stays taken (what
        comes for it is dropped) until the broker answered the Unsubscribe:
        a subscription declared meanwhile on the connection must not get
        the id the broker still holds (it answered "subscription id already
        exists" in CI when the id was freed before the Unsubscribe went).
        """
        ident = sub.ident
        detach(sub)
        abandon(protocol, 'subscriptions', ident, Unsubscribe(ident),
                subscription_context(sub), self._tasks.spawn)

    #
    # after a reconnection
    #

    async def declare_again(
            self, protocol: StreamsProtocol, stream: str,
            declare: tp.Callable[[], tp.Awaitable[T]],
    ) -> T:
        """
        Declare a publisher or subscription again after a reconnection;
        while its stream refuses it but is listed in the broker's metadata
        (so not deleted), ask again with :py:data:`RESTORE_BACKOFF`'s
        delays, for up to :py:data:`RESTORE_RETRY_TIME` seconds.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + RESTORE_RETRY_TIME
        delays = RESTORE_BACKOFF.delays()
        while True:
            try:
                return await declare()
            except (StreamDoesNotExist, StreamNotAvailable) as ex:
                delay = next(delays, None)
                if delay is None or loop.time() > deadline \
                        or not await self._listed(protocol, stream):
                    raise
                logger.info('stream %r refused a declaration after reconnection (%s);'
                            ' asking again in %.2fs', stream, ex, delay)
            await asyncio.sleep(delay)

    @staticmethod
    async def _listed(protocol: StreamsProtocol, stream: str) -> bool:
        """
        Whether the broker's metadata lists a stream (deleted: not; an
        error of the moment for it: as listed, asked again).

        :raises AccessRefused: When the broker refuses to say (the user
            may not use the stream: not a deleted stream).
        """
        found = await metadata.members(protocol.request, stream)
        if found.status is metadata.Status.REFUSED:
            raise metadata.error_of(found, stream)
        return found.status is not metadata.Status.MISSING

__all__ = ['RESTORE_BACKOFF', 'RESTORE_RETRY_TIME', 'Declarer']
