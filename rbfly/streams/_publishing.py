"""
Publishers of :py:class:`~rbfly.streams.StreamsClient`: declaring them
with their publishing sequence, and declaring them again on a new
connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import typing as tp
import uuid
from collections.abc import AsyncIterator

from ._placement import PlacementMixin
from .aio.protocol import StreamsProtocol
from .compression import compression_code
from .error import (
    ConnectionLost,
    RequestTimeout,
    StreamNotAvailable,
    StreamsError,
)
from .protocol.commands import (
    DeclarePublisher,
    DeletePublisher,
    QueryPublisherSequence,
)
from .publisher import (
    BloomFilterExtract,
    Publisher,
    PublisherBatchTrait,
    PublisherPipelined,
    PublisherTrait,
)
from .util import check_name

logger = logging.getLogger(__name__)

T = tp.TypeVar('T', bound=PublisherTrait)

class PublishersMixin(PlacementMixin):
    """Creating publishers."""

    @tp.overload
    def publisher(
            self, stream: str, *, name: str | None = None,
            filter_extract: BloomFilterExtract | None = None,
            confirm_timeout: float | None = None, dedup: bool = True,
    ) -> contextlib.AbstractAsyncContextManager[Publisher]: ...

    @tp.overload
    def publisher(
            self, stream: str, *, name: str | None = None,
            filter_extract: BloomFilterExtract | None = None, cls: type[T],
            window: int | None = None, sub_entry_size: int | None = None,
            compression: int | str = 'none', confirm_timeout: float | None = None,
            dedup: bool = True,
    ) -> contextlib.AbstractAsyncContextManager[T]: ...

    def publisher(
            self, stream: str, *, name: str | None = None,
            filter_extract: BloomFilterExtract | None = None,
            cls: type[PublisherTrait] = Publisher,
            window: int | None = None,
            sub_entry_size: int | None = None,
            compression: int | str = 'none',
            confirm_timeout: float | None = None,
            dedup: bool = True,
    ) -> contextlib.AbstractAsyncContextManager[PublisherTrait]:
        """
        Create a publisher for a stream (an async context manager).

        :param stream: Stream name.
        :param name: Publisher reference name; the publisher continues from
            the last publishing id stored for the name, and the broker drops
            messages sent again with an id it already has. A unique name is
            generated when not given.
        :param filter_extract: Function returning a message's filter value
            (RabbitMQ 3.13+).
        :param cls: Publisher class, e.g. :py:class:`PublisherBatchFast`.
        :param window: Messages a :py:class:`PublisherPipelined` lets wait
            for confirmation.
        :param sub_entry_size: Batch publishers only: send the messages of
            a flush as sub-entry batches of this many messages (one entry
            and one publishing id each; see
            :py:class:`~rbfly.streams.SubEntryBatch`, which any publisher
            can send).
        :param compression: Compression of the sub-entry batches:
            ``'none'``, ``'gzip'`` or a registered codec.
        :param confirm_timeout: Seconds after which a message not
            confirmed yet fails with
            :py:class:`~rbfly.streams.ConfirmTimeout` (its ``send``,
            ``flush`` or listeners get it) and is not sent again, also
            across reconnections (default: it waits until confirmed).
        :param dedup: ``False`` declares an anonymous publisher (no name):
            the broker does not track its publishing ids, which costs it
            less (pipelined, RabbitMQ 3.10, 2 vCPUs: 1.06-1.13M msg/s
            against 0.96-1.01M, ``perf/bench_publish.py --impl rbfly
            rbfly-anonymous``), but messages sent again after a lost
            connection (sent, not confirmed yet) may then be stored twice.
            Nothing is lost either way. A named publisher always
            deduplicates.
        """
        check_name('stream', stream)
        if name is not None:
            check_name('publisher', name)
            if not dedup:
                raise ValueError('publisher {!r}: a named publisher deduplicates;'
                                 ' dedup=False takes no name'.format(name))
        options: dict[str, tp.Any] = {}
        if confirm_timeout is not None:
            if isinstance(confirm_timeout, bool) or not isinstance(confirm_timeout, int | float) \
                    or not confirm_timeout > 0:
                raise ValueError('confirm_timeout must be positive seconds, got {!r}'.format(
                    confirm_timeout,
                ))
            options['confirm_timeout'] = float(confirm_timeout)
        if window is not None:
            if not issubclass(cls, PublisherPipelined):
                raise ValueError('window is an option of PublisherPipelined only')
            if window < 1:
                raise ValueError('window must be at least 1, got {}'.format(window))
            options['window'] = window
        if sub_entry_size is not None:
            if not issubclass(cls, PublisherBatchTrait):
                raise ValueError('sub_entry_size is an option of the batch publishers;'
                                 ' other publishers can send SubEntryBatch messages')
            if not 1 <= sub_entry_size <= 0xffff:
                raise ValueError('sub_entry_size must be 1..65535, got {}'.format(
                    sub_entry_size,
                ))
            if filter_extract is not None:
                raise ValueError('sub-entry batches cannot have filter values')
            options['sub_entry_size'] = sub_entry_size
            options['compression'] = compression_code(compression)
        elif compression != 'none':
            raise ValueError('compression is an option of sub-entry batches (sub_entry_size)')
        return self._publisher(stream, name if dedup else '', filter_extract, cls, options)

    @contextlib.asynccontextmanager
    async def _publisher(
            self, stream: str, name: str | None,
            filter_extract: BloomFilterExtract | None, cls: type[T],
            options: dict[str, tp.Any],
    ) -> AsyncIterator[T]:
        protocol = await self._get_protocol()
        if filter_extract is not None:
            self._require(protocol, (3, 13), 'stream filtering')
        if name is None:  # '': anonymous
            name = 'rbfly-{}'.format(uuid.uuid4().hex)
        publisher = cls(self, stream, -1, name, 0, filter_extract)
        for key, value in options.items():
            setattr(publisher, key, value)
        await self._declare_new(protocol, publisher)
        try:
            yield publisher
            await publisher._finish()
        finally:
            publisher._send_pending()  # before DeletePublisher: frames keep their order
            publisher._closed = True
            publisher._stop_timer()
            closed = self._release_publisher(publisher)
            protocol = publisher._protocol  # type: ignore[assignment]
            if protocol is not None:
                protocol.publishers.pop(publisher._id, None)
                if protocol.is_open and not closed:
                    with contextlib.suppress(StreamsError):
                        await protocol.request(
                            DeletePublisher(publisher._id),
                            'publisher {!r} of stream {!r}'.format(name, stream),
                        )

    async def _declare_new(self, protocol: StreamsProtocol, publisher: PublisherTrait) -> None:
        """
        Declare a new publisher. When the connection dies under the
        declaration, declare it once more on a new connection (it has sent
        nothing yet); when that fails too, or on any other error, the
        client forgets it (the recovery of a connection must not declare a
        publisher the application never got).
        """
        declared = False
        try:
            try:
                await self._place_publisher(protocol, publisher, initial=True)
            except ConnectionLost as ex:
                logger.info('connection lost declaring a publisher of %r (%s); once more',
                            publisher.stream, ex)
                self._release_publisher(publisher)
                protocol = await self._get_protocol()
                await self._place_publisher(protocol, publisher, initial=True)
            declared = True
        finally:
            if not declared:
                self._release_publisher(publisher)

    async def query_publisher_sequence(self, stream: str, name: str) -> int:
        """
        The last publishing id a stream stored for a named publisher (0 when
        none), without declaring a publisher: where a deduplicating
        publisher of that name would continue.
        """
        check_name('stream', stream)
        check_name('publisher', name)
        response = await self._call(
            QueryPublisherSequence(name, stream),
            'publisher {!r} of stream {!r}'.format(name, stream),
        )
        return tp.cast(int, response.sequence)

    async def _declare(
            self, protocol: StreamsProtocol, publisher: PublisherTrait,
    ) -> tuple[int, int]:
        """
        Declare a publisher on a connection; return its id and the last
        publishing id the stream stored for its name (0 for an anonymous
        publisher: the broker keeps none).
        """
        name = publisher.name
        stream = publisher.stream
        ctx = 'publisher {!r} of stream {!r}'.format(name, stream)
        sequence = 0
        if name:
            response = await protocol.request(QueryPublisherSequence(name, stream), ctx)
            sequence = response.sequence
        publisher_id = self._free_id(protocol.publishers, 'publishers')
        protocol.publishers[publisher_id] = publisher  # reserve the id
        try:
            await protocol.request(DeclarePublisher(publisher_id, name, stream), ctx)
        except (asyncio.CancelledError, RequestTimeout):
            protocol.publishers.pop(publisher_id, None)
            self._abandon(
                protocol, protocol.publishers, publisher_id, DeletePublisher(publisher_id), ctx,
            )
            raise
        except Exception:
            protocol.publishers.pop(publisher_id, None)
            raise
        return publisher_id, sequence

    async def _recover_publisher(self, protocol: StreamsProtocol, publisher: tp.Any) -> None:
        """
        Declare a publisher of the client's own connection again after that
        connection, or its stream, recovered. With ``publishers_on_leader``,
        a publisher whose stream's leader is not (or not yet) on the
        connection's node is placed anew instead, on the leader's node,
        asking again with the reconnection delays.
        """
        if self._publishers_on_leader:
            try:
                moved = await self._leader_node(protocol, publisher.stream, strict=True) is not None
            except StreamNotAvailable:
                moved = True
            if moved:
                logger.info('publisher of %r: placed again on the node of its stream leader',
                            publisher.stream)
                self._manager.publishers.discard(publisher)
                publisher._owner = None
                self._relocate_publisher(publisher)
                return
        await self._restore_publisher(protocol, publisher)

    async def _restore_publisher(self, protocol: StreamsProtocol, publisher: tp.Any) -> None:
        """
        Declare a publisher again on a connection; it sends its unconfirmed
        messages again.
        """
        publisher_id, sequence = await self._declare_again(
            protocol, publisher.stream, lambda: self._declare(protocol, publisher),
        )
        publisher._restore(protocol, publisher_id, sequence)

__all__ = ['PublishersMixin']
