"""
The figures of a consumer group run (:py:mod:`soak.consumer_group`): what
the logs of the workers and of the producer say about messages lost and
processed twice, the pauses of the hand-offs of partitions between
workers, the workers' exits, and whether the goals are met.

The logs are read by :py:mod:`soak.consumer_group.logs`, what the
controller knew of the run (workers, kills, the scenario) is in
:py:mod:`soak.consumer_group.run`, the group members the broker listed in
:py:mod:`soak.consumer_group.members`; the figures are written out by
:py:mod:`soak.consumer_group.report`.

A duplicate is an offset of a partition processed again (a sequence
number the broker stored twice, at two offsets, is the producer's, and
counted apart). Each processing after the first is a duplicate, charged
to the worker of the processing before it and to how that worker let
the partition go:

- killed (SIGKILL) while it owned the partition: it could not store the
  offset of what it processed last, and the duplicate is the kill's,
  within the bound of automatic offset tracking (:py:class:`KillFigures`);
  a message it processed in a partition it owned at its death, after the
  last time that partition came back to it;
- a partition leader's node killed (``--kill-leader``, on a cluster):
  a worker whose connection or subscription the failover took could not
  store the offset of what it processed last either; a duplicate whose
  first processing came before the end of :py:data:`LEADER_KILL_WINDOW`
  after the kill and whose second came after the kill is the kill's,
  within the same bound as a worker's kill, for every partition
  (:py:class:`LeaderKill`);
- any other: a graceful hand-off (the worker stopped with SIGTERM, or,
  alive, stepped down when the broker gave the partition to a worker that
  joined, even if it was killed later), and the goal is none.

On a cluster (``--cluster``), the run may kill the node of a partition's
leader while the workers consume, and lists, before it stops them, the
members the broker keeps in the group of each partition (``rabbitmq-streams
list_stream_group_consumers``): each live worker has one subscription
there, so a member more is a ghost (a subscription the broker forgot on
its connection but not in the group, rbfly issue 30), and a partition with
no active member processes nothing (:py:class:`GroupCheck`).

This module reads files and computes; it runs no process and talks to no
broker, so the unit tests feed it made-up logs.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from soak.consumer_group.logs import (
    LogTail,
    Marker,
    Processing,
    ProducerLog,
    WorkerLog,
    log_path,
    parse_line,
    read_log,
    read_producer_log,
)
from soak.consumer_group.members import GroupCheck, GroupMember, parse_group_members
from soak.consumer_group.run import (
    LEADER_KILL_WINDOW,
    RUN_FILE,
    Charged,
    LeaderKill,
    Run,
    Scenario,
    StopKind,
    WorkerRun,
    load_run,
    save_run,
)

@dataclass
class KillFigures(Charged):
    """
    The duplicates a SIGKILL caused, and their bound.

    A killed worker processed, in each partition it owned, at most
    ``store_every`` messages after the last offset it stored (the tracker
    stores once it counts that many), or those of the last
    ``store_interval`` seconds (it stores that long after the first it
    did not store): at most ``store_every`` plus the messages arriving in
    ``store_interval`` seconds at the partition's rate. Its successor
    resumes after the stored offset, so that many are processed again.
    """
    worker: int
    time: float
    owned: list[str]
    bound: dict[str, int]
    since: dict[str, float]  # when the worker last got each partition it owned
    publishing: bool = True  # the producer was still publishing (else the partitions were idle)
    duplicates: Counter[str] = field(default_factory=Counter)

    def held(self, p: Processing) -> bool:
        """The worker processed a message in a partition it held until its death."""
        since = self.since.get(p.partition)
        return since is not None and p.time >= since

    @property
    def ok(self) -> bool:
        return self.total <= self.limit

@dataclass(frozen=True)
class HandOff:
    """
    A partition passing from a worker to another: the last message the one
    processed, the first the other did.
    """
    partition: str
    old: int
    new: int
    last: float
    first: float
    after_kill: bool

    @property
    def pause(self) -> float:
        return self.first - self.last

@dataclass(frozen=True)
class Goal:
    name: str
    value: str
    target: str
    ok: bool

def active_workers(
        workers: Sequence[WorkerRun], partitions: Sequence[str], when: float,
) -> dict[str, list[int]]:
    """
    The workers active on each partition at a time, as their logs say: a
    worker running then whose last word on the partition before it was
    the broker's consumer update making it active (a subscription lost or
    moved since, ``state ... recovering``, is inactive until the broker
    activates it again).
    """
    result: dict[str, list[int]] = {p: [] for p in partitions}
    for w in workers:
        if w.stop_time is not None and w.stop_time < when:
            continue
        active: dict[str, bool] = {}
        for m in w.log.markers:
            if len(m.fields) != 3 or float(m.fields[2]) > when:
                continue
            partition, value = m.fields[0], m.fields[1]
            if m.kind == 'update':
                active[partition] = value == 'active'
            elif m.kind == 'state' and value != 'open':
                active[partition] = False
        for partition, on in active.items():
            if on and partition in result:
                result[partition].append(w.index)
    return result

@dataclass
class Figures:
    """The figures of a run, and its goals."""
    scenario: Scenario
    confirmed: int
    processed: int           # distinct (partition, offset)
    processings: int         # lines
    lost: list[int]          # confirmed sequence numbers never processed
    stored_twice: int        # sequence numbers at two offsets (the producer's doing)
    unconfirmed: int         # processed, not confirmed (a failed publish that was stored)
    graceful_duplicates: int
    graceful_by_worker: Counter[int]
    kills: list[KillFigures]
    hand_offs: list[HandOff]
    workers: list[WorkerRun]
    bad_lines: int
    rates: dict[str, float]
    problems: list[str] = field(default_factory=list)
    goals: list[Goal] = field(default_factory=list)
    leader_kills: list[LeaderKill] = field(default_factory=list)
    groups: GroupCheck | None = None
    stalls: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def kill_duplicates(self) -> int:
        return sum(k.total for k in self.kills)

    @property
    def ok(self) -> bool:
        return all(g.ok for g in self.goals)

def quantile(values: Sequence[float], q: float) -> float:
    """Nearest-rank quantile (``nan`` of nothing)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]

