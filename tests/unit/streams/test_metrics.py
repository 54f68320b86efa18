"""
The client's metrics without a broker: the latency histograms' buckets,
the consumers' rate window, the counters per stream, the sampling of
confirmation and end-to-end latencies, and the snapshot per stream.
"""

import dataclasses as dtc
import math
import struct
import time
import typing as tp
import zlib

import pytest

from rbfly.streams.metrics import (
    BOUNDS,
    CONFIRM,
    END_TO_END,
    Buckets,
    Counters,
    Histogram,
    RateWindow,
    stream_metrics,
)
from rbfly.streams.offset import Offset
from rbfly.streams.protocol.commands import OffsetSpec
from rbfly.streams.publishers.awaited import Publisher
from rbfly.streams.publishers.base import PROBE_CHECK
from rbfly.streams.subscriptions.options import ReadOptions
from rbfly.streams.subscriptions.subscription import Subscription

#
# buckets and histograms
#

@pytest.mark.parametrize(('seconds', 'bucket'), [
    (0.0, 0),
    (-3.0, 0),  # a clock difference: counted as 0
    (BOUNDS[0], 0),  # a bound belongs to the bucket it bounds
    (math.nextafter(BOUNDS[0], math.inf), 1),
    (0.001, 3),
    (0.0011, 4),
    (BOUNDS[-1], len(BOUNDS) - 1),
    (BOUNDS[-1] + 1, len(BOUNDS)),  # above every bound: the last bucket
    (1e9, len(BOUNDS)),
])
def test_bucket(seconds: float, bucket: int) -> None:
    """A sample goes in the bucket whose upper bound is the first at or above it."""
    b = Buckets()
    b.record(seconds)
    h = b.snapshot()
    assert h.counts == tuple(1 if i == bucket else 0 for i in range(len(BOUNDS) + 1))
    assert (h.count, h.sum) == (1, max(0.0, seconds))
    assert h.bounds == BOUNDS

def test_histogram_quantile() -> None:
    """A quantile's upper bound is that of the bucket its rank falls in."""
    b = Buckets()
    for _ in range(90):
        b.record(0.0003)  # bucket of 0.0005
    for _ in range(9):
        b.record(0.004)  # of 0.005
    b.record(100.0)  # the last
    h = b.snapshot()
    assert h.count == 100
    assert h.sum == pytest.approx(90 * 0.0003 + 9 * 0.004 + 100)
    assert h.quantile(0.0) == h.quantile(0.5) == h.quantile(0.9) == 0.0005
    assert h.quantile(0.91) == h.quantile(0.99) == 0.005
    assert h.quantile(1.0) == math.inf
    assert Buckets().snapshot().quantile(0.5) is None
    with pytest.raises(ValueError):
        h.quantile(1.5)

def test_histogram_merge() -> None:
    """Histograms merge bucket by bucket; others' bounds do not merge."""
    a, b = Buckets(), Buckets()
    a.record(0.001)
    b.record(0.001)
    b.record(2.0)
    merged = Histogram.merge([a.snapshot(), b.snapshot()])
    assert merged.count == 3
    assert merged.sum == pytest.approx(2.002)
    assert merged.counts[3] == 2 and merged.counts[13] == 1
    assert Histogram.merge([]).count == 0
    other = dtc.replace(a.snapshot(), bounds=(1.0,), counts=(1, 0))
    with pytest.raises(ValueError):
        Histogram.merge([other])

#
# rate window
#

def test_rate_window_since_start() -> None:
    """Read before a window passed: the rate since the counter's start."""
    w = RateWindow(100.0, window=10.0)
    assert w.rate(100.0, 0) == 0.0  # no time passed
    assert w.rate(102.0, 200) == 100.0
    assert w.rate(104.0, 200) == 50.0

def test_rate_window_recent() -> None:
    """Read often: the rate of the last window, not of the whole history."""
    w = RateWindow(0.0, window=10.0)
    count = 0
    for t in range(1, 31):  # 1,000 a second for 20 s, then 100 a second
        count += 1_000 if t <= 20 else 100
        rate = w.rate(float(t), count)
    # the window reaches back to a reading 10-11.25 s old, taken at 19 or 20 s
    assert 100 <= rate <= 100 + 900 * 1 / 10
    assert len(w._readings) <= 10  # a reading kept every window / 8

def test_rate_window_rarely_read() -> None:
    """Read every minute: the rate since the previous reading."""
    w = RateWindow(0.0, window=10.0)
    assert w.rate(60.0, 6_000) == 100.0
    assert w.rate(120.0, 18_000) == 200.0
    assert w.rate(180.0, 18_000) == 0.0

