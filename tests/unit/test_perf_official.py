"""
The steady state that ``perf/official/bench.py`` reads off the Java
client's own perf tool (``perf/common/tool.py``), which prints a rate a second
(the figure the harness's is held against).
"""


import pytest

from perf.common.tool import LINE, steady_state

def test_publishing_from_second_6() -> None:
    """Seconds 6 to the end, and the CPU over the same seconds."""
    rates = [100, 200, 300, 400, 500, 600, 600, 700]
    cpu = {k: k * 0.5 for k in range(1, 9)}
    r = steady_state(rates, cpu, 6, consuming=False)
    assert r['rate'] == pytest.approx((600 + 600 + 700) / 3)
    assert r['seconds'] == [6, 8]
    assert r['max'] == 700
    # lines 5..8: 1.5 CPU seconds for seconds 6, 7 and 8
    assert r['cpu_us_per_msg'] == pytest.approx(1.5 / 1900 * 1e6)


def test_consuming_ends_with_the_stream() -> None:
    """The partial last second of reading and the idle seconds after it do not count."""
    rates = [10, 20, 30, 40, 50, 60, 70, 5, 0, 0]
    r = steady_state(rates, {}, 6, consuming=False)
    assert r['seconds'] == [6, 10]
    r = steady_state(rates, {}, 6, consuming=True)
    assert r['rate'] == pytest.approx(65)
    assert r['seconds'] == [6, 7]
    assert r['cpu_us_per_msg'] is None


def test_short_run() -> None:
    """A run shorter than the warm-up: every second counts, no CPU figure."""
    r = steady_state([10, 30], {1: 1.0, 2: 2.0}, 6, consuming=False)
    assert r['rate'] == 20
    assert r['cpu_us_per_msg'] is None


def test_line() -> None:
    m = LINE.match(
        '12, published 749643 msg/s, confirmed 749543 msg/s, consumed 0 msg/s,'
        ' latency median/75th/95th/99th 0/0/0/0 ms, chunk size 0'
    )
    assert m is not None
    assert m.groups() == ('12', '749643', '749543', '0')
