"""
Tests of the validation of values by the encoder.

Every value outside of its wire type must raise `ProtocolEncodeError`
naming the field, at the boundary: the maximum passes, one more fails.
"""

from typing import Any

import pytest

from rbfly.error import ProtocolError, RbFlyError
from rbfly.streams.protocol import (
    Close,
    ConsumerUpdateResponse,
    Create,
    Credit,
    DeclarePublisher,
    Delete,
    Deliver,
    Heartbeat,
    OffsetSpec,
    OffsetSpecType,
    PeerProperties,
    ProtocolEncodeError,
    Publish,
    PublishConfirm,
    PublishV2,
    QueryOffset,
    SaslAuthenticate,
    StoreOffset,
    Subscribe,
    SubscribeResponse,
    Tune,
    decode,
    encode,
)
from rbfly.streams.protocol.commands import Command

# (command builder taking the value, correlation id, valid values, invalid values)
INT_FIELDS: list[tuple[str, Any, int | None, list[int], list[Any]]] = [
    ('uint8', lambda v: Credit(v, 1), None, [0, 255], [-1, 256]),
    ('uint16', lambda v: Credit(1, v), None, [0, 2**16 - 1], [-1, 2**16]),
    ('uint32', lambda v: Tune(v, 0), None, [0, 2**32 - 1], [-1, 2**32]),
    ('uint64', lambda v: StoreOffset('r', 's', v), None, [0, 2**64 - 1], [-1, 2**64]),
    ('int64', lambda v: Subscribe(0, 's', OffsetSpec.timestamp(v), 1, {}), 1,
     [-(2**63), -1, 0, 2**63 - 1], [-(2**63) - 1, 2**63]),
    ('response uint32', lambda v: SubscribeResponse(v, 1), None, [0, 2**32 - 1], [-1, 2**32]),
    ('not an int', lambda v: Credit(1, v), None, [], ['1', 1.0, None]),
]


@pytest.mark.parametrize(
    ('label', 'build', 'corr', 'valid', 'invalid'), INT_FIELDS, ids=[f[0] for f in INT_FIELDS]
)
def test_int_boundaries(
    label: str, build: Any, corr: int | None, valid: list[int], invalid: list[Any]
) -> None:
    """Test integers at and just past the limits of their wire types."""
    for value in valid:
        assert decode(encode(build(value), corr)[4:]) == build(value)
    for value in invalid:
        with pytest.raises(ProtocolEncodeError, match='must be an integer in range'):
            encode(build(value), corr)


def test_correlation_id_boundaries() -> None:
    """Test correlation ids at the limits of `uint32`."""
    encode(Delete('s'), 0)
    encode(Delete('s'), 2**32 - 1)
    for value in (-1, 2**32):
        with pytest.raises(ProtocolEncodeError, match='correlation id'):
            encode(Delete('s'), value)


def test_string_byte_limit() -> None:
    """Test the 32767 byte limit of a string, counted in UTF-8 bytes."""
    encode(Delete('a' * 32767), 1)
    with pytest.raises(ProtocolEncodeError, match=r'Delete\.stream must be at most 32767'):
        encode(Delete('a' * 32768), 1)
    # 16384 characters, but 32768 bytes
    with pytest.raises(ProtocolEncodeError, match='got 32768'):
        encode(Delete('é' * 16384), 1)
    encode(Delete('é' * 16383 + 'a'), 1)


def test_string_surrogate() -> None:
    """Test that a string UTF-8 cannot encode is rejected."""
    with pytest.raises(ProtocolEncodeError, match='UTF-8'):
        encode(Delete('\ud800'), 1)


def test_string_type() -> None:
    """Test that a non-string value of a string field is rejected."""
    with pytest.raises(ProtocolEncodeError, match=r'Delete\.stream must be a string'):
        encode(Delete(b'stream'), 1)  # type: ignore[arg-type]


def test_reference_length() -> None:
    """Test the 256 character limit of publisher and offset references."""
    encode(DeclarePublisher(0, 'é' * 256, 's'), 1)
    encode(QueryOffset('r' * 256, 's'), 1)
    for command in (
        DeclarePublisher(0, 'r' * 257, 's'),
        QueryOffset('r' * 257, 's'),
        StoreOffset('r' * 257, 's', 0),
    ):
        with pytest.raises(ProtocolEncodeError, match='at most 256 characters'):
            encode(command, 1 if not isinstance(command, StoreOffset) else None)


def test_map_values() -> None:
    """Test that a properties map must hold strings."""
    with pytest.raises(ProtocolEncodeError, match=r'PeerProperties\.properties value'):
        encode(PeerProperties({'k': 1}), 1)  # type: ignore[dict-item]
    with pytest.raises(ProtocolEncodeError, match='must be a mapping'):
        encode(Create('s', [('k', 'v')]), 1)  # type: ignore[arg-type]


