"""
Credit policies (:py:mod:`rbfly.streams.subscriptions.credit`), event by event, without
an event loop or a connection.

Each table is one subscription's life: an event with its arguments, what
the policy answers (the credits to grant, or for ``hold`` when the chunk's
credit is released), and the policy's counts after it. A grant the policy
asks for is sent, and reported back with ``granted``, only while the
connection is open (between ``attached`` and ``lost``), as the subscription
does.
"""

from __future__ import annotations

import ast
import typing as tp
from pathlib import Path

import pytest

from rbfly.streams.subscriptions.credit import (
    MAX_CREDIT,
    ByteBounded,
    CreditPolicy,
    Manual,
    OnTake,
    WhenProcessed,
    credit_policy,
)
from rbfly.streams.subscriptions.flow import CreditOnTake, CreditWhenProcessed, ManualCredit

class Step(tp.NamedTuple):
    event: str
    args: tuple[int, ...]
    answer: int | None  # credits to grant; for hold, where the credit is released
    counts: dict[str, int | float]  # the policy's counts after the event

def step(event: str, *args: int, answer: int | None = 0, **counts: int | float) -> Step:
    return Step(event, args, answer, counts)

def run(policy: CreditPolicy, steps: list[Step]) -> None:
    online = False
    for i, s in enumerate(steps):
        where = 'step {} ({}{})'.format(i, s.event, s.args)
        if s.event == 'attached':
            policy.attached()
            online = True
        elif s.event == 'lost':
            online = False
        else:
            answer = getattr(policy, s.event)(*s.args)
            assert answer == s.answer, where
            if s.event != 'hold' and answer and online:
                policy.granted(answer)
        for name, value in s.counts.items():
            assert getattr(policy, name) == value, '{}: {}'.format(where, name)

#
# the byte-bounded default: credit 2, buffer 4,000 bytes
#

BYTE_BOUNDED = [
    # start: Subscribe grants the initial credit, nothing more
    step('attached', inflight=2, chunk_size=0, target=2),
    step('idle', 0, inflight=2),
    # the first chunk teaches the size: 100 bytes, so 2,000 // 100 = 20
    # chunks may be buffered and 20 on their way; the 19 missing go at once
    step('arrived', 100, 1, answer=19, inflight=20, chunk_size=100, target=20),
    # then in groups of a quarter of the target (5), not one by one
    step('arrived', 100, 2, inflight=19),
    step('arrived', 100, 3, inflight=18),
    step('arrived', 100, 4, inflight=17),
    step('arrived', 100, 5, inflight=16),
    step('arrived', 100, 6, answer=5, inflight=20),
    # buffer full: as many chunks buffered as the target; 5 credits are
    # missing, and none goes
    step('arrived', 100, 20, inflight=19),
    step('arrived', 100, 20, inflight=18),
    step('arrived', 100, 20, inflight=17),
    step('arrived', 100, 20, inflight=16),
    step('arrived', 100, 20, inflight=15),
    # a chunk taken: the buffer has room again
    step('taken', 19, answer=5, inflight=20),
    step('taken', 18, inflight=20),
    # ... decoded and handed out: nothing held, nothing granted
    step('hold', 50, answer=None),
    step('handed', 18),
    step('released', 18, inflight=20),
    # connection lost: a grant asked for is not sent, and asked for again
    step('lost'),
    step('arrived', 100, 1, inflight=19),
    step('arrived', 100, 2, inflight=18),
    step('arrived', 100, 3, inflight=17),
    step('arrived', 100, 4, inflight=16),
    step('arrived', 100, 5, answer=5, inflight=15),
    step('idle', 0, answer=5, inflight=15),
    # re-attached: the new Subscribe's credit, then up to the target
    step('attached', inflight=2),
    step('idle', 0, answer=18, inflight=20),
    # big chunks shrink the target: 2,000 // 281.25 = 7 chunks, fewer than
    # the broker holds already
    step('arrived', 3000, 1, inflight=19, chunk_size=281.25, target=7),
    # a chunk dropped (an inactive single active consumer) uses a credit
    step('dropped', 0, inflight=18),
]

