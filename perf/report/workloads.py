"""
The report's pages of ``perf.workloads``: from its JSON, a summary
table, a table and a figure per workload.

Writes ``workloads-summary.rst.inc`` and ``workloads.rst.inc`` (the
tables, included by ``doc/perf.rst``) and ``workloads-<workload>.png``
into ``--output-dir``. Every figure names
the broker, the loop, the date, the machine, Python and rbfly's commit.

Example::

    python -m perf.report.workloads --output-dir doc/perf perf/results/workloads.json
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from perf.common.results import JsonDict, log, read_json
from perf.report.plot import COLOURS, OTHER_COLOUR, _figure, _save, legend_outside
from perf.report.tables import escape, list_table, run_caption

KIND = 'workloads'
ORDER = ('rbfly', 'rbfly-linger1', 'rbfly-0.10', 'rstream', 'java', 'java-bpd1', 'aiokafka',
         'null')
NAMES = {
    'rbfly-linger1': 'rbfly, 1 ms linger',
    'java': 'Java (tool)', 'java-bpd1': 'Java, 1 ms batches', 'aiokafka': 'aiokafka (Kafka)',
    # the harness with no client: its share of each Python client's figures
    'null': 'harness alone (no client)',
}
SIZE_NAMES = {'10': '10 B', '1024': '1 KiB', '16384': '16 KiB', '524288': '512 KiB'}
Getter = Callable[[JsonDict], float | None]


def ok(entry: JsonDict | None) -> JsonDict | None:
    return entry if entry and entry.get('status') == 'ok' else None


def impls_of(cases: JsonDict) -> list[str]:
    seen = {impl for impls in cases.values() for impl in impls}
    return [i for i in ORDER if i in seen] + sorted(seen - set(ORDER))


def name(impl: str) -> str:
    return NAMES.get(impl, impl)


def rate(entry: JsonDict) -> float | None:
    value: float | None = entry.get('rate')
    return value


def mb(entry: JsonDict) -> float | None:
    if entry.get('mb_per_s') is not None:
        value: float = entry['mb_per_s']
        return value
    r, size = entry.get('rate'), entry.get('size')
    return r * size / 1e6 if r is not None and size else None


def lat(kind: str, p: str) -> Getter:
    """A latency percentile in µs; the Java tool's (ms) converted."""
    def get(entry: JsonDict) -> float | None:
        q = entry.get(kind)
        if q:
            value: float = q[p + '_us']
            return value
        tool = entry.get('latency_ms' if kind == 'end_to_end' else 'confirm_latency_ms')
        if tool and tool.get(p) is not None:
            return float(tool[p]) * 1000
        return None
    return get


def growth(entry: JsonDict) -> float | None:
    """What a run added to its process's resident memory (peak minus start)."""
    value: float | None = entry.get('rss_growth_mb')
    if value is None and entry.get('rss_max_mb') is not None:
        value = entry['rss_max_mb'] - entry['rss_start_mb']
    return value


def cpu(entry: JsonDict) -> float | None:
    value: float | None = entry.get('cpu_us_per_msg')
    return value


def _get(entry: JsonDict | None, get: Getter) -> float | None:
    entry = ok(entry)
    return None if entry is None else get(entry)


def fmt(value: float | None, unit: str = '') -> str:
    if value is None:
        return '-'
    if value == 0:
        return '0' + unit
    if value >= 100:
        text = '{:,.0f}'.format(value)
    elif value >= 10:
        text = '{:.1f}'.format(value)
    else:
        text = '{:.2f}'.format(value)
    return text + unit


BUSY = 0.85
"""A process using this much of a core sets the pace (a Python client has one)."""


def bound(entry: JsonDict) -> str:
    """
    What set a run's pace: the client (its process busy 0.85 cores or more,
    all its threads together), else the broker (likewise, all its
    schedulers), else the machine (all its cores 90% busy), else waiting
    (round trips, a paced sender, a slow application). Without the
    broker's figures (the Java tool's runs), only whether the client was.
    """
    client = entry.get('cpu_share')
    if client is None and entry.get('cpu_us_per_msg') and entry.get('rate'):
        client = entry['cpu_us_per_msg'] * entry['rate'] / 1e6
    if client is not None and client >= BUSY:
        return 'client-bound'
    broker = entry.get('broker_cpu_share')
    if broker is not None and broker >= BUSY:
        return 'broker-bound'
    busy = entry.get('machine_busy')
    if busy is not None and busy >= 0.9:
        return 'machine-bound'
    if broker is None or busy is None:   # the Java tool's runs: the JVM's CPU only
        return 'not client-bound'
    return 'waits'


