"""
Serializers: a publisher turns an application's objects into message
bodies, and a subscription turns the bodies back, with the body's format
named in the AMQP ``content-type`` property (see :doc:`/serializers`)::

    async with client.publisher('orders', serializer=JSONSerializer()) as publisher:
        await publisher.send({'id': 1, 'total': 9.5})
    async for order in client.subscribe('orders', serializer=JSONSerializer()):
        print(order['id'])

A serializer is any object with ``dumps(obj) -> bytes`` and
``loads(bytes) -> obj`` (and a ``content_type``, or one given to
:py:class:`Codec`): :py:class:`JSONSerializer`, :py:class:`MsgpackSerializer`
(with the ``msgpack`` package), :py:class:`MsgspecSerializer` and
:py:class:`PydanticSerializer` (typed models, with ``msgspec`` or
``pydantic``: imported only when such a serializer is made).

The client wraps a serializer in a :py:class:`Codec`, the part publishers
and subscriptions are given: it encodes a message (the body as an AMQP
data section, the content type in its properties) and checks and decodes
one. A message of another content type raises
:py:class:`ContentTypeMismatch`, naming the stream and the offset, or is
handed over as it is (its raw body) with ``on_mismatch='raw'``.
"""

from __future__ import annotations

import json
import typing as tp

from ..amqp import AMQPProperties, MessageCtx
from ..types import Symbol
from .error import StreamsError

OnMismatch: tp.TypeAlias = tp.Literal['raise', 'raw']
"""What a subscription does with a message of another content type."""

@tp.runtime_checkable
class Serializer(tp.Protocol):
    """
    What an application gives as a serializer: ``dumps`` and ``loads``
    (``json``, ``pickle`` and ``msgpack`` modules fit, given a content
    type to :py:class:`Codec`).
    """
    def dumps(self, obj: tp.Any, /) -> bytes | str:
        """The body of an object."""

    def loads(self, data: bytes, /) -> tp.Any:
        """The object of a body."""

class SerializerError(StreamsError):
    """
    A message body could not be serialized or deserialized.

    :ivar stream: The stream of the message (``None`` when publishing).
    :ivar offset: Its offset in the stream (``None`` when publishing).
    """
    def __init__(self, message: str, stream: str | None = None, offset: int | None = None):
        super().__init__(message)
        self.stream = stream
        self.offset = offset

class ContentTypeMismatch(SerializerError):
    """
    A message received has another content type than the subscription's
    serializer reads (or none).

    :ivar expected: The serializer's content type.
    :ivar found: The message's (``None``: it has none).
    """
    def __init__(self, stream: str | None, offset: int, expected: str, found: str | None):
        super().__init__(
            'message at offset {} of stream {!r} has {}, not {!r}: publish with the'
            ' serializer (rbfly publish --json, or --serializer, --content-type), or'
            " subscribe with on_mismatch='raw' to get such a message's body as it is".format(
                offset, stream,
                'no content type' if found is None else 'content type {!r}'.format(found),
                expected,
            ), stream, offset,
        )
        self.expected = expected
        self.found = found

class JSONSerializer:
    """
    JSON (``application/json``), with the standard library's :py:mod:`json`.

    :param kw: Options of :py:func:`json.dumps` (e.g. ``default=str``).
    """
    content_type = 'application/json'

    def __init__(self, **kw: tp.Any) -> None:
        self._encoder = json.JSONEncoder(ensure_ascii=False, separators=(',', ':'), **kw)

    def dumps(self, obj: object, /) -> bytes:
        return self._encoder.encode(obj).encode()

    def loads(self, data: bytes, /) -> tp.Any:
        return json.loads(data)

