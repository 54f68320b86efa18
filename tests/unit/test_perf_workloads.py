"""
The sans-broker parts of ``perf/workloads/bench.py``: the messages and
their indexes, the open loop's schedule and its latencies counted from
when each message was due, the consumer's tally, the JSON bodies, and the
report's tables and figures drawn from a result document.
"""

import zlib
from pathlib import Path
from typing import Any

import pytest

from perf.common.errors import VerificationError
from perf.common.streams import Stopwatch
from perf.report import workloads as rw
from perf.workloads import parts as w

@pytest.mark.parametrize('size', [10, 11, 1024, 16 * 1024, 512 * 1024])
def test_body_size_and_index(size: int) -> None:
    """A message has exactly the size asked for and its index first."""
    filler = w.filler_of(size)
    data = w.body(123, size, filler)
    assert len(data) == size
    assert w.index_of(data) == 123


def test_index_of_str() -> None:
    """RbFly 0.10 may hand out a str; its index reads the same."""
    assert w.index_of('0000000042xyz') == 42


def test_quantiles() -> None:
    values = [i * 1000 for i in range(1, 1001)]   # 1..1000 us
    q = w.quantiles(values)
    assert q == {'count': 1000, 'p50_us': 500, 'p99_us': 990, 'p999_us': 999, 'max_us': 1000}
    assert w.quantiles([]) is None


def test_tally_in_order() -> None:
    tally = w.Tally('x', 3)
    assert not tally.add(b'0000000000')
    assert not tally.add(b'0000000001')
    assert tally.add(b'0000000002')
    tally.check()


@pytest.mark.parametrize('bodies', [
    [b'0000000000', b'0000000002', b'0000000003'],   # one skipped
    [b'0000000000', b'0000000001'],                  # one missing
])
def test_tally_finds_gaps(bodies: list[bytes]) -> None:
    """A lost or reordered message fails the run: a figure is only kept for all messages."""
    tally = w.Tally('x', 3)
    for b in bodies:
        tally.add(b)
    with pytest.raises(VerificationError):
        tally.check()


def test_open_loop_schedule() -> None:
    """Message ``i`` is due ``i / rate`` after the start."""
    loop = w.OpenLoop(1000, 5)
    loop.t0 = 10_000_000
    assert [loop.due(i) for i in range(3)] == [10_000_000, 11_000_000, 12_000_000]


async def test_open_loop_paces_and_charges_lateness() -> None:
    """
    The loop sends each message no earlier than due; latencies count from
    the due time, so a reply after the schedule is charged its wait.
    """
    loop = w.OpenLoop(2000, 20)
    sent: list[int] = []

    async def send(i: int) -> None:
        sent.append(i)

    await loop.run(send)
    assert sent == list(range(20))
    # 20 messages at 2,000/s: the last is due 9.5 ms after the first
    assert (loop.last_sent - loop.t0) >= 9_500_000
    for i in range(20):
        loop.confirmed[i] = loop.due(i) + 1_000_000   # each confirmed 1 ms after due
        loop.received[i] = loop.due(i) + 2_000_000
    watch = Stopwatch()
    watch.start()
    watch.stop()
    result = loop.result(watch)
    assert result['confirm']['p50_us'] == 1000
    assert result['end_to_end']['p99_us'] == 2000
    assert result['offered'] == 2000


@pytest.mark.parametrize(('rate', 'ticks'), [
    (1_000, [1, 2, 3, 4]),
    (10_000, [1, 11, 21, 31]),
    (50_000, [1, 51, 101, 151]),
])
def test_pacer_ready_per_tick(rate: int, ticks: list[int]) -> None:
    """At each 1 ms tick the messages due by then are ready: rate / 1,000 more a tick."""
    pacer = w.Pacer(rate, 1_000_000)
    pacer.t0 = 5_000_000
    assert pacer.ready(4_999_999) == 0
    assert [pacer.ready(5_000_000 + k * w.TICK_NS) for k in range(4)] == ticks