def cell(entry: JsonDict | None, *parts: tuple[Getter, str], mark: bool = False) -> str:
    """A result's figures (``-`` for one it lacks), or why it has none."""
    if entry is None:
        return ''
    if entry.get('status') != 'ok':
        return '{}: {}'.format(entry.get('status'), entry.get('reason') or entry.get('error'))
    text = ', '.join(fmt(get(entry), unit) for get, unit in parts)
    return '{} ({})'.format(text, bound(entry)) if mark else text


def achieved(entry: JsonDict) -> float | None:
    """Messages sent a second at a fixed load (the Java tool: its published rate)."""
    value: float | None = entry.get('achieved', entry.get('published_rate'))
    return value


def tool_latency(entry: JsonDict) -> str | None:
    """The Java tool's latencies, apart: whole ms, one message in 100, from its send."""
    e2e, confirm = entry.get('latency_ms'), entry.get('confirm_latency_ms')
    if not e2e and not confirm:
        return None
    def ms(q: JsonDict | None) -> str:
        return '-' if not q else '{:g}/{:g} ms'.format(q.get('p50', 0), q.get('p99', 0))
    return ('{} msg/s; tool (from its send, whole ms, sampled): confirm p50/p99 {},'
            ' end to end p50/p99 {}; {} µs CPU'.format(
                fmt(achieved(entry)), ms(confirm), ms(e2e), fmt(cpu(entry))))


#
# tables
#

Table = tuple[str, list[str], list[list[str]]]

CELLS: dict[str, tuple[str, Sequence[tuple[Getter, str]]]] = {
    'sizes': ('msg/s, MB/s, client CPU µs/msg',
              ((rate, ' msg/s'), (mb, ' MB/s'), (cpu, ' µs'))),
    'fanout': ('msg/s (all publishers), client CPU µs/msg', ((rate, ' msg/s'), (cpu, ' µs'))),
    'latency': ('msg/s sent; confirm p50, p99, p99.9; end to end p50, p99, p99.9; client'
                ' CPU µs/msg',
                ((achieved, ' msg/s'), (lat('confirm', 'p50'), ''), (lat('confirm', 'p99'), ''),
                 (lat('confirm', 'p999'), ' µs confirm'), (lat('end_to_end', 'p50'), ''),
                 (lat('end_to_end', 'p99'), ''), (lat('end_to_end', 'p999'), ' µs end to end'),
                 (cpu, ' µs CPU'))),
    'slow': ('msg/s, client CPU µs/msg, RSS start, max, final, growth',
             ((rate, ' msg/s'), (cpu, ' µs'), (lambda e: e.get('rss_start_mb'), ''),
              (lambda e: e.get('rss_max_mb'), ''), (lambda e: e.get('rss_final_mb'), ' MB'),
              (growth, ' MB growth'))),
    'compression': ('msg/s, client CPU µs/msg, bytes written per message, read back msg/s',
                    ((rate, ' msg/s'), (cpu, ' µs'),
                     (lambda e: e.get('wire_bytes_per_msg'), ' B/msg'),
                     (lambda e: e.get('read_rate'), ' msg/s read'))),
}

TITLES = {
    'sizes': 'Message sizes: publishing, then reading back from the first offset',
    'fanout': 'Publishers on as many streams at once: one connection (one), one each (many)',
    'latency': 'Latency at a fixed offered load (open loop, from when each message was due)',
    'slow': 'A slow application: 50 µs of CPU per message, 1 KiB messages',
    'compression': 'JSON events (about 230 bytes): one by one (plain), and in sub-entry batches'
                   ' of 100 uncompressed (batches) or compressed (Kafka: its own record'
                   ' batches)',
}