class MsgpackSerializer:
    """
    MessagePack (``application/msgpack``), with the ``msgpack`` package.

    :raises ImportError: When ``msgpack`` is not installed.
    """
    content_type = 'application/msgpack'

    def __init__(self) -> None:
        import importlib
        msgpack = importlib.import_module('msgpack')  # optional: imported when made
        self._packer = msgpack.Packer()
        self._unpackb = msgpack.unpackb

    def dumps(self, obj: object, /) -> bytes:
        return tp.cast(bytes, self._packer.pack(obj))

    def loads(self, data: bytes, /) -> tp.Any:
        return self._unpackb(data)

class MsgspecSerializer:
    """
    Typed messages through ``msgspec``: ``loads`` returns an instance of
    ``type`` (e.g. a ``msgspec.Struct``), validated.

    :param type: The type bodies decode to.
    :param format: ``'json'`` (``application/json``) or ``'msgpack'``
        (``application/msgpack``).
    :raises ImportError: When ``msgspec`` is not installed.
    """
    def __init__(self, type: object, format: tp.Literal['json', 'msgpack'] = 'json') -> None:
        import importlib
        if format not in ('json', 'msgpack'):
            raise ValueError("format must be 'json' or 'msgpack', got {!r}".format(format))
        module = importlib.import_module('msgspec.' + format)
        self.content_type = 'application/' + format
        self._encode = module.Encoder().encode
        self._decode = module.Decoder(type).decode

    def dumps(self, obj: object, /) -> bytes:
        return tp.cast(bytes, self._encode(obj))

    def loads(self, data: bytes, /) -> tp.Any:
        return self._decode(data)

class PydanticModel(tp.Protocol):
    """What :py:class:`PydanticSerializer` uses of a ``pydantic`` (v2) model."""
    def model_dump_json(self) -> str:
        """The model as JSON."""

    @classmethod
    def model_validate_json(cls, json_data: bytes, /) -> tp.Self:
        """A model of JSON, validated."""

class PydanticSerializer:
    """
    Typed messages through a ``pydantic`` (v2) model, as JSON
    (``application/json``): ``loads`` returns a validated instance.

    :param model: The model class.
    """
    content_type = 'application/json'

    def __init__(self, model: type[PydanticModel]) -> None:
        self._model = model

    def dumps(self, obj: PydanticModel, /) -> bytes:
        return obj.model_dump_json().encode()

    def loads(self, data: bytes, /) -> tp.Any:
        return self._model.model_validate_json(data)

