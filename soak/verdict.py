"""
The soak's verdict on its phases: the figures of a phase (what was sent,
confirmed, stored and seen), what failed the run (messages lost,
duplicated or out of order, too few confirmed, resources left over), and
the one line CI prints.
"""

from __future__ import annotations

import collections
import math
import typing as tp

from soak.ledger import Ledger, Seen, ledger_failed
from soak.workers import BATCH, RATE

CONFIRMED_FLOOR = 0.25
"""
The share of the messages it sent each publisher must have had confirmed:
below it the run fails. Without a floor, a run where every publish failed
reported "lost 0" and passed (nothing confirmed, so nothing lost). The
faults cost a share of the messages (calls failing while a connection or
a broker is down), never three quarters.
"""

SENT_FLOOR = 0.05
"""
The share of a fault-free run's messages (``RATE`` a second for the
phase's publishing time) each publisher must have sent at least: one
stuck from the start fails the run too. Not more: a publisher awaiting
each confirmation from a three-node cluster sends under a quarter of
``RATE`` (measured: 5,240 in a 60 s phase of node kills, 87 a second).
"""

def check(ledger: Ledger, seen: Seen) -> tuple[int, int]:
    """Confirmed messages missing from what was seen; messages never sent that were seen."""
    bits = seen.bits[ledger.key]
    lost = sum(1 for n in range(ledger.sent) if ledger.confirmed(n) and n not in bits)
    unknown = sum(1 for n in range(ledger.sent, ledger.sent + 10 * BATCH) if n in bits)
    return lost, unknown

def report(
        name: str, elapsed: float, ledgers: list[Ledger], super_ledger: Ledger, stored: Seen,
        live: Seen, chunks: Seen, live_super: Seen, publishing: float,
) -> dict[str, tp.Any]:
    """
    The figures of a phase: what was sent, confirmed, stored and seen.

    :param publishing: Seconds the publishers ran (``elapsed`` adds the
        time the live consumers took to catch up).
    """
    result: dict[str, tp.Any] = {
        'phase': name, 'seconds': round(elapsed), 'publishing seconds': publishing,
        'publishers': {},
    }
    lost = dup = unknown = live_missing = 0
    for ledger in [*ledgers, super_ledger]:
        lost_n, unknown_n = check(ledger, stored)
        confirmed = ledger.sent - ledger_failed(ledger)
        watcher = live_super if ledger is super_ledger else live
        missing_live, _ = check(ledger, watcher)
        result['publishers'][ledger.key] = {
            'sent': ledger.sent, 'confirmed': confirmed, 'failed calls': ledger.failures,
            'lost': lost_n, 'missing at live consumer': missing_live,
        }
        lost += lost_n
        unknown += unknown_n
        live_missing += missing_live
    chunk_missing, _ = check(ledgers[3], chunks)
    dup = stored.duplicates
    result.update({
        'messages sent': sum(lg.sent for lg in [*ledgers, super_ledger]),
        'messages stored': stored.messages,
        'lost (confirmed, not stored)': lost,
        'duplicated (stored twice)': dup,
        'out of order (stored)': stored.out_of_order,
        'live consumers: duplicates': live.duplicates + chunks.duplicates + live_super.duplicates,
        'live consumers: out of order': live.out_of_order + chunks.out_of_order
        + live_super.out_of_order,
        'live consumers: confirmed messages not seen': live_missing + chunk_missing,
        'never sent, yet stored': unknown,
    })
    return result

def too_few_confirmed(results: list[dict[str, tp.Any]]) -> list[str]:
    """
    The publishers of each phase that had under ``CONFIRMED_FLOOR`` of
    what they sent confirmed, or sent under ``SENT_FLOOR`` of a
    fault-free run's messages, each with its figures.
    """
    short = []
    for r in results:
        least = round(SENT_FLOOR * RATE * r['publishing seconds'])
        for key, p in r['publishers'].items():
            floor = math.ceil(CONFIRMED_FLOOR * p['sent'])
            if p['confirmed'] < max(floor, least):
                short.append('{}/{}: {:,} confirmed of {:,} sent ({:,} failed calls),'
                             ' under the floor of {:,}'.format(
                                 r['phase'], key, p['confirmed'], p['sent'], p['failed calls'],
                                 max(floor, least)))
    return short

def failed_calls(results: list[dict[str, tp.Any]]) -> dict[str, int]:
    """Failed publishing calls by publisher, over the phases."""
    calls: collections.Counter[str] = collections.Counter()
    for r in results:
        for key, p in r['publishers'].items():
            calls[key] += p['failed calls']
    return dict(calls)

def failures(results: list[dict[str, tp.Any]], leaked: bool) -> list[str]:
    """What failed the run: messages lost, too few confirmed, resources left over."""
    problems = []
    bad = [
        r['phase'] for r in results
        if r['lost (confirmed, not stored)'] or r['duplicated (stored twice)']
        or r['out of order (stored)'] or r['live consumers: duplicates']
        or r['live consumers: out of order']
        or r['live consumers: confirmed messages not seen'] or r['never sent, yet stored']
    ]
    if bad:
        problems.append('messages lost, duplicated or out of order in {}'.format(bad))
    if short := too_few_confirmed(results):
        problems.append('too few messages confirmed: {}'.format('; '.join(short)))
    if leaked:
        problems.append('tasks or file descriptors left over')
    return problems

def summary_line(
        minutes: float, results: list[dict[str, tp.Any]], faults: collections.Counter[str],
) -> str:
    """The run in one line (what CI prints): messages, faults, failed calls, losses."""
    calls = failed_calls(results)
    return ('soak: {:g} min, {:,} messages sent, {:,} confirmed, {} faults ({}),'
            ' failed calls {:,} ({}), lost {}, duplicated {}'.format(
                minutes, sum(r['messages sent'] for r in results),
                sum(p['confirmed'] for r in results for p in r['publishers'].values()),
                sum(v for k, v in faults.items()
                    if k not in ('connections cut', 'leader kills')),  # parts of others
                ', '.join('{} {}'.format(v, k) for k, v in faults.items()),
                sum(calls.values()), ', '.join('{} {}'.format(k, v) for k, v in calls.items()),
                sum(r['lost (confirmed, not stored)'] for r in results),
                sum(r['duplicated (stored twice)'] for r in results)))