def test_rate_window_bad() -> None:
    with pytest.raises(ValueError):
        RateWindow(0.0, window=0.0)

#
# counters per stream
#

def test_counters_per_stream() -> None:
    """
    One counters object per stream published to, and per consumer (stream
    and name); the client's publishing totals are their sums.
    """
    c = Counters()
    a = c.publisher('a')
    assert c.publisher('a') is a
    a.published += 3
    c.publisher('b').published += 4
    a.confirmed += 2
    c.publisher('b').errored += 1
    assert (c.published, c.confirmed, c.errored) == (7, 2, 1)
    assert [p.stream for p in c.publishing()] == ['a', 'b']

    named = c.consumer('s', 'n')
    assert c.consumer('s', 'n') is named
    assert c.consumer('s', None) is not named
    c.consumer('r', 'n')
    assert [(k.stream, k.name) for k in c.consuming()] == [('r', 'n'), ('s', None), ('s', 'n')]

def test_latency_listeners(caplog: pytest.LogCaptureFixture) -> None:
    """
    The listeners get each sample; an error of one is logged, and the
    others still get it.
    """
    c = Counters()
    got: list[tuple[str, str, str | None, float]] = []

    def bad(*args: object) -> None:
        raise RuntimeError('listener')

    c.listeners.append(bad)
    c.listeners.append(lambda *args: got.append(args))
    c.publisher('a').sample(0.002)
    c.consumer('s', 'n').sample(time.time() + 60, 5.0)  # the broker's clock ahead
    assert got[0] == (CONFIRM, 'a', None, 0.002)
    assert got[1] == (END_TO_END, 's', 'n', 0.0)
    assert c.consumer('s', 'n').sample_at == 5.0 + 0.1
    assert 'latency listener' in caplog.text

#
# sampling: a publisher's confirmation latency
#

class Host:
    """A publisher's host (:py:class:`rbfly.streams.publishers.base.PublisherHost`)."""
    def __init__(self) -> None:
        self.counters = Counters()
        self.spin = 0.0

    def publisher_unknown(self, publisher: object) -> None:
        pass

    async def wait_recovery(self, publisher: object) -> None:
        raise AssertionError('no connection to recover')

class Protocol:
    def __init__(self) -> None:
        self.frames: list[bytes] = []

    def send_frame(self, frame: bytes) -> None:
        self.frames.append(frame)

def sent(publisher: Publisher, protocol: Protocol, *ids: int) -> None:
    """Messages sent in one frame, as a publisher sends them."""
    for pid in ids:
        publisher._unconfirmed[pid] = 'm{}'.format(pid)
    publisher.message_id = ids[-1]
    publisher._send_frames(tp.cast(tp.Any, protocol), [b'frame'], len(ids))

def test_confirm_latency(monkeypatch: pytest.MonkeyPatch) -> None:
    """
    The last message of a frame is timed when no probe is in flight;
    frames sent meanwhile are not; after a sample, the clock is read at
    the next frame, then every PROBE_CHECK frames, until the interval
    passed: the frame sent then is timed.
    """
    monkeypatch.setattr('rbfly.streams.publishers.base.SAMPLE_INTERVAL', 0.05)
    host = Host()
    publisher = Publisher(tp.cast(tp.Any, host), 'orders', 0, 'name', 0)
    protocol = Protocol()
    stats = host.counters.publisher('orders')

    sent(publisher, protocol, 1, 2, 3)
    assert publisher._probe == 3
    sent(publisher, protocol, 4)
    assert publisher._probe == 3  # one at a time
    publisher.on_confirm([1, 2])
    assert stats.confirm_latency.count == 0
    publisher.on_confirm([3, 4])
    assert stats.confirm_latency.count == 1
    assert 0 <= stats.confirm_latency.sum < 1
    assert (stats.published, stats.confirmed) == (4, 4)
    assert publisher._probe == 0

    sent(publisher, protocol, 5)  # before the interval: a count of frames
    assert publisher._probe == 1 - PROBE_CHECK
    time.sleep(0.06)
    pid = 5
    for _ in range(PROBE_CHECK - 1):  # the clock is not read
        pid += 1
        sent(publisher, protocol, pid)
    assert publisher._probe == 0
    pid += 1
    sent(publisher, protocol, pid)  # read: the interval passed
    assert publisher._probe == pid
    publisher.on_confirm(list(range(5, pid + 1)))
    assert stats.confirm_latency.count == 2
    assert host.counters.published == pid

