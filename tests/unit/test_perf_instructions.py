"""
``perf/instructions/measure.py``: its arguments, its arithmetic, the
Callgrind files it reads, and each scenario run once without Valgrind
(``--dry-run``: the fake broker in the process, a chunk's worth of
messages), so that a change of the public API that breaks a scenario shows
here, not after minutes under Valgrind.
"""

import sys
from pathlib import Path

import pytest

from perf.instructions import callgrind
from perf.instructions import measure as bi

def test_arguments_default_to_every_scenario() -> None:
    args = bi.parse_args([])
    assert args.scenarios == list(bi.SCENARIOS)
    assert args.repeat == 1
    assert args.layouts == 3
    assert args.counts is None
    assert args.loop == 'asyncio'
    assert args.root == bi.ROOT

def test_arguments_name_scenarios_and_counts() -> None:
    args = bi.parse_args(['send', 'chunks', '--counts', '10', '30', '--repeat', '3'])
    assert args.scenarios == ['send', 'chunks']
    assert args.counts == [10, 30]
    assert args.repeat == 3

@pytest.mark.parametrize('argv', [
    ['nosuch'], ['--repeat', '0'], ['--loop', 'trio'], ['--layouts', '0'],
    ['--layouts', str(len(bi.PADS) + 1)], ['--counts', '30', '10'], ['--counts', '0', '10'],
])
def test_bad_arguments_are_refused(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        bi.parse_args(argv)

@pytest.mark.parametrize('name', sorted(bi.SCENARIOS))
def test_scenario_counts_fit_its_loop(name: str) -> None:
    """Two increasing counts, whole batches and whole chunks."""
    n1, n2 = bi.SCENARIOS[name].counts
    assert 0 < n1 < n2
    assert n1 % bi.BATCH == 0 and n2 % bi.BATCH == 0
    assert n1 % bi.CHUNK == 0 or name in ('send', 'batch')
    assert name != 'many' or (n1 % bi.MANY == 0 and n2 % bi.MANY == 0)

def test_per_message_cancels_what_runs_once() -> None:
    # 1,000 instructions of start-up, 50 a message
    assert callgrind.per_message((100, 300), (1_000 + 100 * 50, 1_000 + 300 * 50)) == 50

def test_per_message_needs_a_larger_second_count() -> None:
    with pytest.raises(ValueError, match='larger'):
        callgrind.per_message((300, 300), (1, 2))

def test_spread_is_a_percentage_of_the_median() -> None:
    assert callgrind.spread([99, 100, 101]) == pytest.approx(2.0)
    assert callgrind.spread([5.0]) == 0

class FakeDriver:
    """Counts 1,000 instructions once and 50 a message, 1 more per pad."""
    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int]] = []

    def instructions(self, name: str, count: int, pad: int = 0) -> int:
        self.calls.append((name, count, pad))
        return 1_000 + count * (50 + pad)

def test_measure_means_the_layouts() -> None:
    driver = FakeDriver()
    results = callgrind.measure(driver, ['send', 'chunks'], 2, repeat=2)
    # each scenario at both counts, in the first two layouts, twice
    assert len(driver.calls) == 2 * 2 * 2 * 2
    assert {pad for _, _, pad in driver.calls} == set(bi.PADS[:2])
    send = results['send']
    assert send['counts'] == list(bi.SCENARIOS['send'].counts)
    assert send['layouts'] == {str(p): 50 + p for p in bi.PADS[:2]}
    assert send['per_message'] == pytest.approx(50 + sum(bi.PADS[:2]) / 2)
    assert send['repeat_spread_pct'] == 0
    assert len(send['runs']) == 4
    assert 'instr/msg' in callgrind.table(results)

def test_measure_takes_the_counts_given() -> None:
    driver = FakeDriver()
    results = callgrind.measure(driver, ['batch'], 1, counts=(100, 300))
    assert [count for _, count, _ in driver.calls] == [100, 300]
    assert results['batch']['per_message'] == 50

def test_callgrind_summary_is_read(tmp_path: Path) -> None:
    path = tmp_path / 'callgrind.out.1'
    path.write_text(
        '# callgrind format\nversion: 1\ncmd: python\npart: 2\n\nevents: Ir\n'
        'fn=(1) main\n0 12\n\nsummary: 123456789\ntotals: 123456789\n',
    )
    assert callgrind.cg_total(path) == 123_456_789

def test_callgrind_file_without_summary_is_refused(tmp_path: Path) -> None:
    path = tmp_path / 'callgrind.out'
    path.write_text('events: Ir\n')
    with pytest.raises(ValueError, match='no summary'):
        callgrind.cg_total(path)

def test_rbfly_of_another_checkout_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """rbfly is imported already, from this checkout: not the one asked for."""
    monkeypatch.setattr(sys, 'path', list(sys.path))
    with pytest.raises(RuntimeError, match='not from'):
        bi.use_root(tmp_path)

@pytest.mark.parametrize('name', sorted(bi.SCENARIOS))
def test_scenario_runs(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert bi.main(['--dry-run', name]) == 0
    assert '{}: 1,000 messages, ok'.format(name) in capsys.readouterr().err

@pytest.mark.parametrize('name', sorted(bi.SCENARIOS))
def test_scenario_runs_instrumented(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``--otel``: each scenario with the client instrumented (rbfly.streams.otel)."""
    assert bi.main(['--dry-run', '--otel', name]) == 0
    assert '{}: 1,000 messages, ok'.format(name) in capsys.readouterr().err
