"""
Publishers: checking a publisher's options, declaring it (once more on a
new connection when the first dies under the declaration), and ending it.
This part is also what every publisher asks of its client (the
:py:class:`~rbfly.streams.publishers.base.PublisherHost`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import typing as tp
import uuid
from collections.abc import AsyncIterator

from ..aio.connection import StreamsProtocol
from ..error import ConnectionLost
from ..lifecycle import ResourceState, StateListener
from ..metrics import Counters
from ..names import check_name
from ..protocol.commands import QueryPublisherSequence
from ..protocol.compression import compression_code
from ..publishers.awaited import PublisherBatchTrait
from ..publishers.base import PublisherTrait
from ..publishers.options import PUBLISHER_NAMES, PublisherArgs, PublisherOptions, check_names
from ..publishers.pipelined import PublisherPipelined
from ..publishers.serializing import serializing_class
from ..serializers import as_codec
from ..types import BloomFilterExtract
from .connections import Connections
from .declare import Declarer
from .options import ClientOptions
from .placer import Placer

if tp.TYPE_CHECKING:
    from .recovery import Recovery

logger = logging.getLogger('rbfly.streams.client')
publisher_logger = logging.getLogger('rbfly.streams.publisher')  # documented: doc/logging.rst

T = tp.TypeVar('T', bound=PublisherTrait)

def _seconds(what: str, value: object, zero: bool = False) -> float:
    """Check seconds given for an option: a positive number (or zero)."""
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or not (value >= 0 if zero else value > 0):
        raise ValueError('{} must be {} seconds, got {!r}'.format(
            what, 'zero or positive' if zero else 'positive', value,
        ))
    return float(value)

def _pipelined_option(
        cls: type[PublisherTrait], option: str, value: object, seconds: bool, zero: bool = False,
) -> tp.Any:
    """Check an option of the pipelined publisher only (``None``: not given)."""
    if value is None:
        return None
    if not issubclass(cls, PublisherPipelined):
        raise ValueError('{} is an option of PublisherPipelined only'.format(option))
    if seconds:
        return _seconds(option, value, zero=zero)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError('{} must be at least 1, got {!r}'.format(option, value))
    return value

def publisher_options(cls: type[PublisherTrait], args: PublisherArgs) -> PublisherOptions:
    """
    Check the options of a publisher; return them as the record its
    constructor takes.

    :raises ValueError: When an option is out of range, or does not apply
        to the publisher class.
    :raises TypeError: When ``cls`` is not a publisher class, ``dedup`` not
        a bool, or ``filter_extract`` not callable.
    """
    if not isinstance(cls, type) or not issubclass(cls, PublisherTrait):
        raise TypeError('cls must be a publisher class, got {!r}'.format(cls))
    name = args.get('name')
    filter_extract = args.get('filter_extract')
    dedup = args.get('dedup', True)
    confirm_timeout = args.get('confirm_timeout')
    retry_on_recovery = args.get('retry_on_recovery', True)
    sub_entry_size = args.get('sub_entry_size')
    compression = args.get('compression', 'none')
    serializer = args.get('serializer')
    if not isinstance(dedup, bool):  # dedup='no' would be true
        raise TypeError('dedup must be True or False, got {!r}'.format(dedup))
    if filter_extract is not None and not callable(filter_extract):
        raise TypeError('filter_extract must be a function of a message, got {!r}'.format(
            filter_extract,
        ))
    if name is not None:
        check_name('publisher', name)
        if not dedup:
            raise ValueError('publisher {!r}: a named publisher deduplicates;'
                             ' dedup=False takes no name'.format(name))
    if confirm_timeout is not None:
        confirm_timeout = _seconds('confirm_timeout', confirm_timeout)
    if not isinstance(retry_on_recovery, bool):
        raise TypeError('retry_on_recovery must be True or False, got {!r}'.format(
            retry_on_recovery,
        ))
    window = _pipelined_option(cls, 'window', args.get('window'), seconds=False)
    window_bytes = _pipelined_option(cls, 'window_bytes', args.get('window_bytes'), seconds=False)
    enqueue_timeout = _pipelined_option(
        cls, 'enqueue_timeout', args.get('enqueue_timeout'), seconds=True,
    )
    linger = _pipelined_option(cls, 'linger', args.get('linger'), seconds=True, zero=True)
    code = 0
    if sub_entry_size is not None:
        if not issubclass(cls, PublisherBatchTrait):
            raise ValueError('sub_entry_size is an option of the batch publishers;'
                             ' other publishers can send SubEntryBatch messages')
        if isinstance(sub_entry_size, bool) or not isinstance(sub_entry_size, int) \
                or not 1 <= sub_entry_size <= 0xffff:
            raise ValueError('sub_entry_size must be 1..65535, got {!r}'.format(sub_entry_size))
        if filter_extract is not None:
            raise ValueError('sub-entry batches cannot have filter values')
        code = compression_code(compression)
    elif compression != 'none':
        raise ValueError('compression is an option of sub-entry batches (sub_entry_size)')
    codec = None
    if serializer is not None:
        if not cls._amqp:
            raise ValueError('a serializer sets the content type of AMQP messages;'
                             ' {} sends raw bytes'.format(cls.__name__))
        codec = as_codec(serializer)
    return PublisherOptions(
        confirm_timeout=confirm_timeout, retry_on_recovery=None if retry_on_recovery else False,
        window=window,
        window_bytes=window_bytes, enqueue_timeout=enqueue_timeout, linger=linger,
        sub_entry_size=sub_entry_size, compression=code, serializer=codec,
    )

def warn_unconfirmed(publisher: PublisherTrait, cause: BaseException, generated: bool) -> None:
    """
    Say what became of a publisher's unconfirmed messages when its context
    ends on an exception or a cancellation (Ctrl-C in a publishing loop, a
    task cancelled at shutdown), instead of waiting for their
    confirmations: how many, whether they were sent, and whether sending
    them again is safe.

    :param generated: Whether the publisher's name was generated (no name
        given): a restart cannot deduplicate under it.
    """
    count = publisher.unconfirmed
    why = 'cancelled' if isinstance(cause, asyncio.CancelledError) else \
        'ended by {}'.format(type(cause).__name__)
    if publisher.state is ResourceState.OPEN:
        fate = 'they were sent and the broker may store them, but no confirmation will come' \
            ' (the publisher is deleted)'
    else:
        fate = 'they may or may not be stored: its connection was lost, and they are not' \
            ' sent again'
    if not publisher.name:
        again = 'sending them again may store them twice (an anonymous publisher, dedup=False)'
    elif generated:
        again = 'sending them again may store them twice (the publisher\'s name {!r} was' \
            ' generated: give it a name to deduplicate after a restart)'.format(publisher.name)
    else:
        again = 'sending them again, with their publishing ids, from a publisher named {!r}' \
            ' stores each once (the broker drops those it has)'.format(publisher.name)
    publisher_logger.warning(
        'publisher %r of stream %r %s with %d messages not confirmed: %s; %s.'
        ' To wait for them, leave the publisher\'s context normally (or flush())',
        publisher.name, publisher.stream, why, count, fate, again,
    )

class Publishing:
    """
    Creates publishers, and serves them.

    :param options: The client's options (``spin``).
    :param connections: The client's connections.
    :param placer: Places publishers on them.
    :param declarer: Declares and deletes publishers.
    :param recovery: Declares a publisher the broker forgot again.
    :param counters: The client's metrics, counted by its publishers.
    """
    def __init__(
            self,
            options: ClientOptions,
            connections: Connections,
            placer: Placer,
            declarer: Declarer,
            recovery: Recovery,
            counters: Counters,
    ) -> None:
        self._connections = connections
        self._placer = placer
        self._declarer = declarer
        self._recovery = recovery
        self.counters = counters
        self.spin = options.spin

    def create(
            self, where: str, stream: str, cls: type[PublisherTrait], args: PublisherArgs,
    ) -> contextlib.AbstractAsyncContextManager[PublisherTrait]:
        """
        A publisher of a stream (see :py:meth:`rbfly.streams.StreamsClient.publisher`).

        :param where: The facade's method given the options, for the
            message of an unknown one (``StreamsClient.publisher``).
        :raises TypeError: For an unknown option (naming the closest).
        """
        check_names(where, args, PUBLISHER_NAMES)
        check_name('stream', stream)
        options = publisher_options(cls, args)
        on_state = args.get('on_state')
        if on_state is not None and not callable(on_state):
            raise TypeError('on_state must be callable, got {!r}'.format(on_state))
        name = args.get('name') if args.get('dedup', True) else ''
        return self.open(stream, name, args.get('filter_extract'), cls, options, on_state)

    @contextlib.asynccontextmanager
    async def open(
            self, stream: str, name: str | None,
            filter_extract: BloomFilterExtract | None, cls: type[T],
            options: PublisherOptions, on_state: StateListener | None = None,
    ) -> AsyncIterator[T]:
        """
        A publisher of a stream, declared (``name``: ``None`` for a
        generated name, ``''`` for an anonymous publisher); deleted when
        the context ends.
        """
        protocol = await self._connections.get()
        if filter_extract is not None:
            protocol.require((3, 13), 'stream filtering')
        named = name
        if name is None:
            name = 'rbfly-{}'.format(uuid.uuid4().hex)
        if options.serializer is not None:  # the class's choice, made once per class
            cls = serializing_class(cls)
        publisher = cls(self, stream, -1, name, 0, filter_extract, options)
        if on_state is not None:
            publisher.add_state_listener(on_state)
        try:
            await self._declare_new(protocol, publisher)
        except Exception as ex:
            publisher.lifecycle.move(ResourceState.CLOSED, 'not declared: {}'.format(ex), ex)
            raise
        except BaseException:  # cancelled
            publisher.lifecycle.move(ResourceState.CLOSED, 'not declared: cancelled')
            raise
        cause: BaseException | None = None
        try:
            yield publisher
            await publisher.finish()
        except BaseException as ex:  # re-raised: only noted for the warning
            cause = ex
            raise
        finally:
            publisher.close()  # sends what is pending before DeletePublisher: frames keep order
            if cause is not None and publisher.unconfirmed:
                warn_unconfirmed(publisher, cause, generated=named is None)
            publisher.lifecycle.move(ResourceState.CLOSED, 'closed by the application')
            closing = self._placer.release_publisher(publisher)
            await self._declarer.delete_publisher(publisher, closing)

    async def _declare_new(self, protocol: StreamsProtocol, publisher: PublisherTrait) -> None:
        """
        Declare a new publisher. When the connection dies under the
        declaration, declare it once more on a new connection (it has sent
        nothing yet); when that fails too, or on any other error, the
        client forgets it (the recovery of a connection must not declare a
        publisher the application never got).
        """
        placer = self._placer
        declared = False
        try:
            try:
                await placer.place_publisher(protocol, publisher, initial=True)
            except ConnectionLost as ex:
                logger.info('connection lost declaring a publisher of %r (%s); once more',
                            publisher.stream, ex)
                placer.release_publisher(publisher)
                protocol = await self._connections.get()
                await placer.place_publisher(protocol, publisher, initial=True)
            declared = True
        finally:
            if not declared:
                placer.release_publisher(publisher)

    async def query_sequence(self, stream: str, *, name: str) -> int:
        """The last publishing id a stream stored for a named publisher (0: none)."""
        response = await self._connections.call(
            QueryPublisherSequence(name, stream),
            'publisher {!r} of stream {!r}'.format(name, stream),
        )
        return response.sequence

    #
    # what a publisher asks of its client (PublisherHost)
    #

    async def wait_recovery(self, publisher: PublisherTrait) -> None:
        """Wait until the publisher is declared on an open connection again."""
        await self._connections.wait_recovery(publisher)

    def publisher_unknown(self, publisher: PublisherTrait) -> None:
        """The broker does not know a publisher any more: declare it again."""
        self._recovery.publisher_unknown(publisher)

__all__ = ['Publishing', 'publisher_options', 'warn_unconfirmed']