def test_bytes_type() -> None:
    """Test that binary fields accept bytes, bytearray and memoryview only."""
    for data in (b'ab', bytearray(b'ab'), memoryview(b'xaby')[1:3]):
        assert encode(Deliver(0, data)) == encode(Deliver(0, b'ab'))
        assert encode(Publish(0, ((1, data),))) == encode(Publish(0, ((1, b'ab'),)))
    with pytest.raises(ProtocolEncodeError, match='must be bytes'):
        encode(Deliver(0, 'ab'))  # type: ignore[arg-type]
    with pytest.raises(ProtocolEncodeError, match='contiguous'):
        encode(Deliver(0, memoryview(b'abcd')[::2]))


def test_memoryview_of_ints() -> None:
    """Test that a memoryview of another format is measured in bytes."""
    view = memoryview(bytearray(8)).cast('I')
    frame = encode(SaslAuthenticate('PLAIN', view), 1)
    assert frame[-12:-8] == b'\x00\x00\x00\x08'


def test_publish_shape() -> None:
    """Test a publish message of the wrong shape."""
    with pytest.raises(ProtocolEncodeError, match='cannot encode Publish'):
        encode(Publish(0, [b'message']))  # type: ignore[list-item]
    with pytest.raises(ProtocolEncodeError, match='cannot encode PublishV2'):
        encode(PublishV2(0, [(1, b'message')]))  # type: ignore[list-item]
    with pytest.raises(ProtocolEncodeError, match='PublishV2 filter value'):
        encode(PublishV2(0, [(1, b'f', b'message')]))  # type: ignore[list-item]
    with pytest.raises(ProtocolEncodeError, match='cannot encode PublishConfirm'):
        encode(PublishConfirm(0, None))  # type: ignore[arg-type]


@pytest.mark.parametrize('spec', [
    OffsetSpec(OffsetSpecType.OFFSET),
    OffsetSpec(OffsetSpecType.TIMESTAMP),
    OffsetSpec(OffsetSpecType.FIRST, 1),
    OffsetSpec(OffsetSpecType.NONE),
    OffsetSpec(6),  # type: ignore[arg-type]
    OffsetSpec(OffsetSpecType.OFFSET, -1),
])
def test_invalid_subscribe_offset_spec(spec: OffsetSpec) -> None:
    """Test offset specifications `Subscribe` cannot send."""
    with pytest.raises(ProtocolEncodeError, match=r'Subscribe\.offset_spec'):
        encode(Subscribe(0, 's', spec, 1, {}), 1)


def test_consumer_update_offset_spec_none() -> None:
    """Test that only a consumer update response takes offset type none."""
    frame = encode(ConsumerUpdateResponse(1, 1, OffsetSpec.none()))
    assert frame[-2:] == b'\x00\x00'
    with pytest.raises(ProtocolEncodeError, match='takes no value'):
        encode(ConsumerUpdateResponse(1, 1, OffsetSpec(OffsetSpecType.NONE, 0)))


def test_correlation_id_required() -> None:
    """Test that a request needs a correlation id."""
    with pytest.raises(ProtocolEncodeError, match='Subscribe needs a correlation id'):
        encode(Subscribe(0, 's', OffsetSpec.first(), 1, {}))


@pytest.mark.parametrize('command', [Heartbeat(), Tune(0, 0), SubscribeResponse(1, 1)])
def test_correlation_id_refused(command: Command) -> None:
    """Test that a command without a correlation id argument refuses one."""
    with pytest.raises(ProtocolEncodeError, match='takes no correlation id'):
        encode(command, 1)


def test_not_a_command() -> None:
    """Test encoding an object that is not a command."""
    with pytest.raises(ProtocolEncodeError, match='not a RabbitMQ Streams command'):
        encode(object())  # type: ignore[arg-type]


def test_error_hierarchy() -> None:
    """Test that the encoding error is a protocol error and a value error."""
    assert issubclass(ProtocolEncodeError, ProtocolError)
    assert issubclass(ProtocolEncodeError, RbFlyError)
    assert issubclass(ProtocolEncodeError, ValueError)


def test_sasl_data_hidden_from_repr() -> None:
    """Test that SASL data, which holds a password, is not shown by repr."""
    command = SaslAuthenticate('PLAIN', b'\x00user\x00secret')
    assert 'secret' not in repr(command)
    assert 'PLAIN' in repr(command)
    assert 'null' in repr(SaslAuthenticate('PLAIN', None))


def test_close_reason_non_ascii_roundtrip() -> None:
    """Test a non-ASCII close reason."""
    command = Close(1, 'déjà vu ✓')
    assert decode(encode(command, 3)[4:]) == command
