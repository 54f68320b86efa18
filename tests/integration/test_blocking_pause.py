"""
Pausing, resuming and seeking with the blocking facade, against RabbitMQ
4.x: a paused partition hands out nothing while the other goes on, then
everything, each record once; a seek reads from the new offset. Both
ways the facade reads: a chunk at a time (no tracking), and a record at a
time (automatic offset tracking, exact).
"""

import threading
import time
import uuid

import pytest

from rbfly.streams import Offset
from rbfly.streams.blocking import blocking_client

@pytest.mark.parametrize('tracked', [False, True])
def test_pause_resume_seek(url4: str, tracked: bool) -> None:
    name = 'rbfly-bpause-{}'.format(uuid.uuid4().hex[:8])
    with blocking_client(url4, timeout=30) as client:
        try:
            first, second = client.create_super_stream(name, 2)
            for p in (first, second):
                with client.publisher(p) as pub:
                    pub.send_batch(['{}'.format(i) for i in range(10)])
            seen: dict[str, list[int]] = {first: [], second: []}
            with client.subscribe_super_stream(
                    name, offset=Offset.FIRST, timeout=10, name='reader' if tracked else None,
                    store_every=1 if tracked else 0) as records:
                record = records.next()
                seen[record.stream].append(record.offset)
                paused, other = record.stream, second if record.stream == first else first
                records.pause(paused)
                assert records.paused() == {paused}
                while len(seen[other]) < 10:
                    record = records.next()
                    seen[record.stream].append(record.offset)
                assert seen[paused] == [0], 'a paused partition handed out records'
                records.resume(paused)
                while len(seen[paused]) < 10:
                    record = records.next()
                    seen[record.stream].append(record.offset)
                assert seen == {first: list(range(10)), second: list(range(10))}
                records.seek(paused, 7)
                again = [records.next() for _ in range(3)]
                assert [(r.stream, r.offset) for r in again] == [(paused, o) for o in (7, 8, 9)]
            if tracked:
                assert client.query_offset(paused, 'reader') == 9
                assert client.query_offset(other, 'reader') == 9
        finally:
            client.delete_super_stream(name)

def test_resume_from_another_thread(url: str, stream: str) -> None:
    """
    Every stream paused, a thread waits in ``next()``; another resumes
    the stream: the waiting thread gets the next record (no deadlock).
    """
    with blocking_client(url, timeout=30) as client:
        client.create_stream(stream)
        try:
            with client.publisher(stream) as pub:
                pub.send_batch([str(i) for i in range(10)])
            with client.subscribe(stream, offset=Offset.FIRST, timeout=None) as records:
                assert records.next().offset == 0
                records.pause(stream)
                got: list[int] = []
                waiting = threading.Thread(target=lambda: got.append(records.next().offset))
                waiting.start()
                deadline = time.monotonic() + 10
                while not records._waiting:  # (resumed while it waits, not before)
                    assert time.monotonic() < deadline, 'next() never waited'
                    time.sleep(0.001)
                records.resume(stream)
                waiting.join(30)
                assert not waiting.is_alive() and got == [1]
        finally:
            client.delete_stream(stream)

def test_failed_seek_keeps_records(url: str, stream: str) -> None:
    """A seek that fails leaves the subscription as it was: no record dropped."""
    with blocking_client(url, timeout=30) as client:
        client.create_stream(stream)
        try:
            with client.publisher(stream) as pub:
                pub.send_batch([str(i) for i in range(10)])
            with client.subscribe(stream, offset=Offset.FIRST, timeout=10) as records:
                assert [records.next().offset for _ in range(3)] == [0, 1, 2]
                with pytest.raises(ValueError, match='offset must be'):
                    records.seek(stream, -5)
                assert [records.next().offset for _ in range(7)] == list(range(3, 10))
        finally:
            client.delete_stream(stream)