def test_pacer_ready_stops_at_count() -> None:
    pacer = w.Pacer(10_000, 25)
    assert pacer.ready(10**12) == 25


@pytest.mark.parametrize(('rate', 'sent', 'now', 'pause'), [
    # the next message due sooner than a tick away: a tick, never less
    (10_000, 11, 1_000_000, 1_000_000),
    (50_000, 51, 1_000_000, 1_000_000),
    (10_000, 12, 1_000_000, 1_000_000),
    # a message due later: until then (a rate under 1,000 msg/s)
    (100, 1, 0, 10_000_000),
    (100, 1, 4_000_000, 6_000_000),
    # behind the schedule: still a tick
    (1_000, 3, 9_000_000, 1_000_000),
])
def test_pacer_pause(rate: int, sent: int, now: int, pause: int) -> None:
    pacer = w.Pacer(rate, 1000)
    assert pacer.pause(now, sent) == pause


@pytest.mark.parametrize(('rate', 'tick'), [(0, w.TICK_NS), (1000, w.TICK_NS - 1)])
def test_pacer_refuses(rate: float, tick: int) -> None:
    """A tick under 1 ms would spin on uvloop: refused."""
    with pytest.raises(ValueError, match='tick of at least'):
        w.Pacer(rate, 10, tick)


class FakeClock:
    """
    A clock in nanoseconds that only sleeps and sends move: a sleep moves
    it as uvloop's timers do (whole milliseconds, rounded: a sleep under
    0.5 ms returns at once), a send by ``send_ns``.
    """

    def __init__(self, send_ns: int) -> None:
        self.start = self.now = 1_000_000_000
        self.send_ns = send_ns
        self.sends: list[tuple[int, int]] = []
        self.sleeps = 0

    def __call__(self) -> int:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        # at most 1,000 sleeps a second so far (spinning fails here, not hangs)
        assert self.sleeps <= 1 + 1000 * (self.now - self.start) / 1e9, 'spinning'
        self.now += round(seconds * 1000) * 1_000_000

    async def send(self, i: int) -> None:
        self.sends.append((i, self.now))
        self.now += self.send_ns


@pytest.mark.parametrize('rate', [100, 1_000, 10_000, 50_000, 200_000])
@pytest.mark.parametrize('send_ns', [0, 5_000, 30_000])
def test_open_loop_sleeps_at_most_1000_a_second(rate: int, send_ns: int) -> None:
    """
    Driven by a fake clock and a sleep that rounds as uvloop's does (the
    old loop, sleeping 0.1 ms at 10,000 msg/s, never moved such a clock),
    the open loop sleeps at most 1,000 times a second of the run, sends
    every message once, in order, never before it is due, and, when the
    sends take at most half the time, at most 2 ticks after it.
    """
    count = rate * 2     # two seconds
    clock = FakeClock(send_ns)
    loop = w.OpenLoop(rate, count)
    run = loop.run(clock.send, clock=clock, sleep=clock.sleep)
    with pytest.raises(StopIteration):
        run.send(None)   # nothing suspends: the loop runs to its end at once
    assert [i for i, _ in clock.sends] == list(range(count))
    seconds = (loop.last_sent - loop.t0) / 1e9
    assert loop.sleeps == clock.sleeps
    assert clock.sleeps <= 1000 * seconds
    keeps_up = rate * send_ns <= 0.5e9
    for i, at in clock.sends:
        assert at >= loop.due(i)
        assert not keeps_up or at - loop.due(i) <= 2 * w.TICK_NS


async def test_null_run() -> None:
    """
    The harness alone (impl ``null``): every message made, noted confirmed
    and delivered, its figures those of a client's run, its CPU its own.
    """
    result = await w.null_latency(2000, 40)
    assert result['count'] == 40 and result['offered'] == 2000
    assert result['cpu_us_per_msg'] > 0
    assert result['confirm']['count'] == result['end_to_end']['count'] == 40
    assert result['sleeps_per_s'] is not None