class Codec:
    """
    The part publishers and subscriptions are given: a serializer, its
    content type and what to do with a message of another one.

    A publisher given a serializer encodes each message with its codec,
    then takes its class's own path (see
    :py:mod:`rbfly.streams.publishers.serializing`): a publisher without
    one runs the same code as before serializers existed.

    :param serializer: Any object with ``dumps`` and ``loads``.
    :param content_type: The content type; by default the serializer's
        ``content_type`` attribute.
    :param on_mismatch: ``'raise'``: a message of another content type
        raises :py:class:`ContentTypeMismatch`; ``'raw'``: it is handed
        over as it is (its body undecoded).
    :raises TypeError: When the serializer lacks ``dumps`` or ``loads``,
        or has no content type and none is given.
    """
    __slots__ = ('_properties', '_symbol', 'content_type', 'dumps', 'loads', 'raw')

    def __init__(
            self, serializer: Serializer, *, content_type: str | None = None,
            on_mismatch: OnMismatch = 'raise',
    ) -> None:
        if not callable(getattr(serializer, 'dumps', None)) \
                or not callable(getattr(serializer, 'loads', None)):
            raise TypeError('a serializer needs dumps and loads, got {!r}'.format(serializer))
        if content_type is None:
            content_type = getattr(serializer, 'content_type', None)
        if not isinstance(content_type, str) or not content_type:
            raise TypeError('serializer {!r} has no content_type; give one to Codec'.format(
                serializer,
            ))
        if on_mismatch not in ('raise', 'raw'):
            raise ValueError("on_mismatch must be 'raise' or 'raw', got {!r}".format(on_mismatch))
        self.content_type = content_type
        self._symbol = Symbol(content_type)
        # the properties of the messages made of bare objects: one object,
        # shared (a new one each cost 40% of a small JSON message's
        # encoding, measured with perf.serializers)
        self._properties = AMQPProperties(content_type=self._symbol)
        self.dumps = serializer.dumps
        self.loads = serializer.loads
        self.raw = on_mismatch == 'raw'

    def __repr__(self) -> str:
        return 'Codec({!r})'.format(self.content_type)

    def message(self, obj: object) -> MessageCtx:
        """
        The message of an object: its body serialized (a data section),
        with the content type. For a :py:class:`~rbfly.amqp.MessageCtx`, a
        new message with its sections, its body serialized and its
        properties with the content type: the application's message is
        left as it is, so that it can be sent again (after an
        :py:class:`~rbfly.streams.EnqueueTimeout`, or to each partition a
        super stream routes it to) without its body being serialized
        twice.

        The messages of bare objects share one properties section: change
        a message's properties by sending a
        :py:class:`~rbfly.amqp.MessageCtx` with its own.

        :raises SerializerError: When the serializer fails.
        """
        try:
            if type(obj) is MessageCtx:
                body = self.dumps(obj.body)
            else:
                body = self.dumps(obj)
        except Exception as ex:
            raise SerializerError('cannot serialize {}: {}'.format(
                type(obj).__name__, ex,
            )) from ex
        if isinstance(body, str):
            body = body.encode()
        if type(obj) is MessageCtx:
            return self._copy(obj, body)
        return MessageCtx(body, properties=self._properties)

    def _copy(self, msg: MessageCtx, body: bytes) -> MessageCtx:
        """A message with the sections of ``msg`` (shared), a new body and content type."""
        p = msg.properties
        properties = AMQPProperties(
            p.message_id, p.user_id, p.to, p.subject, p.reply_to, p.correlation_id,
            self._symbol, p.content_encoding, p.absolute_expiry_time, p.creation_time,
            p.group_id, p.group_sequence, p.reply_to_group_id,
        )
        return MessageCtx(
            body, msg.header, msg.delivery_annotations, msg.annotations, properties,
            msg.app_properties, msg.footer, stream_offset=msg.stream_offset,
            stream_timestamp=msg.stream_timestamp, stream_publish_id=msg.stream_publish_id,
            stream=msg.stream,
        )

    def decode(self, msg: MessageCtx, stream: str | None = None) -> tp.Any:
        """
        The object of a message received.

        :param stream: The stream it came from (for the error; by default
            the message's).
        :raises ContentTypeMismatch: When its content type is not the
            serializer's (unless ``on_mismatch='raw'``: then its body).
        :raises SerializerError: When the serializer fails on its body.
        """
        found = msg.properties.content_type
        if found is not self._symbol and tp.cast(object, found) != self.content_type:
            # (another client may have sent a string)
            if self.raw:
                return msg.body
            raise ContentTypeMismatch(
                msg.stream or stream, msg.stream_offset, self.content_type,
                found.name if isinstance(found, Symbol) else found,
            )
        body = msg.body
        try:
            return self.loads(body)  # type: ignore[arg-type]
        except Exception as ex:
            raise SerializerError(
                'cannot deserialize message at offset {} of stream {!r}: {}'.format(
                    msg.stream_offset, msg.stream or stream, ex,
                ), msg.stream or stream, msg.stream_offset,
            ) from ex

def as_codec(serializer: Serializer | Codec, on_mismatch: OnMismatch = 'raise') -> Codec:
    """
    The codec of a serializer given to the client (a :py:class:`Codec`
    given is taken as it is, with its own ``on_mismatch``).
    """
    if isinstance(serializer, Codec):
        return serializer
    return Codec(serializer, on_mismatch=on_mismatch)

__all__ = [
    'Codec', 'ContentTypeMismatch', 'JSONSerializer', 'MsgpackSerializer', 'MsgspecSerializer',
    'OnMismatch', 'PydanticModel', 'PydanticSerializer', 'Serializer', 'SerializerError',
    'as_codec',
]
