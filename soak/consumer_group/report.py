"""
The figures of a consumer group run (:py:mod:`soak.consumer_group.analysis`)
written out: a table for the terminal, and a JSON document.
"""

from __future__ import annotations

import math
import typing as tp

from soak.consumer_group.analysis import Figures, bad_exits, quantile

def _ms(seconds: float) -> str:
    return 'n/a' if math.isnan(seconds) else '{:,.0f} ms'.format(seconds * 1000)

def table(f: Figures) -> str:
    """The figures of a run as text: the goals, then the details."""
    s = f.scenario
    lines = ['{:<36} {:>14}  {:<22} {}'.format('', 'value', 'goal', '')]
    lines.extend(
        '{:<36} {:>14}  {:<22} {}'.format(g.name, g.value, g.target, 'ok' if g.ok else 'FAILED')
        for g in f.goals
    )
    pauses = [h.pause for h in f.hand_offs]
    kill_pauses = [h.pause for h in f.hand_offs if h.after_kill]
    other_pauses = [h.pause for h in f.hand_offs if not h.after_kill]
    lines.extend([
        '',
        'processed: {:,} messages ({:,} processings); stored twice by the producer: {:,};'
        ' processed, not confirmed: {:,}'.format(
            f.processed, f.processings, f.stored_twice, f.unconfirmed),
        'duplicates after kills: {:,}'.format(f.kill_duplicates),
        'hand-offs: {:,}; pause p50 {}, p99 {}, max {}'.format(
            len(pauses), _ms(quantile(pauses, 0.5)), _ms(quantile(pauses, 0.99)),
            _ms(max(pauses, default=math.nan))),
        '  graceful: {:,}; p50 {}, p99 {}'.format(
            len(other_pauses), _ms(quantile(other_pauses, 0.5)),
            _ms(quantile(other_pauses, 0.99))),
        '  after kills: {:,}; p50 {}, p99 {}'.format(
            len(kill_pauses), _ms(quantile(kill_pauses, 0.5)), _ms(quantile(kill_pauses, 0.99))),
    ])
    if f.lost:
        lines.append('lost (first 20): {}'.format(' '.join(str(n) for n in f.lost[:20])))
    if f.graceful_by_worker:
        lines.append('graceful duplicates by the worker that processed first: {}'.format(
            ', '.join('{}: {:,}'.format(w, n) for w, n in sorted(f.graceful_by_worker.items()))))
    for n, k in enumerate(f.kills, 1):
        lines.append('kill {}: worker {} at {:.1f} s{}, owned {}; duplicates {:,}, bound {:,}'
                     ' (store_every {} + {:g} s at the partition rate, per partition owned){}'
                     .format(n, k.worker, k.time,
                             '' if k.publishing else ' (after the producer\'s end)',
                             ', '.join(k.owned) or 'nothing', k.total, k.limit, s.store_every,
                             s.store_interval, '' if k.ok else ' EXCEEDED'))
        for partition, count in sorted(k.duplicates.items()):
            lines.append('  {}: {:,} (bound {:,})'.format(
                partition, count, k.bound.get(partition, 0)))
    for lk in f.leader_kills:
        lines.append('leader kill: node {} (leader of {}) at {:.1f} s, partitions it led: {};'
                     ' {}; duplicates {:,}, bound {:,}'.format(
                         lk.node, lk.partition, lk.time - s.t0, ', '.join(lk.led) or '?',
                         'back at {:.1f} s'.format(lk.revived - s.t0)
                         if lk.revived is not None else 'not revived', lk.total, lk.limit))
    if f.stalls:
        lines.append('longest pause of each partition: {}'.format(', '.join(
            '{} {} at {:.1f} s'.format(p, _ms(length), start - s.t0)
            for p, (start, length) in f.stalls.items())))
    if f.groups is not None:
        lines.append('group members at {:.1f} s ({} workers running):'.format(
            f.groups.time - s.t0, f.groups.live))
        for partition, members in f.groups.members.items():
            if members is None:
                lines.append('  {}: not listed'.format(partition))
                continue
            lines.append('  {}: {} members, {} active{}; active workers (their view): {}'.format(
                partition, len(members), sum(1 for m in members if m.active),
                ', {} ghosts'.format(f.groups.ghosts(partition))
                if f.groups.ghosts(partition) else '',
                ', '.join(str(w) for w in f.groups.active_workers.get(partition, [])) or 'none'))
            lines.extend('    {} sub {} {}'.format(m.connection, m.subscription_id, m.state)
                         for m in members)
    lines.append('workers: {}'.format('; '.join(
        '{} {} exit {}{}'.format(
            w.index, {'term': 'SIGTERM', 'kill': 'SIGKILL', 'final': 'SIGTERM at the end',
                      None: 'not stopped'}[w.stop],
            w.exit_code, '' if w.stop_time is None or w.exit_time is None
            else ' after {}'.format(_ms(w.exit_time - w.stop_time)))
        for w in f.workers)))
    for problem in bad_exits(f.workers):
        lines.append('  ' + problem)
    for problem in f.problems:
        lines.append('harness: ' + problem)
    return '\n'.join(lines)

