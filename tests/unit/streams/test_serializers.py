"""
Serializers (sans-IO): a codec's messages carry the body serialized and
the content type; decoding checks it (a typed error naming the stream and
offset, or the raw body); a publisher given a codec is of its class's
serializing subclass, and one given none keeps its class's methods.
"""

import importlib.util
import typing as tp

import pytest

from rbfly.amqp import AMQPProperties, MessageCtx, decode_amqp, encode_message
from rbfly.streams.publishers.awaited import (
    Publisher,
    PublisherBatchFast,
    PublisherBatchLimit,
    PublisherBin,
)
from rbfly.streams.publishers.options import PublisherOptions
from rbfly.streams.publishers.serializing import serializing_class
from rbfly.streams.serializers import (
    Codec,
    ContentTypeMismatch,
    JSONSerializer,
    MsgpackSerializer,
    MsgspecSerializer,
    PydanticSerializer,
    SerializerError,
    as_codec,
)
from rbfly.types import Symbol

def received(msg: MessageCtx, offset: int = 7) -> MessageCtx:
    """The message as a subscription gets it: encoded and decoded."""
    out = decode_amqp(encode_message(msg))
    out.stream_offset = offset
    return out

@pytest.mark.parametrize('obj', [
    {'a': 1, 'b': [1.5, None, True]}, [], 'zażółć', 0, -2**63, {'nested': {'x': 'y'}},
])
def test_json_round_trip(obj: object) -> None:
    """An object comes back equal, its message with the JSON content type and a bytes body."""
    codec = Codec(JSONSerializer())
    msg = codec.message(obj)
    assert isinstance(msg.body, bytes)
    assert msg.properties.content_type is Symbol('application/json')
    assert codec.decode(received(msg), 's') == obj

def test_msgpack_round_trip() -> None:
    pytest.importorskip('msgpack')
    codec = Codec(MsgpackSerializer())
    msg = codec.message({'a': b'\x00\xff'})
    assert msg.properties.content_type is Symbol('application/msgpack')
    assert codec.decode(received(msg)) == {'a': b'\x00\xff'}

def test_msgspec_typed() -> None:
    msgspec = pytest.importorskip('msgspec')

    class Order(msgspec.Struct):  # type: ignore[name-defined,misc]
        id: int

    codec = Codec(MsgspecSerializer(Order))
    assert codec.decode(received(codec.message(Order(3)))) == Order(3)
    with pytest.raises(SerializerError, match='offset 7'):
        codec.decode(received(MessageCtx(b'{"id": "x"}', properties=AMQPProperties(
            content_type=Symbol('application/json')))))

def test_pydantic_typed() -> None:
    pydantic = pytest.importorskip('pydantic')

    class Order(pydantic.BaseModel):  # type: ignore[name-defined,misc]
        id: int

    codec = Codec(PydanticSerializer(Order))
    assert codec.decode(received(codec.message(Order(id=3)))) == Order(id=3)

def test_optional_packages_missing() -> None:
    """Without the package, making its serializer raises ImportError (nothing at import)."""
    if importlib.util.find_spec('msgspec') is None:
        with pytest.raises(ImportError):
            MsgspecSerializer(int)
    with pytest.raises(ValueError, match='format'):
        MsgspecSerializer(int, format='xml')  # type: ignore[arg-type]

def test_message_ctx_keeps_sections() -> None:
    """A MessageCtx keeps its sections; its body is serialized."""
    codec = Codec(JSONSerializer())
    msg = codec.message(MessageCtx({'x': 1}, app_properties={'k': 'v'},
                                   properties=AMQPProperties(subject='s')))
    assert msg.body == b'{"x":1}'
    assert msg.app_properties == {'k': 'v'}
    assert msg.properties.subject == 's'
    assert msg.properties.content_type is Symbol('application/json')

def test_message_ctx_left_as_given() -> None:
    """
    The application's MessageCtx is not changed: sent again (or to a
    second partition), its body is serialized once, as the first time.
    """
    serializers: list[tp.Any] = [JSONSerializer()]
    if importlib.util.find_spec('msgpack') is not None:
        serializers.append(MsgpackSerializer())
    for serializer in serializers:
        codec = Codec(serializer)
        given = MessageCtx({'x': 1}, app_properties={'k': 'v'},
                           properties=AMQPProperties(subject='s'), stream_publish_id=5)
        first = codec.message(given)
        second = codec.message(given)
        assert given.body == {'x': 1}
        assert given.properties == AMQPProperties(subject='s')
        assert first is not given and first == second
        assert serializer.loads(tp.cast(bytes, second.body)) == {'x': 1}
        assert second.properties == AMQPProperties(subject='s',
                                                   content_type=Symbol(codec.content_type))
        assert (second.app_properties, second.stream_publish_id) == ({'k': 'v'}, 5)

