"""
The blocking client: the async API's :py:class:`~rbfly.streams.StreamsClient`
run on an event loop of its own, in a daemon thread, behind methods that
block until done (see :doc:`/blocking`)::

    with blocking_client('rabbitmq-stream://guest:guest@localhost') as client:
        client.create_stream('orders')
        with client.publisher('orders') as publisher:
            publisher.send('hello')
        with client.subscribe('orders', offset=Offset.FIRST, timeout=5) as records:
            for record in records:
                print(record.offset, record.body)

Every method hands a coroutine of the async client to the loop and waits
for it: the facade has no protocol logic of its own. It is safe to call
from several threads (the loop serializes their work). Each call waits
``timeout`` seconds at most; the async client's own deadlines come first,
with its typed errors (:py:class:`~rbfly.streams.ConnectionLost`,
:py:class:`~rbfly.streams.RequestTimeout`,
:py:class:`~rbfly.streams.ConfirmTimeout`).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import ssl as _ssl
import threading
import typing as tp
from collections.abc import Awaitable, Callable, Coroutine

from ..client import StreamsClient, streams_client
from ..health import Health, HealthLimits
from ..lifecycle import StateListener
from ..metrics import Metrics
from ..offset import Offset
from ..parts.offsets import COMMIT_TIMEOUT
from ..parts.options import ClientOptionArgs, check_option_names
from ..parts.subscribing import (
    ConsumerUpdateCallback,
    DecodeErrorAction,
    GapAction,
    ResumeCallback,
)
from ..publishers.awaited import PublisherBatchFast
from ..publishers.options import PUBLISHER_NAMES, PublisherArgs, check_names
from ..publishers.pipelined import PublisherPipelined
from ..publishers.superstream import RoutingKey, RoutingStrategy
from ..serializers import Codec, OnMismatch, Serializer, as_codec
from ..subscriptions.flow import FlowStrategy
from ..types import MessageFilter, StreamInfo
from .holder import Held
from .loop import LoopThread, check_no_loop
from .publisher import BlockingPublisher, BlockingSuperStreamPublisher
from .subscription import BlockingSubscription

T = tp.TypeVar('T')

DEFAULT_TIMEOUT = 60.0
"""Seconds a blocking call waits at most, unless the client is given another ``timeout``."""

_names = itertools.count(1)

class BlockingSubscribeArgs(tp.TypedDict, total=False):
    """
    The options of a blocking subscription, as keyword arguments of
    :py:meth:`~rbfly.streams.blocking.BlockingClient.subscribe`: those of the async client's
    (:py:class:`~rbfly.streams.consuming.SubscribeArgs`, each described at
    :py:meth:`~rbfly.streams.StreamsClient.subscribe_chunks`) but
    ``offset`` and ``timeout``, which the blocking methods spell out
    (their ``timeout`` bounds each step of the iteration); a test keeps
    the two lists equal.
    """
    filter: MessageFilter | None
    amqp: bool
    name: str | None
    single_active: bool
    consumer_update: ConsumerUpdateCallback | None
    store_every: int
    store_interval: float
    credit: int | None
    buffer_bytes: int | None
    resume: ResumeCallback | None
    on_state: StateListener | None
    flow: FlowStrategy | None
    stop_at_end: bool
    on_decode_error: DecodeErrorAction
    on_gap: GapAction
    processing_timeout: float | None

BLOCKING_SUBSCRIBE_NAMES: tp.Final = frozenset(BlockingSubscribeArgs.__annotations__)
"""The names of the options of a blocking subscription."""

class _Open:
    """
    What a client has open (publishers, subscriptions), closed with it:
    owned by the client's loop thread's closing, so that interpreter exit
    closes them too.
    """
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closers: dict[object, Callable[[], Awaitable[None]]] = {}

    def add(self, token: object, closer: Callable[[], Awaitable[None]]) -> None:
        with self._lock:
            self._closers[token] = closer

    def discard(self, token: object) -> None:
        with self._lock:
            self._closers.pop(token, None)

    async def close(self, client: StreamsClient) -> None:
        """Close what is open, then disconnect the client (on the loop)."""
        with self._lock:
            closers = list(self._closers.values())
            self._closers.clear()
        for closer in closers:
            with contextlib.suppress(Exception):  # closing anyway; its errors were its user's
                await closer()
        await client.disconnect()

class BlockingClient:
    """
    A RabbitMQ Streams client for blocking code (scripts, WSGI
    applications, Celery tasks, notebooks): the async client on an event
    loop of its own, in a daemon thread.

    Use it as a context manager, or call :py:meth:`close`; one left open
    is closed at interpreter exit. Calling it from a thread running an
    event loop raises
    :py:class:`~rbfly.streams.blocking.BlockingCallInLoop`: use the async
    API there.

    :param client: The async client to run (made by
        :py:func:`blocking_client`).
    :param timeout: Seconds each call waits at most (``None``: as long as
        it takes); the default publisher's ``confirm_timeout`` and
        ``enqueue_timeout`` too.
    """
    def __init__(
            self, client: Callable[[], StreamsClient], *,
            timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        check_no_loop('BlockingClient')
        if timeout is not None and (isinstance(timeout, bool) or not timeout > 0):
            raise ValueError('timeout must be positive seconds or None, got {!r}'.format(timeout))
        self._timeout = timeout
        self._open = opened = _Open()
        holder: list[StreamsClient] = []
        self._runner = runner = LoopThread(
            'rbfly-blocking-{}'.format(next(_names)), lambda: opened.close(holder[0]),
        )
        try:
            self._client = runner.run(_make(client), timeout, 'creating the client')
        except BaseException:
            runner.close()
            raise
        holder.append(self._client)

    def __repr__(self) -> str:
        return 'BlockingClient({!r})'.format(self._client)

    def _run(self, coro: Coroutine[tp.Any, tp.Any, T], what: str) -> T:
        return self._runner.run(coro, self._timeout, what)

    # -- the client --

    def close(self) -> None:
        """
        Close the client's publishers (waiting for their confirmations)
        and subscriptions, disconnect, and stop its loop. Idempotent.
        """
        if not self._runner.closed:
            check_no_loop('BlockingClient.close')
        self._runner.close(self._timeout)

    def __enter__(self) -> tp.Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        """Whether the client is closed."""
        return self._runner.closed

    @property
    def async_client(self) -> StreamsClient:
        """
        The async client it runs on its loop thread: for what works on a
        client as a whole, e.g. :py:func:`rbfly.streams.otel.instrument`
        (calling its methods from another thread is not safe).
        """
        return self._client

    def metrics(self) -> Metrics:
        """The client's metrics (see :py:meth:`rbfly.streams.StreamsClient.metrics`)."""
        return self._run(_call(self._client.metrics), 'metrics')

    def health(self, limits: HealthLimits | None = None) -> Health:
        """The client's health (see :py:meth:`rbfly.streams.StreamsClient.health`)."""
        return self._run(_call(functools.partial(self._client.health, limits)), 'health')

    # -- streams --

    def create_stream(
            self, stream: str, *, max_length_bytes: int | None = None,
            max_age: str | None = None, max_segment_size_bytes: int | None = None,
            filter_size: int | None = None, leader_locator: str | None = None,
            initial_cluster_size: int | None = None, initial_offset: int | None = None,
            arguments: tp.Mapping[str, str] | None = None, exist_ok: bool = True,
    ) -> None:
        """Create a stream (options of :py:meth:`~rbfly.streams.StreamsClient.create_stream`)."""
        self._run(self._client.create_stream(
            stream, max_length_bytes=max_length_bytes, max_age=max_age,
            max_segment_size_bytes=max_segment_size_bytes, filter_size=filter_size,
            leader_locator=leader_locator, initial_cluster_size=initial_cluster_size,
            initial_offset=initial_offset, arguments=arguments, exist_ok=exist_ok,
        ), 'creating stream')

    def delete_stream(self, stream: str, *, missing_ok: bool = True) -> None:
        """Delete a stream."""
        self._run(self._client.delete_stream(stream, missing_ok=missing_ok), 'deleting stream')

    def stream_exists(self, stream: str) -> bool:
        """Whether a stream exists."""
        return self._run(self._client.stream_exists(stream), 'stream_exists')

    def stream_metadata(self, stream: str) -> StreamInfo:
        """Where a stream lives: its leader and replicas."""
        return self._run(self._client.stream_metadata(stream), 'stream_metadata')

    def stream_stats(self, stream: str) -> dict[str, int]:
        """Statistics of a stream (RabbitMQ 3.11+)."""
        return self._run(self._client.stream_stats(stream), 'stream_stats')

    def resolve_offset(self, stream: str, offset: Offset = Offset.NEXT) -> int:
        """Where a subscription from ``offset`` starts (RabbitMQ 4.3+)."""
        return self._run(self._client.resolve_offset(stream, offset), 'resolve_offset')

    def end_offset(self, stream: str) -> int | None:
        """
        The offset after the stream's last message, where the next one
        goes (``None``: the stream has no messages); see
        :py:meth:`~rbfly.streams.StreamsClient.end_offset`.

        :raises rbfly.streams.error.StreamDoesNotExist: When there is no
            such stream.
        """
        return self._run(self._client.end_offset(stream), 'end_offset')

    # -- super streams --

    def create_super_stream(
            self, super_stream: str, partitions: int | None = None, *,
            binding_keys: tp.Sequence[str] | None = None,
            arguments: tp.Mapping[str, str] | None = None, exist_ok: bool = True,
    ) -> list[str]:
        """
        Create a super stream (RabbitMQ 3.13+); return its partitions
        (options of :py:meth:`~rbfly.streams.StreamsClient.create_super_stream`).
        """
        return self._run(
            self._client.create_super_stream(
                super_stream, partitions, binding_keys=binding_keys, arguments=arguments,
                exist_ok=exist_ok,
            ),
            'creating super stream',
        )

    def delete_super_stream(self, super_stream: str, *, missing_ok: bool = True) -> None:
        """Delete a super stream and its partitions."""
        self._run(
            self._client.delete_super_stream(super_stream, missing_ok=missing_ok),
            'deleting super stream',
        )

    def super_stream_exists(self, super_stream: str) -> bool:
        """Whether a super stream exists."""
        return self._run(self._client.super_stream_exists(super_stream), 'super_stream_exists')

    def super_stream_partitions(self, super_stream: str) -> list[str]:
        """The partitions of a super stream, in order."""
        return self._run(
            self._client.super_stream_partitions(super_stream), 'super_stream_partitions',
        )

    def route(self, super_stream: str, routing_key: str) -> list[str]:
        """The partitions the broker binds a routing key to."""
        return self._run(self._client.route(super_stream, routing_key), 'route')

    # -- offsets --

    def query_offset(self, stream: str, reference: str) -> int:
        """
        The offset stored under a reference name.

        :raises rbfly.streams.error.NoOffset: When none is stored.
        """
        return self._run(self._client.query_offset(stream, reference), 'query_offset')

    def write_offset(self, stream: str, reference: str, value: int, *, wait: bool = False,
                     ) -> None:
        """
        Store an offset under a reference name (see
        :py:meth:`~rbfly.streams.StreamsClient.write_offset`: without
        ``wait``, it returns once sent).
        """
        self._run(self._client.write_offset(stream, reference, value, wait=wait),
                  'write_offset')

    def commit_offset(
            self, stream: str, reference: str, value: int, *, timeout: float = COMMIT_TIMEOUT,
    ) -> None:
        """
        Store an offset under a reference name and return once the broker
        reports it stored.

        :raises rbfly.streams.error.OffsetCommitTimeout: When it does not.
        """
        self._run(self._client.commit_offset(stream, reference, value, timeout=timeout),
                  'commit_offset')

    def query_publisher_sequence(self, stream: str, name: str) -> int:
        """The last publishing id a stream stored for a named publisher (0: none)."""
        return self._run(
            self._client.query_publisher_sequence(stream, name), 'query_publisher_sequence',
        )

    # -- publishers --

    def publisher(
            self, stream: str, **options: tp.Unpack[PublisherArgs],
    ) -> BlockingPublisher:
        """
        A publisher of a stream (close it, or use it as a context manager):
        a :py:class:`~rbfly.streams.PublisherPipelined` underneath.

        :param options: Options of
            :py:meth:`~rbfly.streams.StreamsClient.publisher` (not
            ``cls``; ``serializer`` sends objects, see :doc:`/serializers`);
            ``confirm_timeout`` and ``enqueue_timeout`` are the
            client's ``timeout`` unless given.
        :raises TypeError: For an unknown option, naming the closest.
        """
        check_no_loop('BlockingClient.publisher')
        if 'cls' in options:
            raise TypeError('a blocking publisher is pipelined: it takes no cls')
        check_names('BlockingClient.publisher', options, PUBLISHER_NAMES)
        options.setdefault('confirm_timeout', self._timeout)
        options.setdefault('enqueue_timeout', self._timeout)
        client = self._client

        def pipelined() -> contextlib.AbstractAsyncContextManager[PublisherPipelined]:
            return client.publisher(stream, cls=PublisherPipelined, **options)
        held = Held(self._runner, pipelined, self._timeout, 'publisher of stream {!r}'.format(
            stream,
        ))
        token = object()
        try:
            publisher = BlockingPublisher(
                self._runner, held, self._timeout, functools.partial(self._open.discard, token),
            )
        except BaseException:
            held.close(failed=True)
            raise
        self._open.add(token, publisher.aclose)
        return publisher

    def super_stream_publisher(
            self, super_stream: str, routing_key: RoutingKey, *,
            routing: tp.Literal['hash', 'key'] | RoutingStrategy = 'hash',
            **options: tp.Unpack[PublisherArgs],
    ) -> BlockingSuperStreamPublisher:
        """
        A publisher of a super stream (close it, or use it as a context
        manager): each message goes to the partition of its key (see
        :py:meth:`~rbfly.streams.StreamsClient.super_stream_publisher`;
        ``routing_key`` gets the message as given, before a serializer).

        :raises TypeError: For an unknown option, naming the closest.
        """
        check_no_loop('BlockingClient.super_stream_publisher')
        if 'cls' in options:
            raise TypeError('a blocking super stream publisher is a batch publisher:'
                            ' it takes no cls')
        check_names('BlockingClient.super_stream_publisher', options, PUBLISHER_NAMES)
        held = Held(
            self._runner,
            functools.partial(
                self._client.super_stream_publisher, super_stream, routing_key,
                routing=routing, cls=PublisherBatchFast, **options,
            ),
            self._timeout, 'publisher of super stream {!r}'.format(super_stream),
        )
        token = object()
        self._open.add(token, held.aclose)
        return BlockingSuperStreamPublisher(
            self._runner, held, self._timeout, functools.partial(self._open.discard, token),
        )

    # -- subscriptions --

    def subscribe(
            self, stream: str, *, offset: Offset = Offset.NEXT, timeout: float | None = None,
            serializer: Serializer | Codec | None = None, on_mismatch: OnMismatch = 'raise',
            **options: tp.Unpack[BlockingSubscribeArgs],
    ) -> BlockingSubscription:
        """
        Subscribe to a stream: an iterator over its messages' records
        (:py:class:`~rbfly.streams.blocking.Record`: stream, offset,
        timestamp, body and message). Close it (or leave its ``with``
        block) to unsubscribe.

        :param offset: Where to start reading.
        :param timeout: Seconds each step of the iteration waits for a
            message before it raises ``TimeoutError`` (``None``: as long
            as it takes).
        :param serializer: Records of objects (see :doc:`/serializers`).
        :param on_mismatch: What to do with a message of another content
            type (``'raise'`` or ``'raw'``).
        :param options: Options of
            :py:meth:`~rbfly.streams.StreamsClient.subscribe` (``name``,
            ``store_every``, ``filter``, ``stop_at_end``, ...; typed as
            :py:class:`~rbfly.streams.blocking.client.BlockingSubscribeArgs`).
        :raises TypeError: For an unknown option, naming the closest.
        """
        check_no_loop('BlockingClient.subscribe')
        check_names('BlockingClient.subscribe', options, BLOCKING_SUBSCRIBE_NAMES)
        client = self._client
        if _by_chunk(options):
            make: Callable[[], tp.Any] = functools.partial(
                client.subscribe_chunks, stream, offset=offset, **options,
            )
        else:
            make = functools.partial(
                client.subscribe, stream, offset=offset, serializer=serializer,
                on_mismatch=on_mismatch, **options,
            )
        return self._subscription(make, stream, timeout, options, serializer, on_mismatch)

    def subscribe_super_stream(
            self, super_stream: str, *, offset: Offset = Offset.NEXT,
            timeout: float | None = None, serializer: Serializer | Codec | None = None,
            on_mismatch: OnMismatch = 'raise', **options: tp.Unpack[BlockingSubscribeArgs],
    ) -> BlockingSubscription:
        """
        Subscribe to every partition of a super stream (see
        :py:meth:`subscribe`; a record's ``stream`` is its partition).
        """
        check_no_loop('BlockingClient.subscribe_super_stream')
        check_names('BlockingClient.subscribe_super_stream', options, BLOCKING_SUBSCRIBE_NAMES)
        client = self._client
        if _by_chunk(options):
            make: Callable[[], tp.Any] = functools.partial(
                client.subscribe_super_stream_chunks, super_stream, offset=offset, **options,
            )
        else:
            make = functools.partial(
                client.subscribe_super_stream, super_stream, offset=offset,
                serializer=serializer, on_mismatch=on_mismatch, **options,
            )
        return self._subscription(make, super_stream, timeout, options, serializer, on_mismatch)

    def _subscription(
            self, make: Callable[[], tp.Any], stream: str, timeout: float | None,
            options: BlockingSubscribeArgs, serializer: Serializer | Codec | None,
            on_mismatch: OnMismatch,
    ) -> BlockingSubscription:
        chunks = _by_chunk(options)
        codec = as_codec(serializer, on_mismatch) if chunks and serializer is not None else None
        token = object()
        subscription = BlockingSubscription(
            self._runner, make, stream, timeout, self._timeout,
            functools.partial(self._open.discard, token), chunks=chunks, codec=codec,
        )
        self._open.add(token, subscription.aclose)
        return subscription

