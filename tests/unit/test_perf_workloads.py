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
    assert headers == ['workload', 'rbfly', 'rstream', 'Java (tool)', 'aiokafka (Kafka)']
    by_name = {r[0]: r[1:] for r in rows}
    assert by_name['publishing 1 KiB messages'][:3] == ['205 MB/s', '', '102 MB/s']
    # the Java tool's milliseconds become microseconds
    assert by_name["end to end p99 at 10,000 msg/s (Java: its tool's, see below)"][2] == \
        '15,000 µs'
    assert by_name['zstd-compressed JSON'] == ['1,000,000 msg/s', '', '', '50,000 msg/s']
    assert by_name['its bytes per message'] == ['20.0 B', '', '', '24.0 B']


def test_latency_table_keeps_columns() -> None:
    """The tool's latencies are labelled apart; a missing figure is a dash, not a gap."""
    _, headers, rows = rw.workload_table('latency', DOC['results']['latency'])
    assert headers == ['case', 'rbfly', 'Java (tool)']
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