def test_byte_bounded() -> None:
    run(ByteBounded(2, 4000), BYTE_BOUNDED)

@pytest.mark.parametrize('credit, buffer_bytes, size, target', [
    (2, 4000, 0, 2),  # no chunk yet: the initial credit
    (2, 4000, 100, 20),  # half the buffer's bytes in chunks on their way
    (2, 10**9, 10, MAX_CREDIT),  # at most MAX_CREDIT
    (16, 1, 100, 16),  # at least the credit
])
def test_byte_bounded_target(credit: int, buffer_bytes: int, size: int, target: int) -> None:
    policy = ByteBounded(credit, buffer_bytes)
    if size:
        policy.arrived(size, 1)
    assert policy.target == target

def test_byte_bounded_grant_fits_a_credit_command() -> None:
    """One Credit command carries at most 65,535 credits."""
    policy = ByteBounded(2, 4000)
    policy.inflight = -70_000  # more chunks than granted: never seen
    assert policy.idle(0) == 0xffff

#
# the flow strategies, counting chunks: credit 2
#

ON_TAKE = [
    step('attached', inflight=2, held=0),
    step('idle', 0),
    # chunks arrive: their credits come back as they are taken
    step('arrived', 100, 1, inflight=1),
    # buffer full: both credits are in buffered chunks
    step('arrived', 100, 2, inflight=0),
    step('released', 2, inflight=0, held=0),  # nothing held: nothing to give
    # a chunk taken: its credit goes once it is handed out, held by nothing
    step('taken', 1, inflight=0),
    step('hold', 10, answer=None, held=0),
    step('handed', 1, answer=1, inflight=1),
    step('taken', 0),
    step('hold', 10, answer=None),
    step('handed', 0, answer=1, inflight=2),
    step('released', 0, held=0),
    # connection lost: the grant asked for is not sent
    step('arrived', 100, 1, inflight=1),
    step('lost'),
    step('taken', 0),
    step('hold', 5, answer=None),
    step('handed', 0, answer=1, inflight=1),
    # re-attached: the new Subscribe's credit
    step('attached', inflight=2),
    step('idle', 0),
    # a chunk dropped (inactive consumer) gives its credit back at once
    step('dropped', 0, answer=1, inflight=2),
]

WHEN_PROCESSED = [
    step('attached', inflight=2, held=0),
    step('arrived', 100, 1, inflight=1),
    step('arrived', 100, 2, inflight=0),
    # a chunk of 10 messages taken: its credit is held until 5 are
    # processed (the iterator asks for the sixth, at index 5)
    step('taken', 1),
    step('hold', 10, answer=5, held=1),
    step('handed', 1, inflight=0),
    # asking for the next chunk processes the one taken before
    step('taken', 0, held=0),
    step('hold', 3, answer=2, held=1),  # ceil(0.5 * 3)
    step('handed', 0, answer=1, inflight=1),
    # the iterator reached the share: released, its credit goes
    step('released', 0, answer=1, inflight=2, held=0),
    step('released', 0, held=0),  # nothing held: nothing more
    # a chunk with no messages (all before the start offset) holds nothing
    step('arrived', 100, 1, inflight=1),
    step('taken', 0),
    step('hold', 0, answer=None, held=0),
    step('handed', 0, answer=1, inflight=2),
    # connection lost while a chunk is held: the hold outlives it
    step('arrived', 100, 1, inflight=1),
    step('taken', 0),
    step('hold', 4, answer=2, held=1),
    step('handed', 0, inflight=1),
    step('lost'),
    step('attached', inflight=2, held=1),
    step('idle', 0, held=0),  # asking for more processes it; 2 on their way
    step('dropped', 0, answer=1, inflight=2),
]