def test_open_loop_missing_confirmation() -> None:
    loop = w.OpenLoop(1000, 2)
    loop.confirmed[0] = loop.received[0] = loop.received[1] = 1
    watch = Stopwatch()
    with pytest.raises(VerificationError, match='1 messages not confirmed'):
        loop.result(watch)


def test_json_bodies() -> None:
    """JSON events of about 230 bytes, indexed, compressible as real events are."""
    bodies = w.json_bodies(1000)
    assert [w.index_of(b) for b in bodies[:3]] == [0, 1, 2]
    mean = sum(map(len, bodies)) / len(bodies)
    assert 200 < mean < 300
    whole = b''.join(bodies)
    assert len(zlib.compress(whole)) < len(whole) / 4


def test_rss_sampler() -> None:
    with w.RssSampler(interval=0.01) as rss:
        data = bytearray(20_000_000)
    summary = rss.summary()
    assert summary['rss_max_mb'] >= summary['rss_start_mb'] > 0
    del data


def test_written_bytes_grows(tmp_path: Path) -> None:
    before = w.written_bytes()
    (tmp_path / 'f').write_bytes(b'x' * 10_000)
    assert w.written_bytes() - before >= 10_000


def result(rate: float, **extra: Any) -> dict[str, Any]:
    return {'status': 'ok', 'rate': rate, 'cpu_us_per_msg': 1.5, **extra}


DOC: dict[str, Any] = {
    'benchmark': 'workloads',
    'params': {'rounds': 1, 'quick': True},
    'env': {
        'date': '2026-11-25T01:00:00+00:00', 'broker': {'product': 'RabbitMQ', 'version': '3.10.8'},
        'loop': {'name': 'uvloop', 'version': '0.23.0'},
        'cpu': {'model': 'AMD EPYC', 'usable_cores': 2}, 'python': {'version': '3.11.7'},
        'source': {'commit': '72de431abc'},
    },
    'results': {
        'sizes': {
            '1024/publish': {
                'rbfly': result(200_000, size=1024, mb_per_s=204.8),
                'java': result(100_000, size=1024, mb_per_s=102.4),
            },
            '1024/consume': {'rbfly': result(400_000, size=1024, mb_per_s=409.6)},
        },
        'latency': {
            '10000': {
                'rbfly': result(9_990, achieved=10_000,
                                confirm={'p50_us': 300, 'p99_us': 900, 'p999_us': 2000},
                                end_to_end={'p50_us': 900, 'p99_us': 3000, 'p999_us': 5000}),
                'java': result(10_000, published_rate=10_001, latency_ms={'p50': 6.0, 'p99': 15.0},
                               confirm_latency_ms={'p50': 6.0, 'p99': 11.0}),
                # the harness alone
                'null': {**result(10_000, achieved=10_000,
                                  confirm={'p50_us': 500, 'p99_us': 990, 'p999_us': 999},
                                  end_to_end={'p50_us': 500, 'p99_us': 990, 'p999_us': 999}),
                         'cpu_us_per_msg': 4.2},
            },
        },
        'slow': {'50us': {'rbfly': result(19_000, rss_start_mb=70, rss_max_mb=72,
                                          rss_final_mb=71),
                          'rstream': {'status': 'error', 'error': 'TypeError: x'}}},
        'compression': {
            'zstd': {'rbfly': result(1e6, wire_bytes_per_msg=20, read_rate=2e6),
                     'aiokafka': result(5e4, wire_bytes_per_msg=24, read_rate=1e5)},
        },
    },
}


