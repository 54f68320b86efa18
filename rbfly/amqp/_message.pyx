# cython: language_level=3
"""
AMQP 1.0 messages as the client hands them over: the message context
(:py:class:`MessageCtx`, with its header and properties sections), and the
context of the message being processed in a task.

The sections are encoded and decoded by :py:mod:`rbfly.amqp._sections`.
"""

import contextvars

from cpython.contextvars cimport PyContextVar_Set
from libc.stdint cimport uint64_t

cimport cython

from ..error import NoMessageContext
from ..types import Symbol

cdef class AMQPHeader:
    """
    AMQP message header section: delivery details for the broker.

    :ivar durable: Whether the message is durable.
    :ivar priority: Relative priority (0-255; AMQP default is 4).
    :ivar ttl: Time to live in milliseconds, or ``None``.
    :ivar first_acquirer: Whether the message was not acquired before.
    :ivar delivery_count: Number of earlier unsuccessful delivery attempts.
    """
    def __init__(
            self,
            durable: bool = False,
            priority: int = 4,
            ttl: int | None = None,
            first_acquirer: bool = False,
            delivery_count: int = 0,
    ) -> None:
        self.durable = durable
        self.priority = priority
        self.ttl = ttl
        self.first_acquirer = first_acquirer
        self.delivery_count = delivery_count

    cdef bint is_default(self):
        return not self.durable and self.priority == 4 and self.ttl is None \
            and not self.first_acquirer and self.delivery_count == 0

    cdef tuple key(self):
        return (self.durable, self.priority, self.ttl, self.first_acquirer,
                self.delivery_count)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AMQPHeader):
            return NotImplemented
        return self.key() == (<AMQPHeader> other).key()

    def __repr__(self) -> str:
        return 'AMQPHeader(durable={}, priority={}, ttl={}, first_acquirer={},' \
            ' delivery_count={})'.format(*self.key())

cdef class AMQPProperties:
    """
    AMQP message properties section: the immutable properties of the
    bare message. Every field is optional (``None``).
    """
    def __init__(
            self,
            message_id: object = None,
            user_id: bytes | None = None,
            to: str | None = None,
            subject: str | None = None,
            reply_to: str | None = None,
            correlation_id: object = None,
            content_type: Symbol | None = None,
            content_encoding: Symbol | None = None,
            absolute_expiry_time: object = None,
            creation_time: object = None,
            group_id: str | None = None,
            group_sequence: int | None = None,
            reply_to_group_id: str | None = None,
    ) -> None:
        self.message_id = message_id
        self.user_id = user_id
        self.to = to
        self.subject = subject
        self.reply_to = reply_to
        self.correlation_id = correlation_id
        self.content_type = content_type
        self.content_encoding = content_encoding
        self.absolute_expiry_time = absolute_expiry_time
        self.creation_time = creation_time
        self.group_id = group_id
        self.group_sequence = group_sequence
        self.reply_to_group_id = reply_to_group_id

    cdef list fields(self):
        return [
            self.message_id, self.user_id, self.to, self.subject, self.reply_to,
            self.correlation_id, self.content_type, self.content_encoding,
            self.absolute_expiry_time, self.creation_time, self.group_id,
            self.group_sequence, self.reply_to_group_id,
        ]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AMQPProperties):
            return NotImplemented
        return self.fields() == (<AMQPProperties> other).fields()

    def __repr__(self) -> str:
        names = (
            'message_id', 'user_id', 'to', 'subject', 'reply_to', 'correlation_id',
            'content_type', 'content_encoding', 'absolute_expiry_time',
            'creation_time', 'group_id', 'group_sequence', 'reply_to_group_id',
        )
        return 'AMQPProperties({})'.format(', '.join(
            '{}={!r}'.format(n, v) for n, v in zip(names, self.fields()) if v is not None
        ))

cdef inline object empty_none(object d):
    return None if not d else d

