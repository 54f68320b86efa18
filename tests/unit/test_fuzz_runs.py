"""
Every decoder of bytes from the network has a fuzz target, and
``fuzz/RUNS.md`` keeps honest totals: every fuzz target has one (one per
commit fuzzed), each names its commit and equals the sum of that commit's
runs in the log, and every run of the log names its commit and lasted at
least a minute.

The totals once predated 25 commits that changed the decoders and named no
commit, and one target reached 10 million inputs through a top-up of 2
seconds; a target added later (the PublishConfirm ids) had no total at all.
"""

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from fuzz.targets import TARGETS

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / 'fuzz' / 'RUNS.md'
COMMIT = re.compile(r'[0-9a-f]{7,40}')
DATE = re.compile(r'\d{4}-\d{2}-\d{2}')
MIN_SECONDS = 60
"""A recorded run lasts at least this long (``scripts/fuzz.sh``'s default)."""

CHUNKS = ('chunk', 'chunk_gzip', 'chunk_zstd', 'chunk_lz4', 'chunk_snappy')
DECODERS: dict[str, tuple[str, ...]] = {
    'rbfly/_wire/_buffer.pyx': ('frames', 'confirm_ids', *CHUNKS, 'amqp'),
    'rbfly/amqp/_decoder.pyx': ('amqp', *CHUNKS),
    'rbfly/amqp/_message.pyx': ('amqp', *CHUNKS),
    'rbfly/amqp/_sections.pyx': ('amqp', *CHUNKS),
    'rbfly/streams/protocol/_chunk.pyx': CHUNKS,
    'rbfly/streams/protocol/_confirm_ids.pyx': ('confirm_ids',),
    'rbfly/streams/protocol/_frames.pyx': ('frames', 'confirm_ids'),
    'rbfly/streams/protocol/codec.py': ('frames', 'responses', 'commands', 'confirm_ids'),
    'rbfly/streams/protocol/compression.py': CHUNKS[1:],
    'rbfly/streams/protocol/connection.py': ('core',),
    'rbfly/streams/protocol/errors.py': ('core',),  # foreign_protocol: a server's first bytes
    'rbfly/streams/protocol/field_codec.py': ('responses', 'commands'),
    'rbfly/streams/protocol/frames.py': ('frames', 'core'),
    'rbfly/streams/protocol/reader.py': ('frames', 'responses', 'commands'),
    'rbfly/streams/protocol/request_codec.py': ('commands', 'confirm_ids'),
    'rbfly/streams/protocol/response_codec.py': ('responses',),
}
"""The modules of the wire layers that read bytes, and the targets fuzzing them."""

NOT_DECODERS = {
    'rbfly/_wire/__init__.py': 'exports',
    'rbfly/amqp/__init__.py': 'exports',
    'rbfly/amqp/_encoder.pyx': 'encodes',
    'rbfly/amqp/types.py': 'types of values to encode',
    'rbfly/streams/protocol/__init__.py': 'exports',
    'rbfly/streams/protocol/_publish.pyx': 'encodes Publish frames',
    'rbfly/streams/protocol/base.py': 'command classes',
    'rbfly/streams/protocol/commands.py': 'command classes',
    'rbfly/streams/protocol/constants.py': 'constants',
    'rbfly/streams/protocol/responses.py': 'response classes',
    'rbfly/streams/protocol/states.py': "the core's states and events (classes)",
    'rbfly/streams/protocol/tables.py': 'types of the codec tables',
    'rbfly/streams/protocol/writer.py': 'encodes',
}
"""The other modules of the wire layers, and why they have no target."""

def test_every_decoder_has_a_target() -> None:
    """
    Each module of the wire layers (``rbfly/_wire``, ``rbfly/amqp``,
    ``rbfly/streams/protocol``) is a decoder with its fuzz targets, or
    says why it has none: a new module is placed in one or the other (the
    PublishConfirm ids decoder went without a target for a month).
    """
    modules = {
        str(path.relative_to(ROOT))
        for folder in ('rbfly/_wire', 'rbfly/amqp', 'rbfly/streams/protocol')
        for pattern in ('*.py', '*.pyx')
        for path in (ROOT / folder).glob(pattern)
    }
    assert modules == DECODERS.keys() | NOT_DECODERS.keys()
    assert not DECODERS.keys() & NOT_DECODERS.keys()
    named = {target for targets in DECODERS.values() for target in targets}
    assert named == set(TARGETS)

@dataclass(frozen=True)
class Run:
    date: str
    target: str
    coverage: str
    commit: str
    seconds: int
    inputs: int
    result: str

