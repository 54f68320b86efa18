"""
Errors of the RabbitMQ Streams client.

Each response code other than OK has an exception class, so an application
can catch, say, :py:class:`StreamDoesNotExist` and let other failures pass.
All of them derive from :py:class:`ResponseError`, which carries the
`code`; a code unknown to this version of rbfly maps to a plain
:py:class:`ResponseError` naming the number, so a newer broker never breaks
error handling.

Messages never contain credentials: the context given to
:py:func:`error_for_code` names the resource (stream, publisher, virtual
host), never a secret.
"""

from typing import ClassVar, Literal

from ..error import RbFlyError
from .codes import ResponseCode

class StreamsError(RbFlyError):
    """
    Base class of RabbitMQ Streams client errors.
    """


class ResponseError(StreamsError):
    """
    The broker answered a request with a response code other than OK.

    Raised as is for a code unknown to rbfly; a known code raises a
    subclass.

    :ivar code: Response code sent by the broker.
    :ivar context: What the request was about, e.g. the stream name.
    """

    code: int
    description: ClassVar[str] = 'Unknown response code'

    def __init__(self, code: int, context: str = '') -> None:
        message = f'{self.description} (response code 0x{code:02x})'
        if context:
            message = f'{message}: {context}'
        super().__init__(message)
        self.code = code
        self.context = context


class _KnownResponseError(ResponseError):
    """Response error of a known code; the class defines the code."""

    def __init__(self, context: str = '') -> None:
        super().__init__(type(self).code, context)


class AuthenticationError(_KnownResponseError):
    """
    Base class of SASL and authentication errors; retrying with the same
    credentials will not help.
    """


class StreamDoesNotExist(_KnownResponseError):
    """The stream does not exist."""
    code = ResponseCode.STREAM_DOES_NOT_EXIST
    description = 'Stream does not exist'


class SubscriptionIdAlreadyExists(_KnownResponseError):
    """The subscription id is already used on the connection."""
    code = ResponseCode.SUBSCRIPTION_ID_ALREADY_EXISTS
    description = 'Subscription id already exists'


class SubscriptionIdDoesNotExist(_KnownResponseError):
    """No subscription with the id exists on the connection."""
    code = ResponseCode.SUBSCRIPTION_ID_DOES_NOT_EXIST
    description = 'Subscription id does not exist'


class StreamAlreadyExists(_KnownResponseError):
    """A stream with the name already exists."""
    code = ResponseCode.STREAM_ALREADY_EXISTS
    description = 'Stream already exists'


class StreamNotAvailable(_KnownResponseError):
    """
    The stream exists but is not available, e.g. while its leader is being
    elected; a retry may succeed.
    """
    code = ResponseCode.STREAM_NOT_AVAILABLE
    description = 'Stream not available'


class SaslMechanismNotSupported(AuthenticationError):
    """The broker does not support the SASL mechanism."""
    code = ResponseCode.SASL_MECHANISM_NOT_SUPPORTED
    description = 'SASL mechanism not supported'


class AuthenticationFailure(AuthenticationError):
    """The credentials were rejected."""
    code = ResponseCode.AUTHENTICATION_FAILURE
    description = 'Authentication failure'


class SaslError(AuthenticationError):
    """The SASL exchange failed."""
    code = ResponseCode.SASL_ERROR
    description = 'SASL error'


class SaslChallenge(AuthenticationError):
    """
    The broker sent a SASL challenge that the mechanism in use cannot
    answer.
    """
    code = ResponseCode.SASL_CHALLENGE
    description = 'SASL challenge'


class SaslAuthenticationFailureLoopback(AuthenticationError):
    """The user may connect only from the broker's host (loopback)."""
    code = ResponseCode.SASL_AUTHENTICATION_FAILURE_LOOPBACK
    description = 'SASL authentication failure, loopback only'


class VirtualHostAccessFailure(_KnownResponseError):
    """The user has no access to the virtual host."""
    code = ResponseCode.VIRTUAL_HOST_ACCESS_FAILURE
    description = 'Virtual host access failure'


