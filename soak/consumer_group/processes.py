"""
The child processes of a consumer group run (:py:mod:`soak.consumer_group`):
the workers and the producer it starts, stops and kills, the nodes of a
cluster it kills and brings back, and what their logs said so far.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from soak.consumer_group.cluster import Cluster, ClusterError, rotated
from soak.consumer_group.config import GROUP, Config
from soak.consumer_group.logs import LogTail, Processing, log_path
from soak.consumer_group.members import GroupCheck, GroupMember
from soak.consumer_group.run import LeaderKill, StopKind, WorkerRun

ROOT = Path(__file__).resolve().parents[2]
POLL = 0.05
"""Seconds between two looks at the logs and the processes."""

def _python(module: str, *args: object) -> list[str]:
    return [sys.executable, '-m', module, *(str(a) for a in args)]

class Group:
    """
    The child processes of a run and what their logs said so far.

    :param echo: Where the progress goes.
    """
    def __init__(
            self, config: Config, directory: Path, super_stream: str, partitions: list[str],
            echo: Callable[[str], None],
    ) -> None:
        self.config = config
        self.directory = directory
        self.super_stream = super_stream
        self.partitions = partitions
        self.echo = echo
        self.t0 = time.monotonic()
        self.runs: list[WorkerRun] = []
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.producer: subprocess.Popen[bytes] | None = None
        self.problems: list[str] = []
        self._tails: dict[int, LogTail] = {}
        self._opened: dict[int, set[str]] = {}
        self.processed: dict[int, int] = {}
        self.seen: set[int] = set()
        self.owner: dict[str, int] = {}  # partition -> worker of its last message seen
        self.cluster: Cluster | None = None
        self.leader_kills: list[LeaderKill] = []
        self.groups: GroupCheck | None = None
        self._reviving: list[tuple[LeaderKill, subprocess.Popen[bytes]]] = []

    def note(self, text: str) -> None:
        self.echo('{:7.1f} s  {}'.format(time.monotonic() - self.t0, text))

    def problem(self, text: str) -> None:
        self.problems.append(text)
        self.note('PROBLEM: ' + text)

    def _spawn(self, command: list[str], name: str) -> subprocess.Popen[bytes]:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            p for p in (str(ROOT), os.environ.get('PYTHONPATH', '')) if p))
        with (self.directory / (name + '.err')).open('wb') as err:
            # a session of its own: Ctrl-C reaches the controller only,
            # which stops the children
            return subprocess.Popen(
                command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                start_new_session=True,
            )

    def start_worker(self) -> WorkerRun:
        index = len(self.runs)
        c = self.config
        path = log_path(self.directory, index)
        command = _python(
            'soak.consumer_group.worker', '--url', *rotated(c.urls, index),
            '--super-stream', self.super_stream,
            '--group', GROUP, '--log', path, '--offset', c.offset,
            '--store-every', c.store_every, '--store-interval', c.store_interval,
            '--handlers', c.handlers,
        )
        if c.wait_stored:
            command.append('--wait-stored')
        if c.verbose:
            command.append('--verbose')
        run = WorkerRun(index, time.monotonic())
        self.runs.append(run)
        self.procs[index] = self._spawn(command, 'worker-{}'.format(index))
        self._tails[index] = LogTail(index, path)
        self._opened[index] = set()
        self.processed[index] = 0
        return run

    def start_producer(self) -> None:
        c = self.config
        self.producer = self._spawn(_python(
            'soak.consumer_group.producer', '--url', *c.urls, '--super-stream', self.super_stream,
            '--log', self.directory / 'producer.log', '--messages', c.messages,
            '--rate', c.rate,
        ), 'producer')

    def poll(self) -> None:
        """Read what the workers logged since the last poll; notice exits (a node's too)."""
        self._poll_revived()
        for index, tail in self._tails.items():
            for record in tail.read():
                if isinstance(record, Processing):
                    self.seen.add(record.seq)
                    self.owner[record.partition] = index
                    self.processed[index] += 1
                elif record.kind == 'state' and record.fields[1:2] == ('open',):
                    self._opened[index].add(record.fields[0])
        for run in self.running():
            code = self.procs[run.index].poll()
            if code is not None and run.stop is None:  # else stop() or stop_all() reaps it
                run.exit_code, run.exit_time = code, time.monotonic()
                self.problem('worker {} exited by itself with {} (see {})'.format(
                    run.index, code, self.directory / 'worker-{}.err'.format(run.index)))

    def wait_until(self, done: Callable[[], bool], timeout: float) -> bool:
        """Poll until ``done()``; ``False`` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            self.poll()
            if done():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL)

    def sleep(self, seconds: float) -> None:
        """Wait, following the logs."""
        self.wait_until(lambda: False, seconds)

    def running(self) -> list[WorkerRun]:
        return [r for r in self.runs if r.exit_code is None and r.index in self.procs]

    def ready(self, run: WorkerRun) -> bool:
        """A worker subscribed to every partition (or exited: waiting would not help)."""
        return run.exit_code is not None \
            or len(self._opened[run.index]) >= len(self.partitions)

    def start_ready(self) -> WorkerRun:
        """Start a worker and wait until it has subscribed to every partition."""
        run = self.start_worker()
        if self.wait_until(lambda: self.ready(run), self.config.ready_timeout):
            self.note('worker {} subscribed after {:.2f} s'.format(
                run.index, time.monotonic() - run.started))
        else:
            self.problem('worker {} not subscribed to every partition after {:g} s'.format(
                run.index, self.config.ready_timeout))
        return run

    def owned(self, run: WorkerRun) -> int:
        """The partitions whose last message seen the worker processed."""
        return sum(1 for w in self.owner.values() if w == run.index)

    def stop(self, run: WorkerRun, kind: StopKind) -> None:
        """Send the worker SIGTERM or SIGKILL; wait for its exit (SIGKILL after the deadline)."""
        proc = self.procs[run.index]
        run.stop, run.stop_time = kind, time.monotonic()
        proc.send_signal(signal.SIGKILL if kind == 'kill' else signal.SIGTERM)
        self._reap(run, self.config.stop_timeout)

    def _reap(self, run: WorkerRun, timeout: float) -> None:
        proc = self.procs[run.index]
        try:
            proc.wait(max(0.0, timeout))
        except subprocess.TimeoutExpired:
            run.escalated = True
            self.problem('worker {} still running {:g} s after SIGTERM: killed'.format(
                run.index, self.config.stop_timeout))
            proc.kill()
            proc.wait(10)
        run.exit_code, run.exit_time = proc.returncode, time.monotonic()
        self.poll()

    def stop_all(self) -> None:
        """SIGTERM to every worker at once; wait for their exits."""
        runs = self.running()
        now = time.monotonic()
        for run in runs:
            run.stop, run.stop_time = 'final', now
            self.procs[run.index].send_signal(signal.SIGTERM)
        deadline = now + self.config.stop_timeout
        for run in runs:
            self._reap(run, deadline - time.monotonic())

    #
    # the cluster
    #

    def kill_leader(self, cluster: Cluster, index: int) -> None:
        """
        Kill the node of the leader of partition ``index`` (SIGKILL of
        its broker); :py:meth:`revive` brings it back.
        """
        partition = self.partitions[index % len(self.partitions)]
        try:
            leaders = cluster.leaders()
            node = leaders[partition]
            asked = time.monotonic()  # the kill is done within the call (~0.2 s)
            cluster.kill(node)
        except (ClusterError, KeyError) as ex:
            self.problem('cannot kill the leader of {}: {!r}'.format(partition, ex))
            return
        led = [p for p in self.partitions if leaders.get(p) == node]
        self.leader_kills.append(LeaderKill(partition, node, asked, led))
        self.note('leader kill: node {} (leading {}) got SIGKILL'.format(node, ', '.join(led)))

    def revive(self, cluster: Cluster) -> None:
        """Bring the killed nodes back, in the background (:py:meth:`poll` sees them up)."""
        for kill in self.leader_kills:
            if kill.revived is None and kill.node in cluster.down:
                self._reviving.append((kill, cluster.revive(kill.node)))
                self.note('reviving node {}'.format(kill.node))

    def _poll_revived(self) -> None:
        for kill, proc in list(self._reviving):
            code = proc.poll()
            if code is None:
                continue
            self._reviving.remove((kill, proc))
            if code == 0:
                kill.revived = time.monotonic()
                self.note('node {} is back'.format(kill.node))
            else:
                err = proc.stderr.read().decode(errors='replace') if proc.stderr else ''
                self.problem('node {} not revived ({}): {}'.format(kill.node, code, err[-300:]))

    def list_members(self, cluster: Cluster) -> None:
        """The members the broker keeps in each partition's group, the workers running."""
        if not self.wait_until(lambda: not self._reviving, 180):
            self.problem('the killed node is not back after 180 s')
        members: dict[str, list[GroupMember] | None] = {}
        for partition in self.partitions:
            try:
                members[partition] = cluster.members(partition, GROUP)
            except ClusterError as ex:
                self.problem('group of {} not listed: {}'.format(partition, ex))
                members[partition] = None
        self.groups = GroupCheck(len(self.running()), members, time.monotonic())
        self.note('group members listed: {}'.format(', '.join(
            '{} {}'.format(p, '?' if m is None else '{}/{} active'.format(
                sum(1 for x in m if x.active), len(m)))
            for p, m in members.items())))

    def kill_everything(self) -> None:
        """The end, whatever happened: no child is left running."""
        procs = list(self.procs.values())
        if self.producer is not None:
            procs.append(self.producer)
        for _, reviving in self._reviving:  # a node booting: let it boot
            try:
                reviving.wait(180)
            except subprocess.TimeoutExpired:
                self.problem('a node still booting after 180 s')
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                self.problem('process {} did not die'.format(proc.pid))

__all__ = ['POLL', 'ROOT', 'Group']