MANUAL = [
    step('attached', inflight=2, held=0),
    step('arrived', 100, 1, inflight=1),
    step('taken', 0),
    step('hold', 10, answer=-1, held=1),  # released by the application only
    step('handed', 0, inflight=1),
    step('arrived', 100, 1, inflight=0),
    step('taken', 0),
    step('hold', 4, answer=-1, held=2),
    step('handed', 0),
    # nothing processed: the subscription stops after credit chunks
    step('idle', 0, inflight=0, held=2),
    # processed: a credit each
    step('released', 0, answer=1, inflight=1, held=1),
    # connection lost: a processed chunk's credit is not sent ...
    step('lost'),
    step('released', 0, answer=1, inflight=1, held=0),
    step('released', 0, held=0),  # nothing held: nothing more
    # ... the new Subscribe grants it
    step('attached', inflight=2),
    step('idle', 0),
    step('hold', 0, answer=None, held=0),  # an empty chunk holds nothing
]

@pytest.mark.parametrize('policy, steps', [
    (OnTake(2), ON_TAKE),
    (WhenProcessed(2, 0.5), WHEN_PROCESSED),
    (Manual(2), MANUAL),
], ids=['on-take', 'when-processed', 'manual'])
def test_counting(policy: CreditPolicy, steps: list[Step]) -> None:
    run(policy, steps)

@pytest.mark.parametrize('ratio, messages, index', [
    (0.5, 10, 5), (0.5, 1, 1), (0.1, 10, 1), (0.1, 3, 1), (1, 10, 10), (0.01, 1000, 10),
])
def test_when_processed_share(ratio: float, messages: int, index: int) -> None:
    """The message whose request releases the credit: at least the second."""
    assert WhenProcessed(2, ratio).hold(messages) == index

def test_policy_of_strategy() -> None:
    """A strategy's policy takes the strategy's credit; no strategy, the byte bound."""
    default = credit_policy(None, 3, 1000)
    assert isinstance(default, ByteBounded)
    assert (default.credit, default.buffer_bytes) == (3, 1000)
    on_take = credit_policy(CreditOnTake(4), 3, 1000)
    assert isinstance(on_take, OnTake) and on_take.credit == 4
    processed = credit_policy(CreditWhenProcessed(0.25, 5), 3, 1000)
    assert isinstance(processed, WhenProcessed)
    assert (processed.credit, processed.ratio) == (5, 0.25)
    manual = credit_policy(ManualCredit(6), 3, 1000)
    assert isinstance(manual, Manual) and manual.credit == 6

def test_manual_credit_binds_what_releases() -> None:
    """ManualCredit needs of a subscription only its stream and release()."""
    class Releasing:
        def __init__(self, stream: str) -> None:
            self.stream = stream
            self.released = 0
            self.closed = False
            self.seeking = False

        def release(self) -> None:
            self.released += 1

    flow = ManualCredit()
    a, b = Releasing('a'), Releasing('b')
    flow.bind(a)
    flow.processed()
    flow.bind(b)
    flow.processed('b')
    assert (a.released, b.released) == (1, 1)

#
# what the module may import
#

ROOT = Path(__file__).resolve().parents[3]
ALLOWED = ('rbfly.streams.subscriptions.flow', 'rbfly.streams.error', 'rbfly.error')

@pytest.mark.parametrize('module', ['credit', 'flow'])
def test_policies_import_only_leaves(module: str) -> None:
    """
    The policies and the strategies import nothing of rbfly but leaf
    modules, not even for type checking (no circle through a
    subscription), and nothing of I/O or the clock.
    """
    path = ROOT / 'rbfly' / 'streams' / 'subscriptions' / '{}.py'.format(module)
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                package = ['rbfly', 'streams', 'subscriptions'][:4 - node.level]
                base = '.'.join([*package, base])
            names.add(base.rstrip('.'))
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    ours = {n for n in names if n.split('.')[0] == 'rbfly'}
    assert all(n in ALLOWED for n in ours), ours
    assert not names & {'asyncio', 'socket', 'time'}, names