def section(text: str, title: str) -> str:
    """The text of the last section of ``RUNS.md`` titled ``title``."""
    parts = re.split(r'(?m)^## (.*)\n', text)
    found = [body for name, body in zip(parts[1::2], parts[2::2], strict=True) if name == title]
    assert found, 'fuzz/RUNS.md has no section "## {}"'.format(title)
    return found[-1]

def table(text: str) -> list[dict[str, str]]:
    """The rows of the first Markdown table of ``text``, by column name."""
    lines = [line for line in text.splitlines() if line.startswith('|')]
    assert len(lines) >= 2, 'no table in {!r}'.format(text[:80])
    cells = [[c.strip() for c in line.strip('|').split('|')] for line in lines]
    header = cells[0]
    assert set(''.join(cells[1])) <= set('-: '), 'a table without its header line'
    for row in cells[2:]:
        assert len(row) == len(header), 'a row of {} cells under {}: {}'.format(
            len(row), header, row)
    return [dict(zip(header, row, strict=True)) for row in cells[2:]]

def number(cell: str) -> int:
    return int(cell.replace(',', ''))

def log() -> list[Run]:
    rows = table(section(RUNS.read_text(), 'Log'))
    return [
        Run(r['date'], r['target'], r['coverage'], r['commit'], number(r['seconds']),
            number(r['inputs']), r['result'])
        for r in rows
    ]

def totals() -> list[dict[str, str]]:
    return table(section(RUNS.read_text(), 'Totals'))

def test_log_rows_name_commits() -> None:
    """Each run of the log names its date, its commit and a run's length."""
    runs = log()
    assert runs
    for run in runs:
        assert DATE.fullmatch(run.date), run
        assert run.target in TARGETS, run
        assert run.coverage in ('python', 'python+gcc'), run
        assert COMMIT.fullmatch(run.commit), 'a run without its commit: {}'.format(run)
        assert run.seconds >= MIN_SECONDS, 'a top-up, not a run: {}'.format(run)
        assert run.inputs > 0, run

def test_every_target_has_a_total() -> None:
    """
    Every fuzz target has a total, none of a target that is gone; a total
    per commit fuzzed (a target fuzzed again from a newer commit starts a
    new total), one for each commit of the target's runs in the log.
    """
    rows = totals()
    assert {row['target'] for row in rows} == set(TARGETS)
    pairs = [(row['target'], row['commit']) for row in rows]
    assert len(pairs) == len(set(pairs)), 'two totals of one target and commit'
    assert set(pairs) == {(run.target, run.commit) for run in log()}

@pytest.mark.parametrize('target', list(TARGETS))
def test_total_is_its_commits_runs(target: str) -> None:
    """
    A total names its commit, and its seconds and inputs are the sums of
    that commit's runs of the target in the log (both coverages); its date
    is their last.
    """
    for row in (r for r in totals() if r['target'] == target):
        assert COMMIT.fullmatch(row['commit']), row
        runs = [r for r in log() if r.target == target and r.commit == row['commit']]
        assert runs, 'no run of {} at {} in the log'.format(target, row['commit'])
        assert number(row['seconds']) == sum(r.seconds for r in runs), row
        assert number(row['inputs']) == sum(r.inputs for r in runs), row
        assert row['date'] == max(r.date for r in runs), row
        assert row['coverage'] == ' + '.join(dict.fromkeys(r.coverage for r in runs)), row
        findings = sum(not r.result.startswith('ok') for r in runs)
        assert number(row['findings']) == findings, row

def test_coverage_shim_in_repository() -> None:
    """
    ``scripts/fuzz.sh --gcc-cov`` builds ``fuzz/gcc_cov.c``: it is in the
    checkout and git does not ignore it (``*.c``, for Cython's output,
    kept it out of every commit, and ``--gcc-cov`` failed in a clone).
    """
    assert (ROOT / 'fuzz' / 'gcc_cov.c').is_file()
    ignored = git('check-ignore', '-q', 'fuzz/gcc_cov.c')
    assert ignored.returncode != 0, 'git ignores fuzz/gcc_cov.c'  # 0: ignored

def git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(['git', '-C', str(ROOT), *args], capture_output=True, text=True,
                          check=False)

def test_commits_are_history() -> None:
    """
    The commits of the log are this checkout's history (HEAD or before
    it), when it has the history: a fresh clone; an unpacked archive or a
    shallow clone checks the names only (test_log_rows_name_commits).
    """
    shallow = git('rev-parse', '--is-shallow-repository')
    if shallow.returncode != 0 or shallow.stdout.strip() != 'false':
        return
    for commit in sorted({run.commit for run in log()}):
        found = git('merge-base', '--is-ancestor', commit, 'HEAD')
        assert found.returncode == 0, 'commit {} of fuzz/RUNS.md is not in the history' \
            ' of HEAD: {}'.format(commit, found.stderr.strip())