class UnknownFrame(_KnownResponseError):
    """The broker did not understand a frame sent by the client."""
    code = ResponseCode.UNKNOWN_FRAME
    description = 'Unknown frame'


class FrameTooLarge(_KnownResponseError):
    """A frame sent by the client exceeded the negotiated maximum size."""
    code = ResponseCode.FRAME_TOO_LARGE
    description = 'Frame too large'


class InternalError(_KnownResponseError):
    """The broker failed to process the request."""
    code = ResponseCode.INTERNAL_ERROR
    description = 'Internal error'


class AccessRefused(_KnownResponseError):
    """The user has no permission for the operation on the resource."""
    code = ResponseCode.ACCESS_REFUSED
    description = 'Access refused'


class PreconditionFailed(_KnownResponseError):
    """
    A precondition failed, e.g. a stream exists with other arguments or a
    publisher id is already used.
    """
    code = ResponseCode.PRECONDITION_FAILED
    description = 'Precondition failed'


class PublisherDoesNotExist(_KnownResponseError):
    """No publisher with the id exists on the connection."""
    code = ResponseCode.PUBLISHER_DOES_NOT_EXIST
    description = 'Publisher does not exist'


class NoOffset(_KnownResponseError):
    """No offset is stored for the reference."""
    code = ResponseCode.NO_OFFSET
    description = 'No offset'


class SaslCannotChangeMechanism(AuthenticationError):
    """A secret update tried to change the SASL mechanism."""
    code = ResponseCode.SASL_CANNOT_CHANGE_MECHANISM
    description = 'SASL cannot change mechanism'


class SaslCannotChangeUsername(AuthenticationError):
    """A secret update tried to change the user name."""
    code = ResponseCode.SASL_CANNOT_CHANGE_USERNAME
    description = 'SASL cannot change username'


_ERRORS: dict[int, type[_KnownResponseError]] = {
    cls.code: cls
    for cls in (
        StreamDoesNotExist, SubscriptionIdAlreadyExists,
        SubscriptionIdDoesNotExist, StreamAlreadyExists, StreamNotAvailable,
        SaslMechanismNotSupported, AuthenticationFailure, SaslError,
        SaslChallenge, SaslAuthenticationFailureLoopback,
        VirtualHostAccessFailure, UnknownFrame, FrameTooLarge, InternalError,
        AccessRefused, PreconditionFailed, PublisherDoesNotExist, NoOffset,
        SaslCannotChangeMechanism, SaslCannotChangeUsername,
    )
}


ProtocolError = ResponseError
"""RbFly 0.10's name of the error of a response code (with ``code``)."""


def error_for_code(code: int, context: str = '') -> ResponseError:
    """
    Create the exception of a response code.

    :param code: Response code other than OK.
    :param context: What the request was about, e.g. ``stream 'orders'``;
        it must not contain credentials.
    :raises ValueError: If the code is OK, as it is no error.
    """
    if code == ResponseCode.OK:
        raise ValueError('response code OK is not an error')
    cls = _ERRORS.get(code)
    return ResponseError(code, context) if cls is None else cls(context)


class ConnectionLost(StreamsError):
    """
    The connection to the broker is lost or cannot be opened; the client
    connects again on its next call.
    """


class RecoveryStalled(ConnectionLost):
    """
    The client gave up restoring publishers and subscriptions: each of the
    last connections (more than the reconnection backoff's ``stalls``,
    over at least its ``stall_time``) was lost before any progress, no
    confirmation, no chunk (a broker or proxy that drops every connection
    after its handshake, or a chunk the client refuses for good). The text
    names the last loss, also the exception's ``__cause__``.
    """


class ClientClosed(StreamsError, RuntimeError):
    """
    The client was used after the end of its ``async with`` block, which
    closed it for good (a client that stayed open would connect again, and
    its socket would leak). Use it inside the block, or enter it again;
    :py:meth:`~rbfly.streams.StreamsClient.disconnect` instead closes its
    connections and keeps it usable (it connects again on its next call,
    as in RbFly 0.10).
    """


