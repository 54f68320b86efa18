"""
The recovery-pace table of ``doc/reliability.rst`` from the results of
``python -m perf.recovery`` (``doc/perf/results/recovery.json``): the
rate of each workload at each cut interval with the spread of its rounds,
the share of the uncut rate, the cuts, the client's CPU a message and the
time each recovery took; the goals; the no-progress case.

Written to ``doc/perf/`` as :py:data:`OUTPUT`, which the guide includes. A quick
run (``--quick``) says so in its caption: its figures are to be measured
again in full.

Examples::

    python -m perf.report.recovery doc/perf/results/recovery.json --output-dir doc/perf
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from perf.common.results import JsonDict, format_rate, log, read_json, tree_text
from perf.report.tables import escape, list_table

OUTPUT = 'recovery.rst.inc'


def _every(seconds: float) -> str:
    return 'never' if seconds == 0 else '{:g} s'.format(seconds)


def rows(doc: JsonDict) -> list[list[str]]:
    """A row a workload and cut interval, from the summary and its rounds."""
    out = []
    for s in doc['summary']:
        rates = [r['rate'] for r in doc['results']
                 if (r['workload'], r['cut_every']) == (s['workload'], s['cut_every'])]
        share = s.get('share')
        out.append([
            s['workload'], _every(s['cut_every']), format_rate(s['rate']),
            '{} \N{EN DASH} {}'.format(format_rate(min(rates)), format_rate(max(rates)))
            if rates else '-',
            '-' if share is None else '{:.0%}'.format(share),
            str(s['cuts']),
            '-' if s.get('cpu_us_per_msg') is None else '{:.1f}'.format(s['cpu_us_per_msg']),
            '-' if s.get('recovery_ms') is None else '{:.0f} / {:.0f}'.format(
                s['recovery_ms'], s['recovery_ms_max']),
        ])
    return out


def caption(doc: JsonDict) -> str:
    env, params = doc['env'], doc['params']
    text = 'recovery.json: {}, {} round(s) of {:g} s runs, {:,} messages consumed, {}'.format(
        str(env.get('date', '?')).replace('T', ' ').replace('+00:00', ' UTC'),
        params['rounds'], params['seconds'], params['count'], tree_text(env))
    if params.get('quick'):
        text += ('; a quick run (--quick): one round, too short to hold the goals to,'
                 ' to be re-run in full (python -m perf.recovery --rounds 3)')
    return text


def goals(doc: JsonDict) -> str:
    parts = []
    for t in doc.get('targets', []):
        value = t.get('value')
        parts.append('{}: {} (goal at least {:g}x; {})'.format(
            t['what'], '-' if value is None else '{:.2f}x'.format(value), t['goal'],
            {True: 'met', False: 'not met', None: 'not measured'}[t.get('met')]))
    return '\n'.join('- ' + escape(p) for p in parts)


def no_progress(doc: JsonDict) -> str:
    p = doc['no_progress']
    b = p['backoff']
    least = p.get('least_gap_of_delay')
    return (
        'No progress, through the proxy dropping every connection as the client'
        ' declares its publisher again (a backoff of {:g} to {:g} s, x{:g}, no jitter,'
        ' ``stalls={}``): {} reconnections in {:.1f} s, least gap over delay {}, and the'
        ' publisher ended with {}.'.format(
            b['initial'], b['maximum'], b['multiplier'], b['stalls'], p['reconnections'],
            p['seconds'], '-' if least is None else '{:.2f}'.format(least),
            '``{}``'.format(p['ended']) if p.get('ended') else 'nothing (still retrying)'))


def render(doc: JsonDict) -> str:
    table = ('Recovery under repeated faults: ' + caption(doc),
             ['workload', 'cut every', 'msg/s (median)', 'min \N{EN DASH} max msg/s',
              'of uncut', 'cuts', 'CPU µs/msg', 'recovery ms (median / max)'],
             rows(doc))
    return '\n'.join([list_table(table), '', 'Against the goals:', '', goals(doc), '',
                      no_progress(doc), ''])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog='python -m perf.report.recovery',
                                     description='The recovery-pace table of the guide')
    parser.add_argument('json', type=Path, help='python -m perf.recovery --json file')
    parser.add_argument('--output-dir', type=Path, default=Path('doc/perf'))
    args = parser.parse_args(argv)
    doc = read_json(args.json)
    if doc.get('benchmark') != 'recovery':
        log('error: {} holds {} results, not recovery'.format(args.json, doc.get('benchmark')))
        return 2
    path = args.output_dir / OUTPUT
    path.write_text(render(doc), encoding='utf-8')
    log('report: {}'.format(path))
    return 0


if __name__ == '__main__':
    sys.exit(main())