def test_mismatch() -> None:
    """Another content type, or none: a typed error naming the stream and offset."""
    codec = Codec(JSONSerializer())
    other = MessageCtx(b'\x81', properties=AMQPProperties(content_type=Symbol('x/y')))
    with pytest.raises(ContentTypeMismatch) as info:
        codec.decode(received(other, 42), 'orders')
    assert (info.value.stream, info.value.offset) == ('orders', 42)
    assert (info.value.expected, info.value.found) == ('application/json', 'x/y')
    assert 'offset 42' in str(info.value) and "'orders'" in str(info.value)
    assert str(info.value).startswith(
        "message at offset 42 of stream 'orders' has content type 'x/y', not 'application/json'")
    with pytest.raises(ContentTypeMismatch) as info:
        codec.decode(received(MessageCtx(b'{}'), 1), 'orders')
    assert info.value.found is None
    # the ways out: publish with the serializer, or take the bodies raw
    assert str(info.value) == (
        "message at offset 1 of stream 'orders' has no content type, not 'application/json':"
        " publish with the serializer (rbfly publish --json, or --serializer,"
        " --content-type), or subscribe with on_mismatch='raw' to get such a message's"
        " body as it is"
    )

def test_raw() -> None:
    """``on_mismatch='raw'`` hands over the body of another content type."""
    codec = as_codec(JSONSerializer(), 'raw')
    assert codec.decode(received(MessageCtx(b'\x81'))) == b'\x81'
    assert codec.decode(received(codec.message([1]))) == [1]

def test_string_content_type() -> None:
    """A content type another client sent as a string matches too."""
    codec = Codec(JSONSerializer())
    msg = MessageCtx(b'[1]')
    msg.properties.content_type = 'application/json'  # type: ignore[assignment]
    assert codec.decode(msg) == [1]

def test_bad_body() -> None:
    """A body the serializer cannot read: a typed error naming the offset."""
    codec = Codec(JSONSerializer())
    msg = MessageCtx(b'{', properties=AMQPProperties(content_type=Symbol('application/json')))
    with pytest.raises(SerializerError, match="offset 7 of stream 's'"):
        codec.decode(received(msg), 's')
    with pytest.raises(SerializerError, match='cannot serialize set'):
        codec.message({1})

def test_codec_checks() -> None:
    """A serializer without dumps/loads or content type, a bad on_mismatch: refused."""
    with pytest.raises(TypeError, match='dumps and loads'):
        Codec(object())  # type: ignore[arg-type]
    import json  # a module as a serializer
    with pytest.raises(TypeError, match='no content_type'):
        Codec(json)
    assert Codec(json, content_type='application/json').content_type == 'application/json'
    with pytest.raises(ValueError, match='on_mismatch'):
        Codec(JSONSerializer(), on_mismatch='skip')  # type: ignore[arg-type]
    codec = Codec(JSONSerializer())
    assert as_codec(codec) is codec

class FakeHost:
    """What a publisher asks of its client: nothing in these tests."""
    def __init__(self) -> None:
        from rbfly.streams.metrics import Counters
        self.counters = Counters()
        self.spin = 0.0

def test_publisher_serializing() -> None:
    """
    A publisher with a codec is an instance of its class's serializing
    subclass, made once per class: its entry points encode, and none is
    replaced on the instance; one without keeps the class's methods, the
    plain path the same code.
    """
    host = tp.cast(tp.Any, FakeHost())
    plain = Publisher(host, 's', 1, 'n', 0)
    assert type(plain) is Publisher
    assert type(plain).send is Publisher.send
    codec = Codec(JSONSerializer())
    options = PublisherOptions(serializer=codec)
    cls = serializing_class(PublisherBatchFast)
    assert serializing_class(PublisherBatchFast) is cls
    assert serializing_class(cls) is cls  # (a message is encoded once)
    assert cls.__name__ == 'PublisherBatchFast'
    batch = cls(host, 's', 1, 'n', 0, options=options)
    assert isinstance(batch, PublisherBatchFast)
    assert not {'send', 'batch', 'send_many'} & set(vars(batch))
    assert not hasattr(batch, 'send')  # only the class's entry points
    batch.batch({'a': 1})
    [msg] = batch._data
    assert msg.body == b'{"a":1}'
    assert msg.properties.content_type is Symbol('application/json')
    sender = serializing_class(Publisher)(host, 's', 1, 'n', 0, options=options)
    assert isinstance(sender, Publisher)
    assert not hasattr(sender, 'batch')

def test_publisher_serializer_needs_class() -> None:
    """A publisher class given a serializer, not made serializing, refuses it (not sent raw)."""
    host = tp.cast(tp.Any, FakeHost())
    with pytest.raises(TypeError, match='does not serialize'):
        PublisherBatchFast(host, 's', 1, 'n', 0, options=PublisherOptions(serializer=Codec(
            JSONSerializer())))
    with pytest.raises(TypeError, match='needs a serializer'):
        serializing_class(PublisherBatchFast)(host, 's', 1, 'n', 0)
    with pytest.raises(ValueError, match='raw bytes'):
        serializing_class(PublisherBin)

async def test_publisher_serializing_batch_limit() -> None:
    """The batch of PublisherBatchLimit, a coroutine, is awaited as the class's is."""
    host = tp.cast(tp.Any, FakeHost())
    codec = Codec(JSONSerializer())
    limit = serializing_class(PublisherBatchLimit)(
        host, 's', 1, 'n', 0, options=PublisherOptions(serializer=codec))
    await limit.batch([1], max_len=10)
    [msg] = limit._data
    assert msg.body == b'[1]'
