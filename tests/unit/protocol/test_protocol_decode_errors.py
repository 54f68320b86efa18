"""
Tests of malformed frames: the decoder raises `FrameDecodeError`, naming
what it expected and where, and nothing else (no `IndexError`,
`struct.error`, `UnicodeDecodeError`...), whatever the input.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rbfly.error import FrameDecodeError, ProtocolError
from rbfly.streams.protocol import Delete, decode, decode_frame
from rbfly.streams.protocol.codec import _DECODERS

from .test_protocol_golden import GOLDEN, h

FRAMES = [frame[4:] for _, _, frame in GOLDEN]


def _decode_or_error(frame: bytes | bytearray | memoryview) -> None:
    """Decode, allowing only `FrameDecodeError` with an offset in the frame."""
    try:
        decode_frame(frame)
    except FrameDecodeError as ex:
        assert 0 <= ex.offset <= len(frame)
        assert f'(at offset {ex.offset})' in str(ex)


@pytest.mark.parametrize(('frame', 'message', 'offset'), [
    (b'', r'expected key \(2 bytes\), got 0 bytes', 0),
    (h('00'), r'expected key \(2 bytes\), got 1 bytes', 0),
    (h('0017'), 'expected version', 2),
    (h('0020 0001'), 'unknown command key 0x0020', 0),
    (h('ffff 0001'), 'unknown command key 0xffff', 0),
    (h('8002 0001'), r'unknown command key 0x8002 \(PUBLISH has no response\)', 0),
    (h('0008 0003 01'), r'unsupported version 3 of Deliver \(key 0x0008\)', 0),
    (h('0002 0000 01'), 'unsupported version 0 of Publish', 0),
    (h('0016 0002 00000001 0001 0000'), 'unsupported version 2 of Close', 0),
    (h('0017 0001 00'), 'unexpected 1 bytes after Heartbeat', 4),
    (h('8007 0001 00000007'), r'expected SubscribeResponse\.code', 8),
    (h('000e 0001 00000007 0003 6162'), r'expected Delete\.stream \(3 bytes\), got 2', 10),
    (h('000e 0001 00000007 ffff'), r'expected Delete\.stream, got null string', 8),
    (h('000e 0001 00000007 fffe'), r'invalid length -2 of Delete\.stream', 8),
    (h('000e 0001 00000007 0002 c328'), r'invalid UTF-8 in Delete\.stream', 10),
    (h('000e 0001 00000007 0002 61ff'), r'invalid UTF-8 in Delete\.stream', 11),
    (h('000e 0001 00000007 0001 ff'), 'invalid UTF-8', 10),
    (h('000f 0001 00000007 ffffffff'), r'invalid count -1 of Metadata\.streams', 8),
    (h('000f 0001 00000007 7fffffff 0000'), r'invalid count 2147483647', 8),
    (h('0003 0001 01 00000002 0000000000000001'), 'invalid count 2 of PublishConfirm', 5),
    (h('0002 0001 01 00000001 0000000000000001 fffffffe'), 'invalid length -2', 17),
    (h('0007 0001 00000007 01 0001 73 0006 0001'), r'invalid Subscribe\.offset_spec type', 12),
    (h('0007 0001 00000007 01 0001 73 0000 0001'), r'invalid Subscribe\.offset_spec type', 12),
    (h('801a 0001 00000007 0001 0009'), r'invalid ConsumerUpdateResponse\.offset_spec type', 10),
    (h('8015 0001 00000007 0001 00000001 0001 6b'), r'invalid count 1 of OpenResponse', 10),
    (h('8015 0001 00000007 0001 00000001 0001 6b 0001'), r'OpenResponse\.properties value', 19),
    (h('8013 0001 00000007 000a 00000009 61'), r'SaslAuthenticateResponse\.data', 14),
])
def test_malformed(frame: bytes, message: str, offset: int) -> None:
    """Test the message and offset of decoding errors."""
    with pytest.raises(FrameDecodeError, match=message) as info:
        decode(frame)
    assert info.value.offset == offset
    assert isinstance(info.value, ProtocolError)


def test_error_names_offset() -> None:
    """Test that the error message gives the offset."""
    with pytest.raises(FrameDecodeError, match=r'\(at offset 10\)'):
        decode(h('000e 0001 00000007 0003 6162'))


def test_ok_response_needs_payload() -> None:
    """Test that an OK response may not omit its fields."""
    with pytest.raises(FrameDecodeError, match=r'QueryOffsetResponse\.offset'):
        decode(h('800b 0001 00000007 0001'))


@pytest.mark.parametrize('frame', FRAMES, ids=[type(c).__name__ for c, _, _ in GOLDEN])
def test_truncated(frame: bytes) -> None:
    """Test every truncation of every golden frame."""
    errors = 0
    for size in range(len(frame)):
        try:
            decode_frame(frame[:size])
        except FrameDecodeError as ex:
            assert 0 <= ex.offset <= size
            errors += 1
    if frame[:2] == b'\x00\x08':
        return  # the chunk of Deliver takes the rest of the frame, of any size
    # all but the tolerated forms documented in the codec modules: a
    # `Subscribe` frame without its properties array, a SASL response
    # without data or with an empty int16-length challenge...
    assert errors >= len(frame) - 2


@pytest.mark.parametrize('frame', FRAMES, ids=[type(c).__name__ for c, _, _ in GOLDEN])
def test_trailing_bytes(frame: bytes) -> None:
    """Test that a byte after the last field is an error (except Deliver)."""
    decoded = decode(frame)
    if type(decoded).__name__ in ('Deliver', 'DeliverV2'):
        return  # the chunk takes the rest of the frame
    with pytest.raises(FrameDecodeError, match='unexpected 1 bytes after'):
        decode(frame + b'\x00')


@settings(max_examples=3000)
@given(st.binary(max_size=64))
def test_fuzz_random(frame: bytes) -> None:
    """Test decoding random bytes."""
    _decode_or_error(frame)


@settings(max_examples=3000)
@given(st.sampled_from(sorted(_DECODERS)), st.binary(max_size=64))
def test_fuzz_valid_header(key_version: tuple[int, int], body: bytes) -> None:
    """Test random bodies after every valid key and version."""
    key, version = key_version
    _decode_or_error(key.to_bytes(2, 'big') + version.to_bytes(2, 'big') + body)


@settings(max_examples=3000)
@given(st.sampled_from(FRAMES), st.data())
def test_fuzz_mutated(frame: bytes, data: st.DataObject) -> None:
    """Test golden frames with bytes changed, removed or inserted."""
    buffer = bytearray(frame)
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(buffer)))
        action = data.draw(st.sampled_from(['set', 'delete', 'insert']))
        value = data.draw(st.integers(0, 255))
        if action == 'insert' or pos == len(buffer):
            buffer.insert(pos, value)
        elif action == 'set':
            buffer[pos] = value
        else:
            del buffer[pos]
    _decode_or_error(memoryview(buffer))


@given(st.binary(max_size=40))
def test_fuzz_strings(payload: bytes) -> None:
    """Test random bytes, invalid UTF-8 included, as a string field."""
    frame = h('000e 0001 00000007') + len(payload).to_bytes(2, 'big') + payload
    try:
        stream = payload.decode('utf-8')
    except UnicodeDecodeError:
        with pytest.raises(FrameDecodeError, match='invalid UTF-8'):
            decode(frame)
    else:
        assert decode(frame) == Delete(stream)


def test_buffer_shapes() -> None:
    """Test frames given as views of other formats and strides."""
    frame = h('000e 0001 00000007 0002 7331')
    assert decode(bytearray(frame)) == Delete('s1')
    assert decode(memoryview(frame).cast('H')) == Delete('s1')
    doubled = bytes(b for byte in frame for b in (byte, 0))
    assert decode(memoryview(doubled)[::2]) == Delete('s1')
