"""
Write the reST tables and the environment section of the performance
report page (``doc/perf.rst``) from the JSON results of the benchmarks.

The page shows tables generated from the JSON rather than the benchmarks'
text output, so the figures on the page are exactly the ones plotted, the
columns stay the same whatever wrote the results (``perf.publish``,
``perf.consume``, ``perf.codec`` or another engineer's
``perf.java_client`` with the same schema) and every table says which broker
and event loop it was measured with.

Several JSON files of the same benchmark kind are merged: their
``results[key]['implementations']`` are put together (a later file wins for
an implementation present in both), and every implementation remembers the
run it came from, so captions can tell apart runs made at different times
or against different brokers.  ``perf.report.plot`` uses the same merging.

The files are written as ``*.rst.inc``, not ``*.rst``: Sphinx would build
any ``*.rst`` below ``doc/`` as a page of its own (and warn that it is in no
toctree); ``doc/perf.rst`` includes them with ``.. include::``.

Examples::

    python -m perf.report --output-dir doc/perf perf/results/publish.json \\
        perf/results/consume.json perf/results/codec.json perf/results/java-publish.json
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from perf.common.results import JsonDict, log, read_json, tree_text

# file name of the outputs of a benchmark kind
KINDS = {'publish': 'publish', 'consume': 'consume', 'amqp-codec': 'codec'}
REFERENCES = ('rbfly', 'rbfly-0.10')
SUFFIX = '.rst.inc'
MISSING = 'n/a'
DASH = '\N{EN DASH}'

Row = list[str]
Table = tuple[str, list[str], list[Row]]   # caption, headers, rows


#
# loading and merging
#

def load_groups(paths: Iterable[Path]) -> dict[str, JsonDict]:
    """
    Read result files and merge those of the same benchmark kind.

    Returns the merged documents by benchmark kind (``publish``,
    ``consume``, ``amqp-codec``), in the order the kinds first appear.
    """
    grouped: dict[str, list[tuple[Path, JsonDict]]] = {}
    for path in paths:
        doc = read_json(path)
        kind = doc.get('benchmark')
        if kind not in KINDS:
            raise ValueError('{}: unknown benchmark {!r}'.format(path, kind))
        grouped.setdefault(kind, []).append((path, doc))
    return {kind: merge(docs) for kind, docs in grouped.items()}


def merge(docs: Sequence[tuple[Path, JsonDict]]) -> JsonDict:
    """
    Merge result documents of one benchmark kind.

    The merged document has the ``params`` and ``env`` of the first one, a
    ``sources`` list (file, ``env``, ``params`` of every run) and the
    implementations of all of them, each with ``_source``: the index of its
    run in ``sources``.
    """
    first = docs[0][1]
    kind = first['benchmark']
    merged: JsonDict = {
        'benchmark': kind, 'params': first.get('params', {}), 'env': first.get('env', {}),
        'sources': [], 'results': {},
    }
    results: JsonDict = merged['results']
    for index, (path, doc) in enumerate(docs):
        if doc['benchmark'] != kind:
            raise ValueError('{}: {} results, not {}'.format(path, doc['benchmark'], kind))
        merged['sources'].append({
            'index': index, 'path': path.name,
            'env': doc.get('env', {}), 'params': doc.get('params', {}),
        })
        for key, res in doc['results'].items():
            if kind == 'amqp-codec':   # results are the implementations
                _add_impl(results, key, res, index, path)
                continue
            target = results.setdefault(key, {**res, 'implementations': {}})
            for name, entry in res['implementations'].items():
                _add_impl(target['implementations'], name, entry, index, path)
    return merged


def _add_impl(impls: JsonDict, name: str, entry: JsonDict, index: int, path: Path) -> None:
    if name in impls:
        log('{}: {} replaces the result of an earlier file'.format(path, name))
    impls[name] = {**copy.deepcopy(entry), '_source': index}


def implementations(doc: JsonDict) -> Iterable[tuple[str, JsonDict]]:
    """All ``(name, entry)`` of a merged document, every scenario."""
    if doc['benchmark'] == 'amqp-codec':
        yield from doc['results'].items()
        return
    for res in doc['results'].values():
        yield from res['implementations'].items()


#
# captions: every table and plot says the broker and the event loop
#

def broker_text(env: JsonDict, kind: str) -> str:
    broker = env.get('broker')
    if broker:
        return '{} {}'.format(broker.get('product') or 'broker', broker.get('version') or '?')
    return 'no broker (in-process codec)' if kind == 'amqp-codec' else 'broker not recorded'


def loop_text(env: JsonDict, kind: str) -> str:
    loop = env.get('loop')
    if loop:
        version = loop.get('version')
        return '{} {}'.format(loop['name'], version) if version else str(loop['name'])
    return 'no event loop' if kind == 'amqp-codec' else 'loop not recorded'


def machine_text(env: JsonDict) -> str:
    """The machine, Python and rbfly's commit of a run."""
    cpu = env.get('cpu') or {}
    cores = cpu.get('usable_cores') or cpu.get('cores') or '?'
    parts = ['{}-core {}'.format(cores, cpu.get('model') or 'CPU')]
    python = env.get('python')
    version = python.get('version') if isinstance(python, dict) else python
    if version:
        parts.append('Python {}'.format(version))
    if (env.get('source') or {}).get('commit'):
        parts.append('rbfly ' + tree_text(env))
    return ', '.join(parts)