def _by_chunk(options: BlockingSubscribeArgs) -> bool:
    """
    Whether a subscription takes a chunk at a time (see
    :py:mod:`~rbfly.streams.blocking.subscription`): not with offset
    tracking, nor with a flow strategy, which count what the application
    was handed.
    """
    return not options.get('store_every') and options.get('flow') is None

async def _make(make: Callable[[], StreamsClient]) -> StreamsClient:
    return make()

async def _call(function: Callable[[], T]) -> T:
    return function()

def blocking_client(
        uri: str | tp.Sequence[str], /, ssl: _ssl.SSLContext | None = None, *,
        timeout: float | None = DEFAULT_TIMEOUT, **options: tp.Unpack[ClientOptionArgs],
) -> BlockingClient:
    """
    Create a blocking client from a connection URI.

    :param uri: As for :py:func:`rbfly.streams.streams_client`.
    :param ssl: TLS context.
    :param timeout: Seconds each call waits at most.
    :param options: Options of :py:class:`~rbfly.streams.StreamsClient`.
    :raises BlockingCallInLoop: When called from a running event loop.
    :raises TypeError: For an unknown option, naming the closest one.
    """
    check_option_names(options, 'blocking_client')
    return BlockingClient(
        functools.partial(streams_client, uri, ssl=ssl, **options), timeout=timeout,
    )

__all__ = [
    'BLOCKING_SUBSCRIBE_NAMES', 'DEFAULT_TIMEOUT', 'BlockingClient', 'BlockingSubscribeArgs',
    'blocking_client',
]