@cython.freelist(64)
cdef class MessageCtx:
    """
    An AMQP 1.0 message: its body, all its sections, and (for a received
    message) where it was in its RabbitMQ stream.

    Sections not given are created empty on first access, so reading
    ``msg.app_properties`` of a message without them returns ``{}``.

    :ivar body: Application data (see :py:mod:`rbfly.amqp.types` for how it
        maps to data, amqp-sequence or amqp-value sections).
    :ivar stream_offset: Offset of the message in its stream.
    :ivar stream_timestamp: Timestamp of the message's chunk, in seconds
        since the Unix epoch.
    :ivar stream_publish_id: Publishing id used when the message was sent.
    :ivar stream: Name of the stream the message was read from (a
        partition, when reading a super stream); ``None`` otherwise.
    """
    def __init__(
            self,
            object body,
            object header=None,
            object delivery_annotations=None,
            object annotations=None,
            object properties=None,
            object app_properties=None,
            object footer=None,
            *,
            uint64_t stream_offset=0,
            double stream_timestamp=0,
            uint64_t stream_publish_id=0,
            object stream=None,
    ) -> None:
        self._body = body
        self._header = header
        self._delivery_annotations = delivery_annotations
        self._annotations = annotations
        self._properties = properties
        self._app_properties = app_properties
        self._footer = footer
        self.stream_offset = stream_offset
        self.stream_timestamp = stream_timestamp
        self.stream_publish_id = stream_publish_id
        self._stream = stream
        track(self)  # __init__ called again on a received message

    @property
    def body(self) -> object:
        return self._body

    @body.setter
    def body(self, value: object) -> None:
        self._body = value
        track(self)

    @body.deleter
    def body(self) -> None:
        self._body = None

    @property
    def stream(self) -> object:
        return self._stream

    @stream.setter
    def stream(self, value: object) -> None:
        self._stream = value
        track(self)

    @stream.deleter
    def stream(self) -> None:
        self._stream = None

    @property
    def header(self) -> AMQPHeader:
        if self._header is None:
            self._header = AMQPHeader()
        track(self)
        return self._header

    @header.setter
    def header(self, value: AMQPHeader | None) -> None:
        self._header = value
        track(self)

    @property
    def properties(self) -> AMQPProperties:
        if self._properties is None:
            self._properties = AMQPProperties()
        track(self)
        return self._properties

    @properties.setter
    def properties(self, value: AMQPProperties | None) -> None:
        self._properties = value
        track(self)

    @property
    def delivery_annotations(self) -> dict:
        if self._delivery_annotations is None:
            self._delivery_annotations = {}
        track(self)
        return self._delivery_annotations

    @delivery_annotations.setter
    def delivery_annotations(self, value: dict | None) -> None:
        self._delivery_annotations = value
        track(self)

    @property
    def annotations(self) -> dict:
        if self._annotations is None:
            self._annotations = {}
        track(self)
        return self._annotations

    @annotations.setter
    def annotations(self, value: dict | None) -> None:
        self._annotations = value
        track(self)

    @property
    def app_properties(self) -> dict:
        if self._app_properties is None:
            self._app_properties = {}
        track(self)
        return self._app_properties

    @app_properties.setter
    def app_properties(self, value: dict | None) -> None:
        self._app_properties = value
        track(self)

    @property
    def footer(self) -> dict:
        if self._footer is None:
            self._footer = {}
        track(self)
        return self._footer

    @footer.setter
    def footer(self, value: dict | None) -> None:
        self._footer = value
        track(self)

    cdef tuple key(self):
        header = self._header
        if header is not None and (<AMQPHeader> header).is_default():
            header = None
        props = self._properties
        if props is not None and not any((<AMQPProperties> props).fields()):
            props = None
        return (
            self._body, header, empty_none(self._delivery_annotations),
            empty_none(self._annotations), props, empty_none(self._app_properties),
            empty_none(self._footer), self.stream_offset, self.stream_timestamp,
            self.stream_publish_id, self._stream,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MessageCtx):
            return NotImplemented
        return self.key() == (<MessageCtx> other).key()

    __hash__ = None

    def __repr__(self) -> str:
        body = self._body
        if isinstance(body, (str, bytes)) and len(body) > 10:
            text = repr(body[:10])
            text = text[:len(text) - 1] + '...' + text[len(text) - 1]
        else:
            text = repr(body)
        return 'MessageCtx(body={}, stream_offset={}, stream_timestamp={},' \
            ' stream_publish_id={}, annotations={}, app_properties={})'.format(
                text, self.stream_offset, self.stream_timestamp,
                self.stream_publish_id, self.annotations, self.app_properties,
            )

#
# message context
#

cdef object CTX = contextvars.ContextVar('rbfly.amqp.message_ctx')

def set_message_ctx(msg: MessageCtx) -> None:
    """
    Set the context of the message being processed (used by subscribers,
    so that an application can call :py:func:`get_message_ctx`).
    """
    CTX.set(msg)

cdef int set_ctx(MessageCtx msg) except -1:
    """
    :py:func:`set_message_ctx` for Cython modules, without the Python call.
    """
    PyContextVar_Set(CTX, msg)
    return 0

def get_message_ctx() -> MessageCtx:
    """
    Get the context of the message being processed in the current asyncio
    task.

    :raises rbfly.error.NoMessageContext: When no message is being
        processed (a :py:class:`LookupError`, as raised before).
    """
    msg = CTX.get(None)
    if msg is None:
        raise NoMessageContext(
            'no message is being processed: get_message_ctx() works only inside the'
            ' iteration of a subscription (async for body in client.subscribe(...)), in'
            ' its task or in a task created meanwhile'
        )
    return msg

def msg_ctx(
        body: object,
        *,
        annotations: dict | None = None,
        app_properties: dict | None = None,
        stream_offset: int = 0,
        stream_timestamp: float = 0,
        stream_publish_id: int | None = None,
) -> MessageCtx:
    """
    Create a message context (a shortcut kept from RbFly 0.10).
    """
    return MessageCtx(
        body,
        annotations=annotations,
        app_properties=app_properties,
        stream_offset=stream_offset,
        stream_timestamp=stream_timestamp,
        stream_publish_id=0 if stream_publish_id is None else stream_publish_id,
    )
