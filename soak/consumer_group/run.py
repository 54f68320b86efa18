"""
What the controller of a consumer group run (:py:mod:`soak.consumer_group`)
knows of it beside the logs: the scenario asked for, each worker process
as the controller saw it (started, stopped how, exited how), the nodes of
partition leaders it killed (a cluster), and the group members it listed;
saved in the run's directory (:py:func:`save_run`) so that its logs can
be analysed again (:py:func:`load_run`).

:py:mod:`soak.consumer_group.analysis` computes the run's figures from
these and the logs.
"""

from __future__ import annotations

import dataclasses
import json
import typing as tp
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from soak.consumer_group.logs import Processing, WorkerLog
from soak.consumer_group.members import GroupCheck, GroupMember

StopKind = tp.Literal['term', 'kill', 'final']
"""
How the controller stopped a worker: SIGTERM in the rolling deploy
(``term``), SIGKILL (``kill``), SIGTERM at the end of the run (``final``).
"""

@dataclass
class WorkerRun:
    """
    A worker process as the controller saw it.

    :ivar index: Its number (its log is ``worker-<index>.log``).
    :ivar started: When it was started.
    :ivar stop: How it was stopped (``None``: it was not, a failure).
    :ivar stop_time: When the signal was sent.
    :ivar exit_code: Its exit status (``-9``: SIGKILL; ``None``: it did not
        exit).
    :ivar exit_time: When it was seen to have exited.
    :ivar escalated: It did not exit within the deadline after SIGTERM
        and was killed.
    :ivar log: Its log.
    """
    index: int
    started: float
    stop: StopKind | None = None
    stop_time: float | None = None
    exit_code: int | None = None
    exit_time: float | None = None
    escalated: bool = False
    log: WorkerLog = field(default_factory=WorkerLog)

    @property
    def killed(self) -> bool:
        return self.stop == 'kill'

@dataclass(frozen=True)
class Scenario:
    """
    What the analysis needs to know of the run.

    :ivar partitions: The super stream's partitions.
    :ivar store_every: The workers' ``store_every``.
    :ivar store_interval: The workers' ``store_interval`` (seconds).
    :ivar t0: The start of the run (times are printed from it).
    :ivar restarts: Graceful restarts asked for.
    :ivar kills: Kills asked for.
    :ivar messages: Messages the producer was to publish.
    :ivar handlers: The workers' concurrent handlers (``client.process``,
        0: an ``async for`` loop): after a kill, the messages in flight
        come again too (at most three a handler: one handled, two queued).
    """
    partitions: Sequence[str]
    store_every: int
    store_interval: float
    t0: float
    restarts: int
    kills: int
    messages: int
    handlers: int = 0

LEADER_KILL_WINDOW = 5.0
"""
Seconds after a partition leader's node was killed within which a
message processed, then processed again, is charged to the kill: the
workers learn of the failover within a second (a lost connection, a
MetadataUpdate).
"""

class Charged:
    """
    The duplicates charged to a kill (of a worker, :py:class:`KillFigures
    <soak.consumer_group.analysis.KillFigures>`, or of a leader's node,
    :py:class:`LeaderKill`), and their bound, each by partition.
    """
    duplicates: Counter[str]
    bound: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.duplicates.values())

    @property
    def limit(self) -> int:
        return sum(self.bound.values())

@dataclass
class LeaderKill(Charged):
    """
    The node of a partition's leader killed (SIGKILL of the broker) while
    the workers consume, and brought back.

    :ivar partition: The partition whose leader's node was killed.
    :ivar node: The node (``r1``...).
    :ivar time: When it was killed (``time.monotonic()``).
    :ivar led: The partitions whose leader was on that node.
    :ivar revived: When it was up again (``None``: it was not).
    :ivar duplicates: The messages processed again because of it, by
        partition (computed).
    :ivar bound: Their bound, by partition (computed).
    """
    partition: str
    node: str
    time: float
    led: list[str]
    revived: float | None = None
    duplicates: Counter[str] = field(default_factory=Counter)
    bound: dict[str, int] = field(default_factory=dict)

    def caused(self, before: Processing, after: Processing) -> bool:
        """A message processed again (``after``) because of the kill."""
        return before.time <= self.time + LEADER_KILL_WINDOW and after.time >= self.time

RUN_FILE = 'run.json'
"""What the controller knew of a run, beside the logs (:py:func:`analyse_directory`)."""

def save_run(
        directory: Path, scenario: Scenario, workers: Sequence[WorkerRun],
        problems: Sequence[str], leader_kills: Sequence[LeaderKill] = (),
        groups: GroupCheck | None = None,
) -> None:
    """Write what the controller knew of a run, so that its logs can be analysed again."""
    document: dict[str, tp.Any] = {
        'scenario': {
            'partitions': list(scenario.partitions), 'store_every': scenario.store_every,
            'handlers': scenario.handlers,
            'store_interval': scenario.store_interval, 't0': scenario.t0,
            'restarts': scenario.restarts, 'kills': scenario.kills,
            'messages': scenario.messages,
        },
        'workers': [
            {'index': w.index, 'started': w.started, 'stop': w.stop, 'stop_time': w.stop_time,
             'exit_code': w.exit_code, 'exit_time': w.exit_time, 'escalated': w.escalated}
            for w in workers
        ],
        'problems': list(problems),
        'leader_kills': [
            {'partition': k.partition, 'node': k.node, 'time': k.time, 'led': k.led,
             'revived': k.revived}
            for k in leader_kills
        ],
        'groups': None if groups is None else {
            'live': groups.live, 'time': groups.time,  # (active_workers: from the logs)
            'members': {p: None if m is None else [dataclasses.asdict(x) for x in m]
                        for p, m in groups.members.items()},
        },
    }
    (directory / RUN_FILE).write_text(json.dumps(document, indent=1) + '\n')

@dataclass
class Run:
    """What the controller knew of a run, as :py:func:`save_run` wrote it."""
    scenario: Scenario
    workers: list[WorkerRun]
    problems: list[str]
    leader_kills: list[LeaderKill]
    groups: GroupCheck | None

def load_run(directory: Path) -> Run:
    """
    What the controller knew of a run, from its ``run.json``; the workers'
    logs are not read (:py:func:`~soak.consumer_group.analysis.analyse_directory`
    reads them).
    """
    document = json.loads((directory / RUN_FILE).read_text())
    found = document.get('groups')
    groups = None if found is None else GroupCheck(
        found['live'],
        {p: None if m is None else [GroupMember(**x) for x in m]
         for p, m in found['members'].items()},
        found['time'],
    )
    return Run(
        Scenario(**document['scenario']),
        [WorkerRun(**w) for w in document['workers']],
        document['problems'],
        [LeaderKill(**k) for k in document.get('leader_kills', [])],
        groups,
    )
