"""
The reading side of the facade: the options its subscribe methods share,
and the iterators they return.

:py:class:`SubscribeArgs` types, once, the keyword arguments that
:py:meth:`~rbfly.streams.StreamsClient.subscribe`,
:py:meth:`~rbfly.streams.StreamsClient.subscribe_windows`,
:py:meth:`~rbfly.streams.StreamsClient.subscribe_chunks` and their super
stream siblings take alike (``**options: Unpack[SubscribeArgs]``): mypy
and an editor check each name and type as if it were spelt out in each
signature. A new option of a subscription is added here, described in
:py:meth:`~rbfly.streams.StreamsClient.subscribe_chunks`, and read from
the record the subscriptions part builds subscriptions with
(:py:class:`~rbfly.streams.parts.subscribing.SubscribeOptions`; a test
keeps the two lists equal).

:py:class:`Consuming` receives the parts that read (offsets,
subscriptions, super streams) and builds what a subscribe method returns:
message bodies (or objects), windows, or chunks, of a stream or of every
partition of a super stream.
"""

from __future__ import annotations

import dataclasses as dtc
import difflib
import functools
import typing as tp

from .lifecycle import StateListener
from .metrics import Counters
from .offset import Offset
from .parts.offsets import Offsets
from .parts.subscribing import (
    ConsumerUpdateCallback,
    DecodeErrorAction,
    GapAction,
    ResumeCallback,
    SubscribeOptions,
    Subscribing,
    check_decode_error,
)
from .parts.superstreams import SuperStreams
from .serializers import Codec, OnMismatch, Serializer, as_codec
from .subscriptions._bodies import Bodies
from .subscriptions.chunks import Chunks
from .subscriptions.decoded import Decoded
from .subscriptions.errors import DeadLetters, OnError, Open
from .subscriptions.flow import FlowStrategy
from .subscriptions.handlers import Handler, Handlers, Key, check_handlers
from .subscriptions.progress import Progress
from .subscriptions.windows import Windows, check_window
from .types import MessageFilter

class SubscribeArgs(tp.TypedDict, total=False):
    """
    The options of a subscription, as keyword arguments of the subscribe
    methods of :py:class:`~rbfly.streams.StreamsClient`: each is
    described, with its default, at
    :py:meth:`~rbfly.streams.StreamsClient.subscribe_chunks`.
    """
    offset: Offset
    filter: MessageFilter | None
    timeout: float
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

SUBSCRIBE_NAMES: tp.Final = frozenset(SubscribeArgs.__annotations__)
"""The names of the options of a subscription."""

def subscribe_options(where: str, options: SubscribeArgs) -> SubscribeOptions:
    """
    The record of a subscription's options (an option not given has its
    default there), refusing a name a subscription does not have, as
    Python refused an unexpected keyword argument, and naming the closest.

    :param where: The facade's method given the options, for the message
        (``StreamsClient.<where>()``, as Python names it).
    :raises TypeError: For an unknown option.
    """
    unknown = sorted(options.keys() - SUBSCRIBE_NAMES)
    if unknown:
        close = difflib.get_close_matches(unknown[0], SUBSCRIBE_NAMES, 1)
        raise TypeError('StreamsClient.{}() got an unexpected keyword argument {!r}{}'.format(
            where, unknown[0], '; did you mean {!r}?'.format(close[0]) if close else '',
        ))
    if 'on_decode_error' in options:  # ('policy' is concurrent handlers' own)
        check_decode_error(options['on_decode_error'])
    return SubscribeOptions(**options)

class Consuming:
    """
    What the facade's subscribe methods return, built from the parts that
    read: each method names itself (``where``, for its errors), the stream
    or super stream, and hands over its options.

    Nothing is checked against the broker, or subscribed, before the first
    iteration; bad options (a window's bounds, a serializer, tracking
    without a name) raise at the call.
    """
    def __init__(
            self, offsets: Offsets, subscribing: Subscribing, super_streams: SuperStreams,
            counters: Counters,
    ) -> None:
        self._offsets = offsets
        self._subscribing = subscribing
        self._super_streams = super_streams
        self._counters = counters

    def bodies(
            self, where: str, stream: str, super_stream: bool,
            serializer: Serializer | Codec | None, on_mismatch: OnMismatch,
            args: SubscribeArgs,
    ) -> Bodies | Decoded:
        """
        The bodies of the messages, each set as the current message context
        (compiled); with a tracker, a message counts as processed when the
        next one is asked for, the last one at the end. With a serializer,
        their objects.
        """
        options = subscribe_options(where, args)
        codec = None if serializer is None else as_codec(serializer, on_mismatch)
        bodies = Bodies(self.progress(stream, super_stream, options))
        if codec is not None:
            return Decoded(bodies, codec, stream)
        return bodies

    def windows(
            self, where: str, stream: str, super_stream: bool, max_messages: int,
            max_wait: float | None, serializer: Serializer | Codec | None,
            on_mismatch: OnMismatch, args: SubscribeArgs,
    ) -> Windows:
        """Windows of messages (see :py:mod:`rbfly.streams.subscriptions.windows`)."""
        options = subscribe_options(where, args)
        check_window(max_messages, max_wait)
        codec = None if serializer is None else as_codec(serializer, on_mismatch)
        progress = self.progress(stream, super_stream, options)
        return Windows(progress, max_messages, max_wait, codec=codec, stream=stream)

    def chunks(self, where: str, stream: str, super_stream: bool, args: SubscribeArgs) -> Chunks:
        """The chunks of a stream, or of every partition of a super stream."""
        options = subscribe_options(where, args)
        return Chunks(self.progress(stream, super_stream, options))

    def handlers(
            self, where: str, stream: str, super_stream: bool, handler: Handler,
            concurrency: int, key: Key | None, drain_timeout: float, on_error: OnError,
            open: Open, args: SubscribeArgs,
    ) -> Handlers:
        """
        Concurrent handlers over the messages (see
        :py:mod:`rbfly.streams.subscriptions.handlers`); ``open`` opens
        the named publishers of dead letters.
        """
        options = subscribe_options(where, args)
        check_handlers(handler, concurrency, key, drain_timeout)
        if not isinstance(on_error, OnError):
            raise TypeError('on_error must be an OnError, got {!r}'.format(on_error))
        dead_letters = None
        if on_error.dead_letter is not None:
            if options.name is None:
                raise ValueError('a dead-letter stream needs a name: its publishers are named'
                                 ' after the consumer, to publish each dead letter once')
            dead_letters = DeadLetters(open, on_error.dead_letter, options.name)
        if 'on_decode_error' not in args:  # (a message that is not AMQP: the policy's)
            options = dtc.replace(options, on_decode_error='policy')
        progress = self.progress(stream, super_stream, options)
        return Handlers(
            progress, handler, concurrency, key, drain_timeout, on_error, dead_letters,
            self._counters,
        )

    def progress(self, stream: str, super_stream: bool, options: SubscribeOptions) -> Progress:
        """
        The progress of a read of a stream, or of every partition of a
        super stream, with its automatic offset tracker, if any.
        """
        subscribing = self._subscribing
        subscribing.check(options)
        tracker = self._offsets.tracker(options.name, options.store_every, options.store_interval)
        if super_stream:
            make = functools.partial(self._super_streams.subscriptions, stream)
            return subscribing.progress(make, options, tracker)
        return subscribing.progress(subscribing.make(stream), options, tracker)

__all__ = ['SUBSCRIBE_NAMES', 'Consuming', 'SubscribeArgs', 'subscribe_options']