def run_caption(source: JsonDict, kind: str) -> str:
    """Broker, loop, rounds, date and machine of one run."""
    env, params = source['env'], source['params']
    rounds = 'median of {} rounds'.format(params.get('rounds', '?'))
    if params.get('quick'):
        rounds += ' (--quick)'
    date = str(env.get('date', '?')).replace('T', ' ').replace('+00:00', ' UTC')
    return ', '.join([
        broker_text(env, kind), loop_text(env, kind), rounds, date, machine_text(env),
    ])


def caption(doc: JsonDict, names: Sequence[str] | None = None) -> str:
    """
    Caption of a table or plot of the implementations ``names`` (default:
    all); runs of several files are named one by one.
    """
    kind = doc['benchmark']
    used = _runs(doc, names)
    if len(used) == 1:
        return run_caption(doc['sources'][used[0][0]], kind)
    return '; '.join(
        'run {} ({}, {}): {}'.format(
            index + 1, doc['sources'][index]['path'], ', '.join(run_names),
            run_caption(doc['sources'][index], kind),
        )
        for index, run_names in used
    )


def _runs(doc: JsonDict, names: Sequence[str] | None) -> list[tuple[int, list[str]]]:
    """Runs with the implementations of ``names`` they hold."""
    runs: dict[int, list[str]] = {}
    for name, entry in implementations(doc):
        if names is not None and name not in names:
            continue
        run_names = runs.setdefault(entry.get('_source', 0), [])
        if name not in run_names:
            run_names.append(name)
    return sorted(runs.items()) or [(0, [])]


def label(doc: JsonDict, name: str, entry: JsonDict, names: Sequence[str]) -> str:
    """Implementation name, with its run if the table merges several."""
    if len(_runs(doc, names)) > 1:
        return '{} [run {}]'.format(name, entry.get('_source', 0) + 1)
    return name


#
# tables
#

def fmt_rate(value: float | None) -> str:
    return MISSING if value is None else '{:,.0f}'.format(value)


def fmt_ratio(value: float | None, reference: float | None) -> str:
    if value is None or not reference:
        return MISSING
    r = value / reference
    if r >= 10:
        return '{:.0f}x'.format(r)
    if r >= 1:
        return '{:.1f}x'.format(r)
    return '{:.2f}x'.format(r) if r >= 0.1 else '{:.2g}x'.format(r)


def fmt_small(value: float | None) -> str:
    """Three significant digits or so: ``157``, ``12.4``, ``1.54``."""
    if value is None:
        return MISSING
    return '{:,.0f}'.format(value) if value >= 100 else (
        '{:.1f}'.format(value) if value >= 10 else '{:.2f}'.format(value)
    )


def fmt_share(value: float | None) -> str:
    return MISSING if value is None else '{:.0%}'.format(value)


def fmt_span(rates: Sequence[float]) -> str:
    if not rates:
        return MISSING
    return '{:,.0f}{}{:,.0f}'.format(min(rates), DASH, max(rates))


def _ok(impls: JsonDict) -> list[tuple[str, JsonDict]]:
    return [(n, r) for n, r in impls.items() if r.get('status') == 'ok']


def _median(entry: JsonDict | None) -> float | None:
    if not entry or entry.get('status') != 'ok':
        return None
    value = entry.get('median_rate')
    if value is None and entry.get('rates'):
        value = statistics.median(entry['rates'])
    return None if value is None else float(value)


def _rate_cells(entry: JsonDict, refs: Sequence[float | None]) -> Row:
    rate = _median(entry)
    span = fmt_span(entry.get('rates') or [])
    return [fmt_rate(rate), *(fmt_ratio(rate, ref) for ref in refs), span]


def _skipped(impls: JsonDict) -> str:
    return ''.join(
        '; {} skipped: {}'.format(n, r.get('reason', r.get('status')))
        for n, r in impls.items() if r.get('status') != 'ok'
    )


RATE_HEADERS = ['msg/s (median)', 'vs rbfly', 'vs rbfly-0.10', 'min{}max msg/s'.format(DASH)]
CPU_HEADERS = ['client CPU µs/msg', 'broker CPU']
LATENCY = ('p50_us', 'p95_us', 'p99_us')