class HandshakeFrameTooLarge(StreamsError, ValueError):
    """
    A frame the client would send before the connection is open (its
    peer properties, or its SASL response: the user name and the password
    or OAuth 2 token) exceeds what a broker accepts then
    (:py:data:`~rbfly.streams.protocol.constants.INITIAL_FRAME_MAX`,
    8,192 bytes, RabbitMQ 4.3's ``stream.initial_frame_max``); raised
    before connecting. Also a :py:class:`ValueError`.
    """


class RequestTimeout(StreamsError, TimeoutError):
    """
    The broker did not answer a request (stream management, a query,
    declaring a publisher, subscribing) within the client's
    ``request_timeout``. The connection stays open; a late answer is
    ignored. Also a :py:class:`TimeoutError`.
    """


class OAuth2Error(StreamsError):
    """
    The client could not get an OAuth 2 token: the token endpoint cannot
    be reached, refused the client, or answered without a token (see
    :py:mod:`rbfly.streams.oauth2`). The text names the endpoint and the
    server's error, never the client's secret.
    """


class FeatureNotSupported(StreamsError):
    """
    The broker is too old for a feature (e.g. stream filtering needs
    RabbitMQ 3.13); raised before anything is sent.
    """


class NoRoute(StreamsError):
    """
    A super stream has no partition for a message's routing key (key
    routing: no binding matches the key).
    """


class PublisherError(StreamsError):
    """
    Error of a publisher (RbFly 0.10's name; :py:class:`MessageRejected`
    is one).
    """


class SubscriptionError(StreamsError):
    """
    Error of a subscription (RbFly 0.10's name).
    """


class StreamEndUnknown(StreamsError):
    """
    The end of a stream could not be read (for ``Offset.from_end``,
    ``stop_at_end``, ``end_offset``, ``rbfly tail``): the broker says the
    stream has chunks, and its last chunk of messages did not come within
    the wait. The broker is slow (try again), or, on RabbitMQ 3.11-4.2, the
    stream's chunks hold stored offsets only (no messages: start at
    ``Offset.NEXT``). Taking it for an empty stream instead would start a
    subscription at the end, and a bounded read would read nothing.

    :ivar stream: The stream.
    :ivar timeout: Seconds waited for the chunk.
    """
    def __init__(self, stream: str, timeout: float) -> None:
        super().__init__(
            'stream {!r} has chunks, the broker says, but its last chunk of messages did not'
            ' come within {}s: the broker is slow (try again), or its chunks hold stored'
            ' offsets only (no messages); start at an offset (Offset.FIRST, Offset.NEXT,'
            ' Offset.offset(n)) rather than from the end to do without'.format(stream, timeout))
        self.stream = stream
        self.timeout = timeout


