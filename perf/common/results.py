"""
The results of the RbFly benchmarks in ``perf/``.

The benchmarks measure something per implementation (a codec, a client
library, ...), print a table and optionally write a JSON document for later
plotting.  This module holds the parts which are the same for all of them:

- environment metadata (Python, library versions, CPU, host, date, the
  work tree's commit)
- rate calculation and medians
- ratio formatting (``rbfly / rbfly-0.10 = 2.3x``)
- plain text table rendering
- JSON writing
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from perf.common import ROOT

JsonDict = dict[str, Any]
Align = Literal['<', '>']

# packages whose versions are interesting for most perf scripts
DEFAULT_PACKAGES: tuple[str, ...] = (
    'rbfly',
    'rstream',
    'python-qpid-proton',
    'aiokafka',
    'msgpack',
    'uvloop',
    'Cython',
)


def package_version(name: str) -> str | None:
    """Version of an installed distribution, or ``None`` if missing."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def wheel_info(name: str) -> dict[str, str] | None:
    """
    ``Generator`` and ``Tag`` of the wheel a distribution was installed from.

    Tells, for example, whether a Cython extension was built locally
    (``linux_x86_64`` tag) or came from a prebuilt ``manylinux`` wheel.
    """
    try:
        text = metadata.distribution(name).read_text('WHEEL')
    except metadata.PackageNotFoundError:
        return None
    if text is None:
        return None
    info: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(':')
        if sep and key.strip() in ('Generator', 'Tag'):
            info[key.strip()] = value.strip()
    return info


def cpu_model() -> str:
    """CPU model name from ``/proc/cpuinfo`` (Linux), else ``platform``."""
    try:
        with open('/proc/cpuinfo', encoding='utf-8') as f:
            for line in f:
                key, sep, value = line.partition(':')
                if sep and key.strip() == 'model name':
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _read_sys(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding='ascii').strip()
    except OSError:
        return None


def env_metadata(packages: Iterable[str] = DEFAULT_PACKAGES) -> JsonDict:
    """Describe the machine and the interpreter running a benchmark."""
    try:
        usable_cores: int | None = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable_cores = None
    return {
        'date': dt.datetime.now(dt.UTC).isoformat(timespec='seconds'),
        'hostname': socket.gethostname(),
        'python': {
            'version': platform.python_version(),
            'implementation': platform.python_implementation(),
            'build': ' '.join(platform.python_build()),
            'compiler': platform.python_compiler(),
            'executable': sys.executable,
            'prefix': sys.prefix,
        },
        'packages': {name: package_version(name) for name in packages},
        'platform': platform.platform(),
        'cpu': {
            'model': cpu_model(),
            'cores': os.cpu_count(),
            'usable_cores': usable_cores,
            'governor': _read_sys(
                '/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor'
            ),
        },
        'source': source_info(),
    }


REPORT_OUTPUTS = ('doc/perf/', 'doc/perf.rst')
"""What ``scripts/perf-report.sh`` writes: not a change to what is measured."""


def tree_changes(porcelain: str) -> list[str]:
    """
    The changes of ``git status --porcelain`` that change what is measured:
    all but the report's outputs (:py:data:`REPORT_OUTPUTS`).
    """
    return [line for line in porcelain.splitlines()
            if line.strip() and not _status_path(line).startswith(REPORT_OUTPUTS)]


def _status_path(line: str) -> str:
    """The path of a ``git status --porcelain`` line, its status letters
    (``XY``, either blank) before it."""
    return line.split(None, 1)[-1]