PUBLISH_TITLES = {
    'single': 'Publishing single messages, each confirmation awaited',
    'batch': 'Publishing batches of {batch}, each batch confirmation awaited',
    'pipelined': 'Pipelined publishing, confirmations awaited at the end',
}


def ceiling_of(impls: JsonDict, source: int) -> float | None:
    """
    The broker's ceiling in a scenario of run ``source`` (``perf.report.tables``
    merges runs; each line is held against its own run's): the best
    median of the run's ``ceiling`` lines (the minimal client asleep while
    it waits, and polling; on two cores either can be the faster).
    """
    best = [
        rate for n, r in impls.items()
        if n.startswith('ceiling') and r.get('_source', 0) == source
        and (rate := _median(r))
    ]
    return max(best) if best else None


def scenario_tables(doc: JsonDict) -> list[Table]:
    """
    A table per scenario of ``publish`` or ``consume`` results; ``of
    ceiling`` is each line's share of :py:func:`ceiling_of` (none for
    aiokafka, whose broker is another).
    """
    tables = []
    for key, res in doc['results'].items():
        impls = res['implementations']
        ok = _ok(impls)
        if not ok:
            continue
        refs = [_median(impls.get(n)) for n in REFERENCES]
        names = [n for n, _ in ok]
        unit = next((r['latency'].get('unit') for _, r in ok if r.get('latency')), None)
        headers = ['implementation', *RATE_HEADERS, 'of ceiling', *CPU_HEADERS]
        if unit:
            headers += ['{} µs/{}'.format(p[:3], unit) for p in LATENCY]
        rows = []
        for name, r in ok:
            ceiling = ceiling_of(impls, r.get('_source', 0))
            share = None if name == 'aiokafka' or not ceiling else (_median(r) or 0) / ceiling
            row = [label(doc, name, r, names), *_rate_cells(r, refs), fmt_share(share),
                   fmt_small(r.get('cpu_us_per_msg')), fmt_share(r.get('broker_cpu_share'))]
            if unit:
                lat = r.get('latency') or {}
                row += [fmt_small(lat.get(p)) for p in LATENCY]
            rows.append(row)
        title = '{} — {}{}'.format(_title(key, res), caption(doc, names), _skipped(impls))
        tables.append((title, headers, rows))
    return tables


def _title(key: str, res: JsonDict) -> str:
    if 'scenario' in res:   # publish
        what = PUBLISH_TITLES.get(res['scenario']) or str(res['scenario'])
        return '{} ({} messages, {:,})'.format(
            what.format(batch=res.get('batch')),
            res['format'].upper() if res['format'] == 'amqp' else res['format'], res['count'],
        )
    how = 'in batches of 100' if key == 'batch' else key
    return 'Consuming {:,} messages of a stream published {} ({:,} chunks of ~{:,.0f})'.format(
        res['count'], how, res.get('chunks', 0), res.get('chunk_mean', 0),
    )


def codec_tables(doc: JsonDict) -> list[Table]:
    impls = doc['results']
    ok = [(n, r) for n, r in _ok(impls) if 'encode' in r and 'decode' in r]
    if not ok:
        return []
    names = [n for n, _ in ok]
    headers = ['implementation', 'size (bytes)']
    for op in ('encode', 'decode'):
        headers += ['{} {}'.format(op, h) for h in RATE_HEADERS]
    rows = []
    for name, r in ok:
        row = [label(doc, name, r, names), str(r.get('encoded_size', MISSING))]
        for op in ('encode', 'decode'):
            refs = [_codec_rate(impls.get(n), op) for n in REFERENCES]
            row += _rate_cells({**r[op], 'status': 'ok'}, refs)
        rows.append(row)
    params = doc['params']
    title = 'AMQP 1.0 codec, {:,} messages per round (messages/second)'.format(
        params.get('count', 0),
    )
    return [('{} — {}{}'.format(title, caption(doc, names), _skipped(impls)), headers, rows)]


def _codec_rate(entry: JsonDict | None, op: str) -> float | None:
    if not entry or entry.get('status') != 'ok' or op not in entry:
        return None
    return _median({**entry[op], 'status': 'ok'})


TABLES: dict[str, Callable[[JsonDict], list[Table]]] = {
    'publish': scenario_tables,
    'consume': scenario_tables,
    'amqp-codec': codec_tables,
}


def escape(text: str) -> str:
    """Text as reST inline text (no markup, no references)."""
    for char in '\\*`|_[':
        text = text.replace(char, '\\' + char)
    return text


def list_table(table: Table) -> str:
    title, headers, rows = table
    lines = ['.. list-table:: {}'.format(escape(title)), '   :header-rows: 1', '']
    for row in [headers, *rows]:
        for i, cell in enumerate(row):
            lines.append('   {} - {}'.format('*' if i == 0 else ' ', escape(cell)).rstrip())
    return '\n'.join(lines) + '\n'


