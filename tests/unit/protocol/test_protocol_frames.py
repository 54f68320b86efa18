"""
Tests of splitting a byte stream into frames.

As h11 and h2 test their state machines, input is fed whole, byte by byte,
in random pieces and with trailing partial data.
"""

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rbfly.error import FrameDecodeError
from rbfly.streams.protocol import (
    DEFAULT_MAX_RECEIVED_FRAME_SIZE,
    Deliver,
    FrameReader,
    Heartbeat,
    Publish,
    decode,
    encode,
)

from .test_protocol_golden import GOLDEN

FRAMES = [frame for _, _, frame in GOLDEN]
STREAM = b''.join(FRAMES)
BODIES = [frame[4:] for frame in FRAMES]


@pytest.fixture(autouse=True, params=['python', 'cython'])
def implementation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs on the pure Python reader and on the Cython one."""
    if request.param == 'cython':
        from rbfly.streams.protocol import _frames
        monkeypatch.setitem(globals(), 'FrameReader', _frames.FrameReader)

def read_all(reader: FrameReader) -> list[bytes]:
    return [bytes(frame) for frame in reader]


def test_fed_whole() -> None:
    """Test all frames fed in one chunk."""
    reader = FrameReader()
    reader.feed(STREAM)
    assert read_all(reader) == BODIES
    assert reader.buffered == 0
    assert reader.next_frame() is None


def test_fed_byte_by_byte() -> None:
    """Test frames fed one byte at a time."""
    reader = FrameReader()
    frames = []
    for i in range(len(STREAM)):
        reader.feed(STREAM[i:i + 1])
        frames.extend(read_all(reader))
    assert frames == BODIES
    assert reader.buffered == 0


def test_trailing_partial_data() -> None:
    """Test that a partial frame waits for the rest of its data."""
    reader = FrameReader()
    heartbeat = encode(Heartbeat())
    deliver = encode(Deliver(1, b'\x50' * 100))
    reader.feed(heartbeat + deliver[:2])
    assert read_all(reader) == [heartbeat[4:]]
    assert reader.buffered == 2

    reader.feed(deliver[2:50])  # size known, body incomplete
    assert reader.next_frame() is None
    assert reader.buffered == 50

    reader.feed(deliver[50:] + heartbeat[:3])
    assert read_all(reader) == [deliver[4:]]
    assert reader.buffered == 3
    reader.feed(heartbeat[3:])
    assert read_all(reader) == [heartbeat[4:]]


@given(st.lists(st.integers(0, len(STREAM)), max_size=30))
def test_fed_in_random_pieces(cuts: list[int]) -> None:
    """Test frames fed in pieces cut at random points."""
    points = [0, *sorted(cuts), len(STREAM)]
    reader = FrameReader()
    frames = []
    for start, end in itertools.pairwise(points):
        reader.feed(STREAM[start:end])
        frames.extend(read_all(reader))
    assert frames == BODIES


def test_frame_within_chunk_is_not_copied() -> None:
    """Test that a frame within one chunk is a view of that chunk."""
    data = encode(Heartbeat()) + encode(Heartbeat())
    reader = FrameReader()
    reader.feed(data)
    first = reader.next_frame()
    assert first is not None
    assert first.obj is data


def test_frame_across_chunks() -> None:
    """Test a frame split over many chunks, joined once."""
    frame = encode(Publish(1, tuple((i, b'm' * 100) for i in range(100))))
    reader = FrameReader()
    for i in range(0, len(frame), 7):
        reader.feed(frame[i:i + 7])
    result = reader.next_frame()
    assert result is not None
    assert decode(result) == decode(frame[4:])


def test_mutable_input_is_copied() -> None:
    """Test that a bytearray fed to the reader may be reused by its owner."""
    data = bytearray(encode(Deliver(1, b'abc')))
    reader = FrameReader()
    reader.feed(data)
    data[-1:] = b'X'
    reader.feed(memoryview(data)[:0])  # empty data is ignored
    frame = reader.next_frame()
    assert frame is not None
    assert bytes(frame)[-3:] == b'abc'


def test_zero_size_frame() -> None:
    """Test that a frame of size 0 is returned for the decoder to reject."""
    reader = FrameReader()
    reader.feed(b'\x00\x00\x00\x00' + encode(Heartbeat()))
    assert read_all(reader) == [b'', encode(Heartbeat())[4:]]


def test_oversize_frame() -> None:
    """Test a declared frame size larger than the maximum."""
    reader = FrameReader(max_frame_size=16)
    reader.feed(encode(Heartbeat()))
    reader.feed(b'\x00\x00\x00\x11')  # 17 bytes declared, none received
    assert reader.next_frame() is not None
    with pytest.raises(FrameDecodeError, match='frame size 17 exceeds the maximum of 16') as info:
        reader.next_frame()
    assert info.value.offset == 8  # offset of the size in the byte stream
    with pytest.raises(FrameDecodeError):  # the stream cannot recover
        reader.next_frame()


def test_oversize_frame_size_split() -> None:
    """Test an oversize frame whose size prefix arrives in pieces."""
    reader = FrameReader(max_frame_size=100)
    reader.feed(b'\x00')
    reader.feed(b'\x00\x01')
    assert reader.next_frame() is None
    reader.feed(b'\x00')
    with pytest.raises(FrameDecodeError, match='frame size 256 exceeds'):
        reader.next_frame()


def test_frame_at_limit() -> None:
    """Test a frame exactly as large as the maximum."""
    frame = encode(Deliver(0, b'x' * 11))
    reader = FrameReader(max_frame_size=len(frame) - 4)
    reader.feed(frame)
    assert read_all(reader) == [frame[4:]]


def test_no_limit() -> None:
    """Test that a maximum of 0 means no limit, as in `Tune`."""
    reader = FrameReader(max_frame_size=0)
    reader.feed(b'\xff\xff\xff\xff')
    assert reader.next_frame() is None


def test_default_and_changed_limit() -> None:
    """Test the default limit and changing it, e.g. after `Tune`."""
    reader = FrameReader()
    assert reader.max_frame_size == DEFAULT_MAX_RECEIVED_FRAME_SIZE
    reader.max_frame_size = 4
    reader.feed(encode(Deliver(0, b'x')))
    with pytest.raises(FrameDecodeError):
        reader.next_frame()
    reader.max_frame_size = 0
    assert reader.next_frame() is not None
    with pytest.raises(ValueError, match='maximum frame size'):
        reader.max_frame_size = -1
    with pytest.raises(ValueError, match='maximum frame size'):
        FrameReader(2**32)


def test_many_chunks_linear() -> None:
    """Test that many small chunks of one big frame are not re-joined per feed."""
    size = 2**20
    frame = encode(Deliver(0, b'x' * size))
    reader = FrameReader()
    for i in range(0, len(frame), 100):
        reader.feed(frame[i:i + 100])
        # the reader keeps the chunks; it does not join them before the end
        assert len(reader._chunks) == i // 100 + 1
    result = reader.next_frame()
    assert result is not None
    assert len(result) == size + 5

def test_decode_hot_publish_confirm_ids() -> None:
    """
    PublishConfirm ids of every size, up to 2**64 - 1, as a sequence of
    ints (read from the frame's bytes as asked): equal to the tuple, and
    read as one.
    """
    import struct
    from collections.abc import Sequence

    from rbfly.streams.protocol import PublishConfirm
    from rbfly.streams.protocol._frames import decode_hot

    ids = (0, 1, 255, 256, 2**30 - 1, 2**30, 2**31, 2**63 - 1, 2**63, 2**64 - 1)
    data = bytearray(struct.pack('>HHBI', 3, 1, 7, len(ids)))
    data += b''.join(struct.pack('>Q', i) for i in ids)
    confirm = decode_hot(memoryview(data))
    data[9:] = bytes(len(data) - 9)  # the frame's buffer is reused: the ids were copied
    assert confirm == PublishConfirm(7, ids) and hash(confirm) == hash(PublishConfirm(7, ids))
    assert isinstance(confirm, PublishConfirm)
    got = confirm.publishing_ids
    assert isinstance(got, Sequence) and len(got) == len(ids)
    assert tuple(got) == ids and list(got) == list(ids)
    assert [got == list(ids), got != (0, 1), got[2:4] == (255, 256)] == [True, True, True]
    assert all(type(i) is int for i in got)
    assert got[0] == 0 and got[-1] == 2**64 - 1
    assert 2**63 in got and 5 not in got and got.index(256) == 3 and got.count(1) == 1
    assert list(reversed(got)) == list(reversed(ids))
    with pytest.raises(IndexError):
        got[len(ids)]
    assert repr(got) == 'ConfirmIds({!r})'.format(ids)
    empty = decode_hot(memoryview(struct.pack('>HHBI', 3, 1, 7, 0)))
    assert empty == PublishConfirm(7, ())