def source_info() -> JsonDict:
    """
    Commit of the work tree, whether the tree is clean, and its
    uncommitted changes (the benchmarks measure the work tree as it is).

    ``clean`` is false when any tracked file differs from the commit (a
    change to ``perf/`` changes what is measured as much as one to
    ``rbfly/``), except the report's own outputs (:py:data:`REPORT_OUTPUTS`:
    ``scripts/perf-report.sh`` writes each result there as its benchmark
    ends, and the next benchmark of the same run measures the same code);
    files git does not track are left out (the peers' virtualenvs and the
    results live there).  ``rbfly_changes`` are the
    changes to ``rbfly/`` alone, as results written before ``clean`` have
    them.  The report (:py:mod:`perf.report.page`) marks every figure of
    a result that is not from a clean tree.
    """
    def git(*args: str) -> tuple[int, str]:
        try:
            p = subprocess.run(
                ['git', '-C', str(ROOT), *args], capture_output=True, text=True, timeout=30,
                cwd=tempfile.gettempdir(), check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as ex:
            return -1, str(ex)
        return p.returncode, (p.stdout + p.stderr).strip()

    rc, commit = git('rev-parse', 'HEAD')
    if rc != 0:
        return {'commit': None, 'clean': None}
    rc, status = git('status', '--porcelain', '--untracked-files=no')
    changes = tree_changes(status) if rc == 0 else None
    return {
        'commit': commit,
        'clean': None if changes is None else not changes,
        'changes': changes,
        'rbfly_changes': [c for c in changes or () if _status_path(c).startswith('rbfly/')],
    }


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def rate(count: int, seconds: float) -> float:
    """Operations per second of ``count`` operations in ``seconds``."""
    return count / seconds if seconds > 0 else float('inf')


def timing_summary(count: int, times: Sequence[float]) -> JsonDict:
    """
    Summary of timing rounds, each round running ``count`` operations.

    The median rate is computed from the median round time (for an odd
    number of rounds both are the same round).
    """
    median_time = median(times)
    return {
        'times': list(times),
        'rates': [rate(count, t) for t in times],
        'median_time': median_time,
        'median_rate': rate(count, median_time),
        'min_time': min(times),
        'max_time': max(times),
    }


def ratio(value: float | None, reference: float | None) -> float | None:
    if value is None or reference is None or reference <= 0:
        return None
    return value / reference


def format_ratio(value: float | None) -> str:
    """Format a ratio like ``2.3x``, ``23x``, ``0.52x``; ``-`` if unknown."""
    if value is None:
        return '-'
    if value >= 10:
        return f'{value:.0f}x'
    if value >= 1:
        return f'{value:.1f}x'
    return f'{value:.2f}x'


def ok_rate(entry: JsonDict | None) -> float | None:
    """Median rate of a result entry that ran ok, else None."""
    if not entry or entry.get('status') != 'ok':
        return None
    value: float = entry['median_rate']
    return value

def format_rate(value: float | None) -> str:
    """Format a rate with thousands separators, e.g. ``1,063,452``."""
    if value is None:
        return '-'
    return f'{value:,.0f}'


CEILINGS = ('ceiling', 'ceiling-polling')
"""
The minimal clients of the benchmarks (``perf/common/raw.py``): asleep while
they wait, and polling the event loop.
"""


def best_ceiling(impls: JsonDict) -> float | None:
    """
    The broker's ceiling in a scenario: the best median of the ceiling
    clients, asleep or polling while they wait (on two cores either can
    be the faster; neither alone is a ceiling).
    """
    rates = [r for r in (ok_rate(impls.get(name)) for name in CEILINGS) if r]
    return max(rates) if rates else None


def format_table(
        headers: Sequence[str],
        rows: Iterable[Sequence[str]],
        align: Sequence[Align] | None = None,
) -> str:
    """
    Render a plain text table.

    :param headers: Column titles.
    :param rows: Rows of already formatted cells.
    :param align: Alignment per column (``<`` or ``>``); left aligned first
        column and right aligned others by default.
    """
    data = [list(r) for r in rows]
    n = len(headers)
    if any(len(r) != n for r in data):
        raise ValueError('every row needs exactly one cell per header')
    right: list[Align] = ['>'] * (n - 1)
    alignment: Sequence[Align] = align if align is not None else ['<', *right]
    if len(alignment) != n:
        raise ValueError('align needs exactly one entry per header')
    widths = [
        max([len(headers[i])] + [len(r[i]) for r in data]) for i in range(n)
    ]

    def fmt(cells: Sequence[str]) -> str:
        parts = (f'{c:{a}{w}}' for c, a, w in zip(cells, alignment, widths, strict=True))
        return '  '.join(parts).rstrip()

    lines = [fmt(headers), '  '.join('-' * w for w in widths)]
    lines.extend(fmt(r) for r in data)
    return '\n'.join(lines)


def write_json(path: str | Path, data: Mapping[str, Any]) -> Path:
    """
    Write a JSON document, creating parent directories.

    The document is written to a temporary file first and renamed, so a
    reader never sees a half written file.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f'.{target.name}.tmp')
    with tmp.open('w', encoding='utf-8') as f:
        json.dump(data, f, indent=2, sort_keys=False)
        f.write('\n')
    tmp.replace(target)
    return target


def read_json(path: str | Path) -> JsonDict:
    with Path(path).open(encoding='utf-8') as f:
        data = json.load(f)
    if not isinstance(data, dict):
        raise ValueError(f'{path}: expected a JSON object')
    return data


def log(*args: object) -> None:
    """Progress messages go to stderr, results to stdout."""
    print(*args, file=sys.stderr, flush=True)


def tree_clean(env: Mapping[str, Any]) -> bool | None:
    """
    Whether a result was measured on a clean work tree: ``False`` when it
    had uncommitted changes, ``None`` when the result does not say.

    Results since ``clean`` was recorded say it in ``env['source']``;
    older ones listed their changes to ``rbfly/`` only
    (``rbfly_changes``); the instruction counts record ``env['dirty']``.
    """
    source = env.get('source')
    if isinstance(source, Mapping) and source.get('commit'):
        clean = source.get('clean')
        if clean is not None:
            return bool(clean)
        if source.get('rbfly_changes'):
            return False
        return None
    if env.get('commit') and env.get('dirty') is not None:
        return not env['dirty']
    return None


def tree_text(env: Mapping[str, Any]) -> str:
    """The commit of a result and the state of its tree, in words."""
    source = env.get('source')
    commit = source.get('commit') if isinstance(source, Mapping) else env.get('commit')
    if not commit:
        return 'commit not recorded'
    clean = tree_clean(env)
    if clean:
        return 'commit {}, clean tree'.format(commit[:7])
    if clean is None and isinstance(source, Mapping) and source.get('rbfly_changes') == []:
        return 'commit {}, rbfly/ clean (the rest not recorded)'.format(commit[:7])
    if clean is None:
        return 'commit {}, tree state not recorded'.format(commit[:7])
    changes = source.get('changes') or source.get('rbfly_changes') \
        if isinstance(source, Mapping) else None
    files = ', '.join(c.split()[-1] for c in changes or ())
    return 'commit {}, modified tree{}: to be re-run'.format(
        commit[:7], ' ({})'.format(files) if files else '')