def _by_partition(processings: Iterable[Processing]) -> dict[str, list[Processing]]:
    parts: dict[str, list[Processing]] = defaultdict(list)
    for p in processings:
        parts[p.partition].append(p)
    for items in parts.values():
        items.sort(key=lambda p: p.time)
    return parts

def _owned_at(
        by_partition: dict[str, list[Processing]], worker: int, when: float,
) -> dict[str, float]:
    """
    The partitions a worker owned when it died, each with when it got it
    last: those whose last message processed (by anyone) before then was
    its own; since the first of its last run of messages there.
    """
    owned = {}
    for partition, items in sorted(by_partition.items()):
        before = [p for p in items if p.time <= when]  # sorted by time
        if not before or before[-1].worker != worker:
            continue
        since = before[-1].time
        for p in reversed(before):
            if p.worker != worker:
                break
            since = p.time
        owned[partition] = since
    return owned

def _hand_offs(
        by_partition: dict[str, list[Processing]], workers: dict[int, WorkerRun],
) -> list[HandOff]:
    """
    The changes of worker in each partition's messages, in time order:
    the pause between the last message of the one and the first of the
    next.
    """
    result = []
    for partition, items in sorted(by_partition.items()):
        for before, after in itertools.pairwise(items):
            if before.worker == after.worker:
                continue
            old = workers.get(before.worker)
            after_kill = old is not None and old.killed and old.stop_time is not None \
                and after.time >= old.stop_time
            result.append(HandOff(partition, before.worker, after.worker, before.time,
                                  after.time, after_kill))
    return result

def _stalls(
        by_offset: dict[tuple[str, int], list[Processing]], partitions: Sequence[str],
        end: float | None,
) -> dict[str, tuple[float, float]]:
    """
    The longest pause of each partition: the start and the length of the
    longest time between two messages processed for the first time, one
    after the other in time (a leader's failover, a hand-off), or between
    the last one and the producer's end (``end``): a partition left
    without an active consumer shows here.
    """
    firsts: dict[str, list[float]] = {p: [] for p in partitions}
    for (partition, _), items in by_offset.items():
        firsts.setdefault(partition, []).append(items[0].time)
    result = {}
    for partition, times in sorted(firsts.items()):
        times.sort()
        if end is not None and (not times or times[-1] < end):
            times.append(end)
        gaps = [(b - a, a) for a, b in itertools.pairwise(times)]
        if gaps:
            length, start = max(gaps)
            result[partition] = (start, length)
    return result