def case_name(workload: str, case: str) -> str:
    if workload == 'sizes':
        size, _, op = case.partition('/')
        return '{} {}'.format(SIZE_NAMES.get(size, size), op)
    if workload == 'latency' and case.isdigit():
        return '{:,} msg/s offered'.format(int(case))
    return case


def workload_table(workload: str, cases: JsonDict) -> Table:
    what, parts = CELLS[workload]
    impls = impls_of(cases)
    # at a fixed offered load, or a slow application's, the pace is given
    mark = workload in ('sizes', 'fanout', 'compression')
    rows = []
    for case, entries in cases.items():
        cells = []
        for i in impls:
            entry = ok(entries.get(i))
            text = tool_latency(entry) if entry is not None and workload == 'latency' else None
            cells.append(text or cell(entries.get(i), *parts, mark=mark))
        rows.append([case_name(workload, case), *cells])
    if mark:
        what += '; what set the pace'
    return ('{} ({})'.format(TITLES[workload], what), ['case', *map(name, impls)], rows)


CPU_ROW = 'client CPU at 10,000 msg/s'
SUMMARY: Sequence[tuple[str, str, str, Getter, str]] = (
    ('sizes', '1024/publish', 'publishing 1 KiB messages', mb, ' MB/s'),
    ('sizes', '1024/consume', 'reading 1 KiB messages', mb, ' MB/s'),
    ('sizes', '524288/publish', 'publishing 512 KiB messages', mb, ' MB/s'),
    ('fanout', '100/one', '100 publishers on one connection', rate, ' msg/s'),
    ('latency', '10000', 'end to end p99 at 10,000 msg/s (Java: its tool\'s, see below)',
     lat('end_to_end', 'p99'), ' µs'),
    ('latency', '10000', CPU_ROW + ' (a Python client\'s includes the'
     ' harness\'s: its own column)', cpu, ' µs/msg'),
    ('slow', '50us', 'a 50 µs/message application: msg/s', rate, ' msg/s'),
    ('slow', '50us', 'what it added to the memory', growth, ' MB'),
    ('compression', 'zstd', 'zstd-compressed JSON', rate, ' msg/s'),
    ('compression', 'zstd', 'its bytes per message', lambda e: e.get('wire_bytes_per_msg'), ' B'),
)


NOT_RUN = '\N{EN DASH}'
"""A summary cell of a client not run in that workload."""


def harness_measured(results: JsonDict) -> bool:
    """Whether the run measured the fixed-rate harness alone (``null``)."""
    return 'null' in results.get('latency', {}).get('10000', {})


def summary_table(results: JsonDict) -> Table:
    """
    Each workload's headline figure by client; a client not run in a
    workload is a dash. The client CPU at a fixed load is left out of a
    run that did not measure the harness alone (``null``): each Python
    client's figure holds the harness's loop, which such runs do not tell
    apart (they spun on uvloop's early wake-ups, a core a client).
    """
    impls = [i for i in ORDER if any(
        i in entries for cases in results.values() for entries in cases.values())]
    rows = []
    for workload, case, what, get, unit in SUMMARY:
        entries = results.get(workload, {}).get(case)
        if entries is None or (what.startswith(CPU_ROW) and not harness_measured(results)):
            continue
        rows.append([what, *(fmt(_get(entries.get(i), get), unit) if i in entries else NOT_RUN
                             for i in impls)])
    title = 'Summary: each workload\'s headline figure ({}: not run in that workload;' \
        ' -: run, the figure not reported)'.format(NOT_RUN)
    return (title, ['workload', *map(name, impls)], rows)


def summary_notes(results: JsonDict) -> str:
    """What the summary leaves out, and why."""
    if harness_measured(results):
        return ''
    return ('The client CPU at a fixed load is left out: this run did not measure the'
            ' harness alone (null), whose loop was part of each Python client\'s figure.\n')


def caption(doc: JsonDict) -> str:
    return run_caption(doc, KIND).replace('median of 1 rounds', 'one run per case')