class OffsetOutOfRange(StreamsError):
    """
    Retention removed offsets a subscription was to read: it was to start
    at an offset older than its stream's first (a stored offset, or an
    offset given, of messages retention removed since; ``when='start'``),
    to resume at one after a lost connection (``'resume'``), or retention
    overtook it while it read (``'read'``: the broker skipped the offsets
    removed, RabbitMQ 3.11+). Raised with ``on_gap='raise'`` (the default
    warns, and counts them in the ``messages_lost`` metric); aiokafka's
    ``OffsetOutOfRangeError``.

    :ivar stream: The stream.
    :ivar offset: The offset the subscription was to start (or resume)
        at; for ``'read'``, the first offset lost.
    :ivar first: The stream's first offset when it was asked for.
    :ivar end: The offset after the last one lost (``first``, but for
        ``'read'``: the offsets lost lie between ``offset`` and ``end``).
    :ivar lost: Offsets lost: ``first - offset``, or for ``'read'`` those
        of the gaps the broker left (offsets of records without messages,
        such as stored offsets, count too: at most the messages lost).
    :ivar when: ``'start'``, ``'resume'`` or ``'read'``.
    """
    def __init__(
            self, stream: str, offset: int, first: int, *, lost: int | None = None,
            end: int | None = None, when: Literal['start', 'resume', 'read'] = 'start',
    ) -> None:
        until = first if end is None else end
        count = first - offset if lost is None else lost
        if when == 'read':
            message = (
                'stream {!r}: retention removed up to {} messages, offsets {} to {}, before'
                ' the subscription read them (the stream starts at offset {} now): read'
                ' faster, or keep more of the stream (max_length_bytes, max_age);'
                ' on_gap=\'warn\' goes on, \'raise\' stops the subscription, a callback'
                ' decides'.format(stream, count, offset, until - 1, first))
        else:
            message = (
                'stream {!r} starts at offset {} now, the subscription was to {} at {}: {}'
                ' offsets removed by retention are lost (subscribe with on_gap=\'warn\' to go'
                ' on from the first, or a callback to decide)'.format(
                    stream, first, when, offset, count))
        super().__init__(message)
        self.stream = stream
        self.offset = offset
        self.first = first
        self.end = until
        self.lost = count
        self.when = when


class OffsetCommitTimeout(StreamsError, TimeoutError):
    """
    An offset was stored, and the broker did not report it under its
    reference within the deadline (a StoreOffset command has no answer:
    a commit stores, then queries until the broker returns the offset).
    Another consumer storing under the same reference meanwhile, or a
    broker that cannot write to the stream, keeps it from coming. Also a
    :py:class:`TimeoutError`.

    :ivar stream: Stream of the offset.
    :ivar reference: Offset reference name.
    :ivar offset: Offset stored.
    :ivar seen: Offset the broker last reported (``None``: none stored).
    """
    def __init__(
            self, stream: str, reference: str, offset: int, seen: int | None, timeout: float,
    ) -> None:
        super().__init__(
            'offset {} of stream {!r} under reference {!r} not stored in {}s (the broker'
            ' reports {}); does another consumer store under that name?'.format(
                offset, stream, reference, timeout,
                'nothing' if seen is None else 'offset {}'.format(seen)))
        self.stream = stream
        self.reference = reference
        self.offset = offset
        self.seen = seen


class GroupActive(StreamsError):
    """
    A reset of a consumer group saw offsets stored under the group's name
    change while it watched them: a consumer of the group runs, and would
    store over the reset (nothing was stored). The stream protocol cannot
    tell whether a consumer runs otherwise: a quiet group passes.

    :ivar name: The group's name.
    :ivar streams: The streams, or partitions, whose stored offset changed.
    """
    def __init__(self, name: str, streams: list[str]) -> None:
        super().__init__(
            'consumer group {!r} is active: its offset of {} changed meanwhile;'
            ' stop its consumers first'.format(name, ', '.join(map(repr, streams))))
        self.name = name
        self.streams = streams


class ProcessingStuck(StreamsError):
    """
    The application held a message (or a window, a chunk, handlers in
    flight) of a subscription for longer than its ``processing_timeout``
    without moving on: the subscription committed what was processed and
    ended, so that another member of its group takes its streams over (a
    single active consumer stepping down; Kafka's ``max.poll.interval.ms``).
    Raised by the iteration at its next step.

    :ivar streams: The streams held, or partitions.
    :ivar timeout: The ``processing_timeout``, in seconds.
    """
    def __init__(self, streams: list[str], timeout: float) -> None:
        super().__init__(
            'no progress processing {} for {}s (processing_timeout): the subscription'
            ' committed what was processed and ended, so that another consumer takes over;'
            ' what is being processed now is not committed'.format(
                ', '.join(map(repr, streams)) or 'a message', timeout))
        self.streams = streams
        self.timeout = timeout