def analyse(
        scenario: Scenario, workers: Sequence[WorkerRun], producer: ProducerLog,
        problems: Sequence[str] = (), leader_kills: Sequence[LeaderKill] = (),
        groups: GroupCheck | None = None,
) -> Figures:
    """
    The figures of a run, from its workers (with their logs) and its
    producer's log.

    :param problems: What went wrong in the controller (a deadline
        passed): a goal is that nothing did.
    :param leader_kills: The nodes of partition leaders killed (cluster).
    :param groups: The group members the broker listed (cluster).
    """
    by_worker = {w.index: w for w in workers}
    processings = [p for w in workers for p in w.log.processings]
    by_partition = _by_partition(processings)

    # every processing of each offset, in time order
    by_offset: dict[tuple[str, int], list[Processing]] = defaultdict(list)
    for p in processings:
        by_offset[p.partition, p.offset].append(p)
    seq_offsets: dict[int, set[tuple[str, int]]] = defaultdict(set)
    for key, items in by_offset.items():
        items.sort(key=lambda p: p.time)
        seq_offsets[items[0].seq].add(key)

    # the partitions' rates: messages stored over the publishing time
    duration = max(1e-3, (producer.end or 0) - (producer.start or 0)) \
        if producer.start is not None and producer.end is not None else math.inf
    counts = Counter(partition for partition, _ in by_offset)
    rates = {p: counts[p] / duration for p in scenario.partitions}

    kills: dict[int, KillFigures] = {}
    for w in workers:
        if w.killed and w.stop_time is not None:
            owned = _owned_at(by_partition, w.index, w.stop_time)
            bound = {
                p: scenario.store_every + math.ceil(rates.get(p, 0) * scenario.store_interval)
                + 3 * scenario.handlers
                for p in owned
            }
            kills[w.index] = KillFigures(
                w.index, w.stop_time - scenario.t0, list(owned), bound, owned,
                publishing=producer.end is None or w.stop_time < producer.end,
            )

    leader_kills = [dataclasses.replace(k, duplicates=Counter(), bound={
        p: scenario.store_every + math.ceil(rates.get(p, 0) * scenario.store_interval)
        + 3 * scenario.handlers
        for p in scenario.partitions
    }) for k in leader_kills]
    graceful = 0
    graceful_by_worker: Counter[int] = Counter()
    for items in by_offset.values():
        for before, after in itertools.pairwise(items):
            kill = kills.get(before.worker)
            failover = next((k for k in leader_kills if k.caused(before, after)), None)
            if kill is not None and kill.held(before):
                kill.duplicates[before.partition] += 1
            elif failover is not None:
                failover.duplicates[before.partition] += 1
            else:
                graceful += 1
                graceful_by_worker[before.worker] += 1

    lost = sorted(producer.confirmed - seq_offsets.keys())
    figures = Figures(
        scenario=scenario,
        confirmed=len(producer.confirmed),
        processed=len(by_offset),
        processings=len(processings),
        lost=lost,
        stored_twice=sum(1 for keys in seq_offsets.values() if len(keys) > 1),
        unconfirmed=len(seq_offsets.keys() - producer.confirmed),
        graceful_duplicates=graceful,
        graceful_by_worker=graceful_by_worker,
        kills=sorted(kills.values(), key=lambda k: k.time),
        hand_offs=_hand_offs(by_partition, by_worker),
        workers=list(workers),
        bad_lines=sum(w.log.bad_lines for w in workers),
        rates=rates,
        problems=list(problems),
        leader_kills=leader_kills,
        groups=groups,
        stalls=_stalls(by_offset, scenario.partitions, producer.end),
    )
    if groups is not None:
        groups.active_workers = active_workers(workers, scenario.partitions, groups.time)
    figures.goals = goals(figures)
    return figures