#
# environment
#

def env_rows(groups: dict[str, JsonDict]) -> Table:
    """A column per run (result file), a row per property."""
    runs = [(doc, s) for doc in groups.values() for s in doc['sources']]
    fields: list[tuple[str, Callable[[JsonDict, JsonDict], str]]] = [
        ('benchmark', lambda doc, s: doc['benchmark']),
        ('date', lambda doc, s: str(s['env'].get('date', MISSING))),
        ('rounds', lambda doc, s: _rounds(s['params'])),
        ('Python', lambda doc, s: _python(s['env'])),
        ('event loop', lambda doc, s: loop_text(s['env'], doc['benchmark'])),
        ('broker', lambda doc, s: _broker(s['env'], doc['benchmark'])),
        ('implementations', lambda doc, s: _versions(doc, s['index'])),
        ('libraries', lambda doc, s: _packages(s['env'])),
        ('CPU', lambda doc, s: _cpu(s['env'])),
        ('platform', lambda doc, s: str(s['env'].get('platform', MISSING))),
        ('source', lambda doc, s: _source(s['env'])),
        ('load average (1 min) before, after', lambda doc, s: _load(s['env'])),
    ]
    headers = ['', *(s['path'] for _, s in runs)]
    rows = [[name, *(get(doc, s) for doc, s in runs)] for name, get in fields]
    return ('Environment of the runs (from the env of the JSON results)', headers, rows)


def _rounds(params: JsonDict) -> str:
    text = str(params.get('rounds', MISSING))
    return text + ' (--quick)' if params.get('quick') else text


def _python(env: JsonDict) -> str:
    py = env.get('python', {})
    return '{} {} ({})'.format(
        py.get('implementation', ''), py.get('version', MISSING), py.get('compiler', '?'),
    ).strip()


def _broker(env: JsonDict, kind: str) -> str:
    broker = env.get('broker')
    if not broker:
        return broker_text(env, kind)
    text = broker_text(env, kind)
    return '{} ({}), {}'.format(text, broker['platform'], broker.get('url')) \
        if broker.get('platform') else text


def _versions(doc: JsonDict, index: int) -> str:
    seen: dict[str, str] = {}
    for name, entry in implementations(doc):
        if entry.get('_source', 0) == index and entry.get('status') == 'ok':
            seen.setdefault(name, str(entry.get('version') or '?'))
    return ', '.join('{} {}'.format(n, v) for n, v in seen.items()) or MISSING


def _packages(env: JsonDict) -> str:
    pkgs = env.get('packages', {})
    return ', '.join('{} {}'.format(n, v) for n, v in pkgs.items() if v) or MISSING


def _cpu(env: JsonDict) -> str:
    cpu = env.get('cpu', {})
    text = '{}, {} cores ({} usable)'.format(
        cpu.get('model', '?'), cpu.get('cores', '?'), cpu.get('usable_cores', '?'),
    )
    return text + ', governor {}'.format(cpu['governor']) if cpu.get('governor') else text


def _source(env: JsonDict) -> str:
    src = env.get('source')
    if not src or not src.get('commit'):
        return 'not recorded'
    return tree_text(env)


def _load(env: JsonDict) -> str:
    load: Any = env.get('load_average')
    if not load or not load.get('before') or not load.get('after'):
        return MISSING
    return '{}, {}'.format(load['before'][0], load['after'][0])


#
# output
#

def write_report(groups: dict[str, JsonDict], out_dir: Path) -> list[Path]:
    """Write ``<kind>.rst.inc`` (tables) per kind and ``env.rst.inc``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for kind, doc in groups.items():
        tables = TABLES[kind](doc)
        path = out_dir / (KINDS[kind] + SUFFIX)
        path.write_text('\n'.join(list_table(t) for t in tables), encoding='utf-8')
        written.append(path)
    path = out_dir / ('env' + SUFFIX)
    path.write_text(list_table(env_rows(groups)), encoding='utf-8')
    written.append(path)
    return written


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog='python -m perf.report',
        description='Write reST tables of RbFly benchmark results (JSON); files of the'
                    ' same benchmark are merged',
    )
    parser.add_argument('json', nargs='+', type=Path, help='result files')
    parser.add_argument(
        '--output-dir', type=Path, default=Path('doc/perf'),
        help='directory of the *.rst.inc files (default: doc/perf)',
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        groups = load_groups(args.json)
        written = write_report(groups, args.output_dir)
    except (OSError, ValueError, KeyError) as ex:
        log('report: {}'.format(ex))
        return 1
    for path in written:
        log('report: {}'.format(path))
    return 0


if __name__ == '__main__':
    sys.exit(main())
