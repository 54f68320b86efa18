"""
A record that is not AMQP 1.0 in a chunk decoded as AMQP: the error names
the stream, the record's offset and the way out; ``on_decode_error``
skips the record or hands out its bytes, and offsets go on past it.
"""

import logging

import pytest

from rbfly.error import AMQPDecodeError, ChunkError, MessageDecodeError
from rbfly.streams.protocol._chunk import decode_chunk

from .test_chunk import AMQP, chunk, entry, sub_batch

BAD = b'\xff\x00not amqp'

def mixed(first: int = 201_000) -> bytes:
    """Records: AMQP, raw, AMQP in a sub-batch with a raw one, AMQP."""
    return chunk([entry(AMQP[0]), entry(BAD), sub_batch([AMQP[1], BAD]), entry(AMQP[2])], 5,
                 first=first)

def test_error_names_stream_offset_and_fix() -> None:
    """The error names the stream, the stream offset, the byte and the fix."""
    with pytest.raises(MessageDecodeError) as info:
        decode_chunk(mixed(), stream='orders', on_decode_error='raise')
    error = info.value
    assert isinstance(error, AMQPDecodeError)  # what was raised before
    assert (error.stream, error.stream_offset, error.offset) == ('orders', 201_001, 0)
    text = str(error)
    assert 'offset 201001' in text and "'orders'" in text and 'at byte 0' in text
    assert 'amqp=False' in text and '--binary' in text and "on_decode_error='skip'" in text
    assert '--on-decode-error skip' in text  # rbfly tail's flag

def test_error_after_start_offset() -> None:
    """A record before the start offset is not decoded; the next bad one is named."""
    with pytest.raises(MessageDecodeError) as info:
        decode_chunk(mixed(), start_offset=201_002, stream='orders',
                     on_decode_error='raise')
    assert info.value.stream_offset == 201_003

def test_skip(caplog: pytest.LogCaptureFixture) -> None:
    """Skipped records count as offsets; the others come in order."""
    with caplog.at_level(logging.WARNING, 'rbfly.streams.subscriber'):
        info, messages = decode_chunk(mixed(), stream='orders', on_decode_error='skip')
    assert [(m.stream_offset, m.body) for m in messages] == [
        (201_000, 'm0'), (201_002, 'm1'), (201_004, 'm2'),
    ]
    assert info.next_offset == 201_005
    assert all(m.stream == 'orders' for m in messages)
    [record] = caplog.records
    assert "stream 'orders': 2 message(s)" in record.getMessage()
    assert 'first at offset 201001' in record.getMessage()
    assert record.getMessage().endswith('skipped')

def test_raw() -> None:
    """Records that fail are handed out as their bytes."""
    _, messages = decode_chunk(mixed(), stream='orders', on_decode_error='raw')
    assert [(m.stream_offset, m.body) for m in messages] == [
        (201_000, 'm0'), (201_001, BAD), (201_002, 'm1'), (201_003, BAD), (201_004, 'm2'),
    ]

def test_skip_keeps_start_offset() -> None:
    """Decoding again for the skip still drops records before the start offset."""
    _, messages = decode_chunk(mixed(), start_offset=201_003, on_decode_error='skip')
    assert [m.stream_offset for m in messages] == [201_004]

def test_skip_all() -> None:
    """A chunk of raw records only: none handed out, offsets known."""
    info, messages = decode_chunk(chunk([entry(BAD)] * 3, 3, first=7), on_decode_error='skip')
    assert messages == [] and info.next_offset == 10

def test_malformed_chunk_still_raises() -> None:
    """Skipping applies to records, not to a chunk malformed after one."""
    data = chunk([entry(BAD), entry(AMQP[0])], 3)
    with pytest.raises(ChunkError, match='declares 3 records'):
        decode_chunk(data, on_decode_error='skip')

def test_bad_option() -> None:
    """An unknown option is a ValueError naming the choices."""
    with pytest.raises(ValueError, match="one of raise, skip, raw, got 'ignore'"):
        decode_chunk(chunk([entry(BAD)], 1), on_decode_error='ignore')

def test_fast_path_raises_bare_error() -> None:
    """Without an action, the fast path raises the decoder's error (the caller decodes again)."""
    with pytest.raises(AMQPDecodeError) as info:
        decode_chunk(mixed(), stream='orders')
    assert type(info.value) is AMQPDecodeError

def test_raw_mode_ignores_option() -> None:
    """Without AMQP, nothing fails to decode."""
    _, messages = decode_chunk(chunk([entry(BAD)], 1), amqp=False, on_decode_error='skip')
    assert [m.body for m in messages] == [BAD]