def test_confirm_latency_slow_publisher(monkeypatch: pytest.MonkeyPatch) -> None:
    """Frames further apart than the interval: each is timed."""
    monkeypatch.setattr('rbfly.streams.publishers.base.SAMPLE_INTERVAL', 0.01)
    host = Host()
    publisher = Publisher(tp.cast(tp.Any, host), 'orders', 0, 'name', 0)
    for pid in range(1, 4):
        sent(publisher, Protocol(), pid)
        assert publisher._probe == pid
        publisher.on_confirm([pid])
        time.sleep(0.02)
    assert host.counters.publisher('orders').confirm_latency.count == 3

def test_confirm_latency_dropped() -> None:
    """
    A probed message that fails, or a lost connection, gives no sample: a
    later frame is timed instead.
    """
    host = Host()
    publisher = Publisher(tp.cast(tp.Any, host), 'orders', 0, 'name', 0)
    protocol = Protocol()
    stats = host.counters.publisher('orders')

    sent(publisher, protocol, 1)
    publisher.on_error([(1, 0x02)])  # rejected
    assert (publisher._probe, stats.errored) == (0, 1)
    sent(publisher, protocol, 2)
    assert publisher._probe == 2
    publisher.on_connection_lost(ConnectionError('lost'))
    assert publisher._probe == 0
    publisher.on_confirm([2])
    assert stats.confirm_latency.count == 0
    sent(publisher, protocol, 3)
    assert publisher._probe == 3

#
# sampling: a consumer's end-to-end latency
#

def chunk(first: int, records: int, timestamp: float) -> bytes:
    data = b''.join(struct.pack('>I', 1) + b'x' for _ in range(records))
    return struct.pack(
        '>BBHIqQQIIIB3x', 0x50, 0, records, records, int(timestamp * 1000), 1, first,
        zlib.crc32(data), len(data), 0, 0,
    ) + data

def subscription(counters: Counters, name: str | None = None) -> Subscription:
    properties = {} if name is None else {'name': name}
    return Subscription(
        's', OffsetSpec.first(), 0, properties, ReadOptions(amqp=False), counters,
        resume_offset=Offset.FIRST,
    )

def test_end_to_end_latency() -> None:
    """
    A chunk taken is sampled when a sample is due: its age by the
    chunk's timestamp; the messages are counted for the consumer.
    """
    counters = Counters()
    sub = subscription(counters, 'n')
    stats = counters.consumer('s', 'n')
    assert sub.stats is stats
    sub.on_chunk(chunk(0, 3, time.time() - 2.0), None)
    sub.on_chunk(chunk(3, 2, time.time() - 2.0), None)
    assert sub.poll() is not None
    h = stats.end_to_end_latency.snapshot()
    assert h.count == 1
    assert 2.0 <= h.sum < 2.5  # and in the bucket up to 2.5 s
    assert h.counts[BOUNDS.index(2.5)] == 1
    assert sub.poll() is not None  # arrived before the next sample is due
    assert stats.end_to_end_latency.count == 1
    assert stats.consumed == counters.consumed == 5

    stats.sample_at = 0.0
    sub.on_chunk(chunk(5, 1, time.time()), None)
    assert sub.poll() is not None
    assert stats.end_to_end_latency.count == 2

#
# the snapshot per stream
#

@dtc.dataclass
class FakePublisher:
    stream: str
    unconfirmed: int

def test_stream_metrics() -> None:
    """
    Subscriptions of one stream and name are one consumer (their lags
    summed); publishers are counted per stream; a consumer or stream stays
    when its subscriptions or publishers are gone.
    """
    counters = Counters()
    one, two = subscription(counters, 'n'), subscription(counters, 'n')
    other = subscription(counters)
    one.committed_chunk_id = 100  # lag 101
    two.committed_chunk_id = 10
    two.next_offset = 5  # lag 6
    counters.consumer('s', 'n').consumed = 50
    counters.consumer('gone', None)
    counters.publisher('a').published = 7
    counters.publisher('a').confirmed = 5
    counters.publisher('a').sample(0.001)
    counters.publisher('b')

    m = stream_metrics(
        counters, [FakePublisher('a', 2), FakePublisher('a', 0)], [one, two, other],
        time.monotonic(),
    )
    assert [(c.stream, c.name, c.subscriptions, c.lag) for c in m.consumers] == [
        ('gone', None, 0, 0), ('s', None, 1, 0), ('s', 'n', 2, 107),
    ]
    assert m.consumers[2].consumed == 50
    assert m.consumers[2].rate > 0
    assert [
        (p.stream, p.publishers, p.published, p.confirmed, p.outstanding_confirms)
        for p in m.publishers
    ] == [('a', 2, 7, 5, 2), ('b', 0, 0, 0, 0)]
    assert m.confirm_latency.count == 1
    assert m.end_to_end_latency.count == 0