def write_tables(doc: JsonDict, out_dir: Path) -> list[Path]:
    """
    ``workloads-summary.rst.inc`` (the summary table, which the report
    leads with) and ``workloads.rst.inc`` (a table per workload).
    """
    results = doc['results']
    run = 'Run: {}\n'.format(escape(caption(doc)))
    summary = out_dir / 'workloads-summary.rst.inc'
    summary.write_text('\n'.join([list_table(summary_table(results)), run,
                                  summary_notes(results)]).rstrip() + '\n', encoding='utf-8')
    parts = [list_table(workload_table(workload, cases)) for workload, cases in results.items()]
    tables = out_dir / 'workloads.rst.inc'
    tables.write_text('\n'.join([*parts, run]), encoding='utf-8')
    return [summary, tables]


#
# figures
#

def bars(
        ax: Any, title: str, groups: Sequence[str],
        series: Sequence[tuple[str, list[float | None]]], ylabel: str, log: bool = False,
) -> None:
    """Grouped bars: a group per case, a bar per implementation."""
    n = max(1, len(series))
    width = 0.8 / n
    for k, (impl, values) in enumerate(series):
        xs = [g + (k - (n - 1) / 2) * width for g in range(len(groups))]
        pairs = [(x, v) for x, v in zip(xs, values, strict=True) if v is not None]
        if pairs:
            ax.bar([x for x, _ in pairs], [v for _, v in pairs], width,
                   label=name(impl), color=COLOURS.get(impl, OTHER_COLOUR))
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=30, ha='right', fontsize=7)
    ax.set_title(title, fontsize=9)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.tick_params(axis='y', labelsize=7)
    if log:
        ax.set_yscale('log')
    legend_outside(ax, 6)


PANELS: dict[str, Sequence[tuple[str, Callable[[str], bool], Getter, str, bool]]] = {
    'sizes': (
        ('publishing', lambda c: c.endswith('/publish'), mb, 'MB/s', True),
        ('reading back', lambda c: c.endswith('/consume'), mb, 'MB/s', True),
    ),
    'fanout': (
        ('one connection', lambda c: c.endswith('/one'), rate, 'msg/s', False),
        ('a connection each', lambda c: c.endswith('/many'), rate, 'msg/s', False),
    ),
    'latency': (
        ('confirmation p99', lambda c: True, lat('confirm', 'p99'), 'µs', True),
        ('end to end p50', lambda c: True, lat('end_to_end', 'p50'), 'µs', True),
        ('end to end p99', lambda c: True, lat('end_to_end', 'p99'), 'µs', True),
    ),
    'slow': (
        ('msg/s (the application\'s pace: 20,000)', lambda c: True, rate, 'msg/s', False),
        ('resident memory added (peak - start)', lambda c: True, growth, 'MB', False),
    ),
    'compression': (
        ('msg/s', lambda c: True, rate, 'msg/s', True),
        ('bytes written per message', lambda c: True,
         lambda e: e.get('wire_bytes_per_msg'), 'B', False),
    ),
}


def plot_workload(doc: JsonDict, workload: str, path: Path) -> Path:
    cases = doc['results'][workload]
    impls = impls_of(cases)
    panels = PANELS[workload]
    fig, axes = _figure(len(panels), '{}: {}'.format(TITLES[workload], caption(doc)),
                        width=5.0)
    for ax, (title, chosen, get, ylabel, log_scale) in zip(axes, panels, strict=True):
        keys = [c for c in cases if chosen(c)]
        groups = [case_name(workload, c).replace(' publish', '').replace(' consume', '')
                  for c in keys]
        series = [(i, [_get(cases[c].get(i), get) for c in keys]) for i in impls]
        bars(ax, title, groups, series, ylabel, log_scale)
    return _save(fig, path)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog='python -m perf.report.workloads',
        description='Tables and figures of the workloads (python -m perf.workloads)',
    )
    parser.add_argument('json', type=Path, help='python -m perf.workloads --json file')
    parser.add_argument('--output-dir', type=Path, default=Path('doc/perf'))
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    doc = read_json(args.json)
    if doc.get('benchmark') != KIND:
        log('error: {} holds {} results, not {}'.format(args.json, doc.get('benchmark'), KIND))
        return 2
    args.output_dir.mkdir(parents=True, exist_ok=True)
    written = write_tables(doc, args.output_dir)
    for workload in doc['results']:
        written.append(plot_workload(doc, workload, args.output_dir / 'workloads-{}.png'.format(
            workload)))
    for path in written:
        log('written {}'.format(path))
    return 0


if __name__ == '__main__':
    sys.exit(main())
