"""
The lines of the Java client's own perf tool (StreamPerfTest of
stream-client 0.13.0) as ``perf/common/tool.py`` reads them: the rates and the
latency figures of each second, the summary, and the steady state of a
run. The lines are copied from runs of the tool against RabbitMQ 3.10.
"""


import pytest

from perf.common.tool import Report, parse_latency, parse_line, percentile_key, tool_result

# --producers 1 --consumers 1 --rate 1000 --time 5
END_TO_END = [
    '1, published 1039 msg/s, confirmed 1039 msg/s, consumed 1039 msg/s,'
    ' latency median/75th/95th/99th 42/44/46/46 ms, chunk size 30',
    '2, published 1013 msg/s, confirmed 1013 msg/s, consumed 1013 msg/s,'
    ' latency median/75th/95th/99th 57/57/61/61 ms, chunk size 29',
    '3, published 913 msg/s, confirmed 913 msg/s, consumed 913 msg/s,'
    ' latency median/75th/95th/99th 69/69/78/78 ms, chunk size 30',
    '4, published 1024 msg/s, confirmed 1024 msg/s, consumed 1024 msg/s,'
    ' latency median/75th/95th/99th 88/92/105/105 ms, chunk size 29',
    '5, published 1005 msg/s, confirmed 1005 msg/s, consumed 1005 msg/s,'
    ' latency median/75th/95th/99th 96/96/96/96 ms, chunk size 30',
]
END_TO_END_SUMMARY = (
    'Summary: published 998 msg/s, confirmed 998 msg/s, consumed 998 msg/s,'
    ' latency 95th 96 ms, chunk size 30'
)
# the same with --confirm-latency
CONFIRM = (
    '3, published 1010 msg/s, confirmed 1010 msg/s, consumed 1010 msg/s,'
    ' confirm latency median/75th/95th/99th 42/46/46/46 ms,'
    ' latency median/75th/95th/99th 44/46/48/48 ms, chunk size 29'
)
CONFIRM_SUMMARY = (
    'Summary: published 991 msg/s, confirmed 991 msg/s, consumed 991 msg/s,'
    ' confirm latency 95th 63 ms, latency 95th 65 ms, chunk size 30'
)
# publishing only: the tool prints latency figures of no message
PUBLISHING = (
    '12, published 749643 msg/s, confirmed 749543 msg/s, consumed 0 msg/s,'
    ' latency median/75th/95th/99th 0/0/0/0 ms, chunk size 0'
)


def reports(lines: list[str]) -> list[Report]:
    found = [parse_line(line) for line in lines]
    assert all(r is not None for r in found)
    return [r for r in found if r is not None]


def test_percentile_keys() -> None:
    assert [percentile_key(k) for k in ('median', '75th', '95th', '99th', '99.9th', 'min')] \
        == ['p50', 'p75', 'p95', 'p99', 'p99.9', 'min']


def test_latency_of_a_second() -> None:
    assert parse_latency(END_TO_END[0]) == {
        'latency': {'p50': 42.0, 'p75': 44.0, 'p95': 46.0, 'p99': 46.0},
    }


def test_confirm_latency_apart_from_latency() -> None:
    assert parse_latency(CONFIRM) == {
        'confirm latency': {'p50': 42.0, 'p75': 46.0, 'p95': 46.0, 'p99': 46.0},
        'latency': {'p50': 44.0, 'p75': 46.0, 'p95': 48.0, 'p99': 48.0},
    }


def test_other_percentiles() -> None:
    """Whichever percentiles a version of the tool prints are read."""
    line = '7, published 5 msg/s, latency min/median/75th/95th/99th 1/3/4/6/9 ms, chunk size 1'
    assert parse_latency(line) == {
        'latency': {'min': 1.0, 'p50': 3.0, 'p75': 4.0, 'p95': 6.0, 'p99': 9.0},
    }


def test_lines() -> None:
    second = parse_line(END_TO_END[2])
    assert second == Report(3, 913, 913, 913, {
        'latency': {'p50': 69.0, 'p75': 69.0, 'p95': 78.0, 'p99': 78.0},
    })
    summary = parse_line(CONFIRM_SUMMARY)
    assert summary == Report(None, 991, 991, 991, {
        'confirm latency': {'p95': 63.0}, 'latency': {'p95': 65.0},
    })
    assert parse_line('Starting producer') is None
    assert parse_line('') is None


def test_steady_state_with_latency() -> None:
    """Rates and the median latency figures of seconds 2 to 5, the summary's."""
    lines = reports(END_TO_END)
    cpu = {k: k * 0.1 for k in range(1, 6)}
    r = tool_result(lines, cpu, 2, consuming=False, summary=parse_line(END_TO_END_SUMMARY))
    assert r['seconds'] == [2, 5]
    assert r['rate'] == pytest.approx((1013 + 913 + 1024 + 1005) / 4)
    for key in ('published_rate', 'confirmed_rate', 'consumed_rate'):
        assert r[key] == r['rate']
    assert r['max'] == 1024
    assert r['cpu_us_per_msg'] == pytest.approx(0.4 / (1013 + 913 + 1024 + 1005) * 1e6)
    # medians of 57, 69, 88, 96 and so on
    assert r['latency_ms'] == {'p50': 78.5, 'p75': 80.5, 'p95': 87.0, 'p99': 87.0}
    assert r['summary_latency_ms'] == {'p95': 96.0}
    assert r['confirm_latency_ms'] is None
    assert r['summary_confirm_latency_ms'] is None
    assert r['summary_rate'] == 998
    assert r['per_second'] == [1039, 1013, 913, 1024, 1005]


def test_consuming_rate_and_latency() -> None:
    """Consuming: the consumed rate, and its seconds, count."""
    lines = reports(END_TO_END)
    r = tool_result(lines, {}, 1, consuming=True)
    # the last second with messages is a partial one
    assert r['seconds'] == [1, 4]
    assert r['rate'] == r['consumed_rate'] == pytest.approx((1039 + 1013 + 913 + 1024) / 4)
    assert r['latency_ms'] == {'p50': 63.0, 'p75': 63.0, 'p95': 69.5, 'p99': 69.5}
    assert r['summary_latency_ms'] is None
    assert r['summary_rate'] is None


def test_no_latency_without_consumers() -> None:
    lines = reports([PUBLISHING] * 3)
    summary = Report(None, 749643, 749543, 0, {'latency': {'p95': 0.0}})
    r = tool_result(lines, {}, 1, consuming=False, summary=summary)
    assert r['rate'] == 749543
    assert r['published_rate'] == 749643
    assert r['consumed_rate'] == 0
    assert r['latency_ms'] is None
    assert r['summary_latency_ms'] is None