def test_summary_table() -> None:
    _, headers, rows = rw.summary_table(DOC['results'])
    assert headers == ['workload', 'rbfly', 'rstream', 'Java (tool)', 'aiokafka (Kafka)',
                       'harness alone (no client)']
    by_name = {r[0]: r[1:] for r in rows}
    # the harness's own CPU a message beside the clients'
    cpu = next(v for k, v in by_name.items() if k.startswith('client CPU at 10,000 msg/s'))
    assert cpu == ['1.50 µs/msg', rw.NOT_RUN, '1.50 µs/msg', rw.NOT_RUN, '4.20 µs/msg']
    assert by_name['publishing 1 KiB messages'][:3] == ['205 MB/s', rw.NOT_RUN, '102 MB/s']
    # the Java tool's milliseconds become microseconds
    assert by_name["end to end p99 at 10,000 msg/s (Java: its tool's, see below)"][2] == \
        '15,000 µs'
    no = rw.NOT_RUN
    assert by_name['zstd-compressed JSON'] == ['1,000,000 msg/s', no, no, '50,000 msg/s', no]
    assert by_name['its bytes per message'] == ['20.0 B', no, no, '24.0 B', no]


def test_summary_without_the_harness_alone() -> None:
    """
    A run that did not measure the harness alone (null) shows no client CPU
    at a fixed load, and says why: the harness's loop was in every Python
    client's figure.
    """
    results = {k: v for k, v in DOC['results'].items() if k != 'latency'}
    results['latency'] = {'10000': {
        i: e for i, e in DOC['results']['latency']['10000'].items() if i != 'null'}}
    _, _, rows = rw.summary_table(results)
    assert not any(r[0].startswith('client CPU') for r in rows)
    assert 'harness alone' in rw.summary_notes(results)
    assert rw.summary_notes(DOC['results']) == ''


def test_latency_table_keeps_columns() -> None:
    """The tool's latencies are labelled apart; a missing figure is a dash, not a gap."""
    _, headers, rows = rw.workload_table('latency', DOC['results']['latency'])
    assert headers == ['case', 'rbfly', 'Java (tool)', 'harness alone (no client)']
    assert rows[0][1] == '10,000 msg/s, 300, 900, 2,000 µs confirm, 900, 3,000, 5,000 µs end' \
        ' to end, 1.50 µs CPU'
    assert rows[0][2].startswith('10,001 msg/s; tool (from its send, whole ms, sampled): confirm'
                                 ' p50/p99 6/11 ms, end to end p50/p99 6/15 ms')


def test_workload_table_marks_failures() -> None:
    _, headers, rows = rw.workload_table('slow', DOC['results']['slow'])
    assert headers == ['case', 'rbfly', 'rstream']
    assert rows[0][1] == '19,000 msg/s, 1.50 µs, 70.0, 72.0, 71.0 MB, 2.00 MB growth'
    assert rows[0][2] == 'error: TypeError: x'


@pytest.mark.parametrize(('entry', 'expected'), [
    ({'cpu_share': 0.97, 'broker_cpu_share': 0.5}, 'client-bound'),
    ({'cpu_share': 0.4, 'broker_cpu_share': 1.3}, 'broker-bound'),
    ({'cpu_share': 0.6, 'broker_cpu_share': 0.7, 'machine_busy': 0.95}, 'machine-bound'),
    ({'cpu_share': 0.2, 'broker_cpu_share': 0.3, 'machine_busy': 0.3}, 'waits'),
    # the Java tool's figures: the JVM's CPU per message at its rate
    ({'cpu_us_per_msg': 1.0, 'rate': 900_000}, 'client-bound'),
])
def test_bound(entry: dict[str, float], expected: str) -> None:
    assert rw.bound(entry) == expected


def test_report_files(tmp_path: Path) -> None:
    """The tables and a figure per workload, captioned with the run."""
    path = tmp_path / 'w.json'
    import json
    path.write_text(json.dumps(DOC))
    assert rw.main(['--output-dir', str(tmp_path), str(path)]) == 0
    text = (tmp_path / 'workloads.rst.inc').read_text()
    assert 'RabbitMQ 3.10.8' in text and '72de431' in text
    assert 'Summary' in (tmp_path / 'workloads-summary.rst.inc').read_text()
    for workload in DOC['results']:
        assert (tmp_path / 'workloads-{}.png'.format(workload)).stat().st_size > 1000