def _json_ms(seconds: float) -> float | None:
    """Milliseconds, or ``None`` for ``nan`` (JSON has no NaN)."""
    return None if math.isnan(seconds) else round(seconds * 1000, 3)

def as_json(f: Figures) -> dict[str, tp.Any]:
    """The figures as a JSON document."""
    pauses = [h.pause for h in f.hand_offs]
    return {
        'ok': f.ok,
        'goals': [{'name': g.name, 'value': g.value, 'goal': g.target, 'ok': g.ok}
                  for g in f.goals],
        'confirmed': f.confirmed,
        'processed': f.processed,
        'processings': f.processings,
        'lost': len(f.lost),
        'lost (first 100)': f.lost[:100],
        'stored twice': f.stored_twice,
        'duplicates, graceful': f.graceful_duplicates,
        'duplicates, after kills': f.kill_duplicates,
        'kills': [
            {'worker': k.worker, 'time': round(k.time, 3), 'publishing': k.publishing,
             'owned': k.owned,
             'duplicates': dict(k.duplicates), 'bound': k.bound, 'ok': k.ok}
            for k in f.kills
        ],
        'hand-offs': len(f.hand_offs),
        'hand-off pause ms': {
            'p50': _json_ms(quantile(pauses, 0.5)), 'p99': _json_ms(quantile(pauses, 0.99)),
            'max': _json_ms(max(pauses, default=math.nan)),
        },
        'partition rates': f.rates,
        'longest pause ms': {p: _json_ms(length) for p, (_, length) in f.stalls.items()},
        'leader kills': [
            {'partition': k.partition, 'node': k.node, 'led': k.led,
             'duplicates': dict(k.duplicates), 'bound': k.bound,
             'time': round(k.time - f.scenario.t0, 3),
             'revived': None if k.revived is None else round(k.revived - f.scenario.t0, 3)}
            for k in f.leader_kills
        ],
        'group members': None if f.groups is None else {
            'live workers': f.groups.live,
            'partitions': {
                p: None if m is None else {
                    'members': len(m), 'active': sum(1 for x in m if x.active),
                    'ghosts': f.groups.ghosts(p),
                    'active workers': f.groups.active_workers.get(p, []),
                }
                for p, m in f.groups.members.items()
            },
        },
        'harness problems': f.problems,
        'workers': [
            {'index': w.index, 'stop': w.stop, 'exit': w.exit_code, 'escalated': w.escalated,
             'stopped marker': w.log.has('stopped'), 'messages': len(w.log.processings)}
            for w in f.workers
        ],
    }

__all__ = ['as_json', 'table']