def bad_exits(workers: Iterable[WorkerRun]) -> list[str]:
    """The workers that did not stop as they were told to, each with why."""
    bad = []
    for w in workers:
        if w.stop is None:
            bad.append('worker {}: never stopped (exit {})'.format(w.index, w.exit_code))
        elif w.stop == 'kill':
            if w.exit_code != -9:
                bad.append('worker {}: SIGKILL, exit {}'.format(w.index, w.exit_code))
        elif w.escalated or w.exit_code != 0 or not w.log.has('stopped'):
            bad.append('worker {}: SIGTERM, exit {}{}{}'.format(
                w.index, w.exit_code, ', killed after the deadline' if w.escalated else '',
                '' if w.log.has('stopped') else ', no stop marker',
            ))
    return bad

def goals(f: Figures) -> list[Goal]:
    """The goals of a run, each with its value."""
    s = f.scenario
    terms = sum(1 for w in f.workers if w.stop == 'term')
    killed = sum(1 for w in f.workers if w.stop == 'kill')
    exits = bad_exits(f.workers)
    result = [
        Goal('messages confirmed', '{:,}'.format(f.confirmed), '{:,}'.format(s.messages),
             f.confirmed == s.messages),
        Goal('graceful restarts (SIGTERM)', str(terms), str(s.restarts), terms >= s.restarts),
        Goal('kills (SIGKILL)', str(killed), str(s.kills), killed >= s.kills),
        Goal('lost', '{:,}'.format(len(f.lost)), '0', not f.lost),
        Goal('duplicates, graceful', '{:,}'.format(f.graceful_duplicates), '0',
             f.graceful_duplicates == 0),
    ]
    for n, k in enumerate(f.kills, 1):
        result.append(Goal(
            'duplicates, kill {} (worker {})'.format(n, k.worker), '{:,}'.format(k.total),
            '<= {:,}'.format(k.limit), k.ok,
        ))
    for lk in f.leader_kills:
        result.append(Goal(
            'duplicates, leader kill ({})'.format(lk.node), '{:,}'.format(lk.total),
            '<= {:,}'.format(lk.limit), lk.total <= lk.limit,
        ))
    result.append(Goal(
        'workers stopped as told', '{} of {}'.format(len(f.workers) - len(exits),
                                                    len(f.workers)),
        'all (SIGTERM: exit 0)', not exits,
    ))
    if f.groups is not None:
        listed = [p for p, m in f.groups.members.items() if m is not None]
        ghosts = sum(f.groups.ghosts(p) for p in listed)
        result.append(Goal(
            'group members listed', '{} of {}'.format(len(listed), len(f.groups.members)),
            'all', len(listed) == len(f.groups.members),
        ))
        result.append(Goal('ghost group members', str(ghosts), '0', ghosts == 0))
        idle = f.groups.without_active
        result.append(Goal('partitions without an active member', str(len(idle)), '0',
                           not idle))
        unserved = f.groups.without_active_worker
        result.append(Goal('partitions no worker consumes', str(len(unserved)), '0',
                           not unserved))
    result.append(Goal('unreadable log lines', str(f.bad_lines), '0', f.bad_lines == 0))
    result.append(Goal('harness problems', str(len(f.problems)), '0', not f.problems))
    return result

def analyse_directory(directory: Path) -> Figures:
    """The figures of a run from its directory (logs and ``run.json``)."""
    run = load_run(directory)
    for w in run.workers:
        w.log = read_log(w.index, log_path(directory, w.index))
    return analyse(run.scenario, run.workers, read_producer_log(directory / 'producer.log'),
                   run.problems, run.leader_kills, run.groups)

__all__ = [
    'LEADER_KILL_WINDOW', 'RUN_FILE', 'Figures', 'Goal', 'GroupCheck', 'GroupMember', 'HandOff',
    'KillFigures', 'LeaderKill', 'LogTail', 'Marker', 'Processing', 'ProducerLog', 'Run',
    'Scenario', 'StopKind', 'WorkerLog', 'WorkerRun', 'active_workers', 'analyse',
    'analyse_directory', 'bad_exits', 'goals', 'load_run', 'log_path', 'parse_group_members',
    'parse_line', 'quantile', 'read_log', 'read_producer_log', 'save_run',
]