class ConfirmTimeout(PublisherError, TimeoutError):
    """
    The broker did not confirm a message within its publisher's
    ``confirm_timeout`` (also across reconnections). The publisher stops
    sending it again; the broker may have stored it or not. Also a
    :py:class:`TimeoutError`.

    :ivar publishing_id: Publishing id of the message.
    :ivar stream: Stream the message was sent to.
    """
    def __init__(self, publishing_id: int, stream: str, timeout: float) -> None:
        super().__init__('message {} to stream {!r} not confirmed in {}s'.format(
            publishing_id, stream, timeout,
        ))
        self.publishing_id = publishing_id
        self.stream = stream


class EnqueueTimeout(PublisherError, TimeoutError):
    """
    A send waited for room in its publisher's window of unconfirmed
    messages longer than the publisher's ``enqueue_timeout``: the message
    was not taken (nothing was sent). Also a :py:class:`TimeoutError`.

    :ivar stream: Stream of the publisher.
    :ivar timeout: The publisher's ``enqueue_timeout``, in seconds.
    """
    def __init__(self, stream: str, timeout: float) -> None:
        super().__init__('publisher of stream {!r}: no room in the window for {}s'.format(
            stream, timeout,
        ))
        self.stream = stream
        self.timeout = timeout


class NotRetried(PublisherError, ConnectionLost):
    """
    The connection of a publisher with ``retry_on_recovery=False`` was
    lost (or its stream moved) before the broker confirmed the message:
    the publisher does not send it again. A named publisher knows that the
    broker did not store it (the broker's last publishing id for the name
    is older); an anonymous one cannot know. Also a
    :py:class:`ConnectionLost`.

    :ivar publishing_id: Publishing id of the message.
    :ivar stream: Stream the message was sent to.
    """
    def __init__(self, publishing_id: int, stream: str) -> None:
        super().__init__(
            'message {} to stream {!r} not confirmed before the connection was lost;'
            ' not sent again (retry_on_recovery=False)'.format(publishing_id, stream),
        )
        self.publishing_id = publishing_id
        self.stream = stream


class MessageRejected(PublisherError):
    """
    The broker rejected a published message (PublishError).

    :ivar publishing_id: Publishing id of the rejected message.
    :ivar code: Response code given by the broker.
    :ivar stream: Stream the message was sent to.
    """

    def __init__(self, publishing_id: int, code: int, stream: str) -> None:
        cls = _ERRORS.get(code)
        reason = cls.description if cls is not None else 'response code 0x{:02x}'.format(code)
        super().__init__('message {} rejected by stream {!r}: {}'.format(
            publishing_id, stream, reason
        ))
        self.publishing_id = publishing_id
        self.code = code
        self.stream = stream


__all__ = [
    'AccessRefused',
    'AuthenticationError',
    'AuthenticationFailure',
    'ClientClosed',
    'ConfirmTimeout',
    'ConnectionLost',
    'EnqueueTimeout',
    'FeatureNotSupported',
    'FrameTooLarge',
    'GroupActive',
    'HandshakeFrameTooLarge',
    'InternalError',
    'MessageRejected',
    'NoOffset',
    'NoRoute',
    'NotRetried',
    'OAuth2Error',
    'OffsetCommitTimeout',
    'OffsetOutOfRange',
    'PreconditionFailed',
    'ProcessingStuck',
    'ProtocolError',
    'PublisherDoesNotExist',
    'PublisherError',
    'RecoveryStalled',
    'RequestTimeout',
    'ResponseError',
    'SaslAuthenticationFailureLoopback',
    'SaslCannotChangeMechanism',
    'SaslCannotChangeUsername',
    'SaslChallenge',
    'SaslError',
    'SaslMechanismNotSupported',
    'StreamAlreadyExists',
    'StreamDoesNotExist',
    'StreamEndUnknown',
    'StreamNotAvailable',
    'StreamsError',
    'SubscriptionError',
    'SubscriptionIdAlreadyExists',
    'SubscriptionIdDoesNotExist',
    'UnknownFrame',
    'VirtualHostAccessFailure',
    'error_for_code',
]
