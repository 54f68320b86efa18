"""
The frame counting of ``perf.publish --frames`` (:py:mod:`perf.common.wire`):
frames split anywhere, counted per stream, other frames skipped.
"""

import struct

import pytest

from perf.common.wire import DECLARE_PUBLISHER, PUBLISH, PUBLISH_CONFIRM, FrameCounter, _Connection

def frame(key: int, body: bytes) -> bytes:
    data = struct.pack('>HH', key, 1) + body
    return struct.pack('>I', len(data)) + data

def string(value: str) -> bytes:
    data = value.encode()
    return struct.pack('>h', len(data)) + data

def declare(pid: int, reference: str, stream: str) -> bytes:
    return frame(DECLARE_PUBLISHER, struct.pack('>IB', 7, pid) + string(reference) + string(stream))

def publish(pid: int, first: int, count: int) -> bytes:
    entries = b''.join(struct.pack('>QI', first + i, 3) + b'abc' for i in range(count))
    return frame(PUBLISH, struct.pack('>Bi', pid, count) + entries)

def confirm(pid: int, ids: list[int]) -> bytes:
    return frame(PUBLISH_CONFIRM, struct.pack('>Bi', pid, len(ids)) + b''.join(
        struct.pack('>Q', i) for i in ids
    ))

CLIENT = (
    frame(0x0017, b'\x00' * 9)  # another command (heartbeat-sized), skipped
    + declare(1, 'name', 's1') + declare(2, '', 's2')
    + publish(1, 1, 3) + publish(2, 1, 5) + publish(1, 4, 2)
)
BROKER = frame(0x8001, struct.pack('>IH', 7, 1)) + confirm(1, [1, 2, 3, 4, 5]) + confirm(2, [1])

@pytest.mark.parametrize('piece', [len(CLIENT) + len(BROKER), 1, 7])
def test_frames_are_counted_per_stream_however_split(piece: int) -> None:
    counter = FrameCounter('localhost', 5552)
    conn = _Connection(counter)
    for data, feed in ((CLIENT, conn.client_data), (BROKER, conn.broker_data)):
        for i in range(0, len(data), piece):
            feed(data[i:i + piece])

    s1 = counter.take('s1')
    assert (s1.publish_frames, s1.published, s1.max_frame) == (2, 5, 3)
    assert (s1.confirm_frames, s1.confirmed) == (1, 5)
    assert s1.as_json()['msg_per_frame'] == 2.5
    s2 = counter.take('s2')
    assert (s2.publish_frames, s2.published, s2.confirm_frames, s2.confirmed) == (1, 5, 1, 1)
    # taken: forgotten, and nothing incomplete is left over
    assert counter.take('s1').publish_frames == 0
    assert not conn.up and not conn.down
