"""
The soak's verdict (``soak/verdict.py``) on made-up phases: a run where
every publish failed lost nothing confirmed, and still fails (a floor on
the confirmed messages); the line CI prints gives the failed calls.
"""

import collections
import math

from soak.ledger import Ledger, Seen
from soak.verdict import CONFIRMED_FLOOR, SENT_FLOOR, failures, report, summary_line
from soak.workers import BATCH, PUBLISHERS, RATE, body

SECONDS = 10.0

def phase(sent: int, failed: int) -> dict[str, object]:
    """A phase of ``SECONDS``: each publisher sent ``sent``, its first ``failed`` failed."""
    ledgers = [Ledger(key, 'soak-{}'.format(key), binary) for key, _, binary in PUBLISHERS]
    super_ledger = Ledger('super', 'soak-super')
    stored, live, chunks, live_super = Seen('stored'), Seen('live'), Seen('chunks'), Seen('super')
    for ledger in [*ledgers, super_ledger]:
        ledger.sent = sent
        ledger.failures = failed // BATCH
        for n in range(sent):
            if n < failed:
                ledger.failed.add(n)
                continue
            watcher = live_super if ledger is super_ledger else live
            for seen in (stored, watcher) + ((chunks,) if ledger is ledgers[3] else ()):
                seen.see(ledger.stream, body(ledger, n))
    return report('single', SECONDS + 5, ledgers, super_ledger, stored, live, chunks,
                  live_super, SECONDS)

def test_healthy_run_passes() -> None:
    result = phase(int(RATE * SECONDS), 800)
    assert failures([result], leaked=False) == []

def test_every_publish_failed_fails() -> None:
    """Nothing confirmed, so nothing lost: the floor fails the run."""
    sent = int(RATE * SECONDS)
    result = phase(sent, sent)
    assert result['lost (confirmed, not stored)'] == 0
    [problem] = failures([result], leaked=False)
    floor = math.ceil(CONFIRMED_FLOOR * sent)
    assert problem.startswith('too few messages confirmed: single/single: 0 confirmed of')
    assert 'under the floor of {:,}'.format(floor) in problem
    assert problem.count('under the floor') == len(PUBLISHERS) + 1  # and the super stream's

def test_just_under_the_floor_fails() -> None:
    sent = int(RATE * SECONDS)
    floor = math.ceil(CONFIRMED_FLOOR * sent)
    assert failures([phase(sent, sent - floor)], leaked=False) == []
    assert failures([phase(sent, sent - floor + 1)], leaked=False) != []

def test_slow_publisher_passes_stuck_one_fails() -> None:
    """
    A publisher sending under a quarter of the rate, everything confirmed
    (one awaiting each confirmation from a cluster), passes; one that
    sent almost nothing fails.
    """
    slow = int(RATE * SECONDS * 0.2)
    assert failures([phase(slow, 0)], leaked=False) == []
    stuck = int(RATE * SECONDS * SENT_FLOOR) - 1
    assert failures([phase(stuck, 0)], leaked=False) != []

def test_summary_line_gives_failed_calls() -> None:
    result = phase(int(RATE * SECONDS), 800)
    faults = collections.Counter({'connection cuts': 9, 'connections cut': 27,
                                  'broker restarts': 1})
    line = summary_line(2, [result], faults)
    calls = 800 // BATCH
    assert line.startswith('soak: 2 min, 28,000 messages sent, 22,400 confirmed, 10 faults')
    assert 'failed calls {} (single {c}, batch {c}, '.format(calls * 7, c=calls) in line
    assert line.endswith('super {}), lost 0, duplicated 0'.format(calls))
