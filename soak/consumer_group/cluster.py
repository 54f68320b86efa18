"""
The cluster side of a consumer group run (``python -m soak.consumer_group
--cluster``): the three-node RabbitMQ cluster of ``scripts/cluster.sh``,
its nodes' URLs for the workers and the producer, a partition leader's
node killed and brought back while the workers consume, and the members
the broker keeps in each partition's group.

Everything goes through ``scripts/cluster.sh`` (it runs as root): ``env``
for the URLs, ``leader STREAM``, ``kill NODE``, ``revive NODE`` and ``ctl
NODE rabbitmq-streams list_stream_group_consumers``. A CLI call starts an
Erlang VM (about 2 s), so the members are listed once, at the end.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from soak.consumer_group.members import GroupMember, parse_group_members

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / 'scripts' / 'cluster.sh'
"""The cluster's script (``$RBFLY_CLUSTER_SCRIPT`` when set)."""

GROUP_MISSING = 'The group does not exist'
"""What ``list_stream_group_consumers`` says of a group without members (exit 69)."""

class ClusterError(Exception):
    """A ``scripts/cluster.sh`` command failed."""

def cluster_script() -> Path:
    return Path(os.environ.get('RBFLY_CLUSTER_SCRIPT', str(SCRIPT)))

def cluster_urls(script: Path) -> list[str]:
    """
    The stream URLs of the nodes, in order (the i-th is node ``ri``):
    ``$RBFLY_CLUSTER_URLS``, else what ``scripts/cluster.sh env`` prints.
    """
    urls = os.environ.get('RBFLY_CLUSTER_URLS', '').split()
    if urls:
        return urls
    out = subprocess.run([str(script), 'env'], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        words = shlex.split(line)
        if len(words) == 2 and words[0] == 'export' and words[1].startswith('RBFLY_CLUSTER_URLS='):
            return words[1].split('=', 1)[1].split()
    raise ClusterError('{} env printed no RBFLY_CLUSTER_URLS'.format(script))

def rotated(urls: list[str], index: int) -> list[str]:
    """
    The URLs a worker gets: from node ``index`` on, so that the workers
    connect to different nodes (a client connects to the first it
    reaches, and after losing its connection tries the next first).
    """
    n = index % len(urls)
    return urls[n:] + urls[:n]

class Cluster:
    """
    Runs ``scripts/cluster.sh``.

    :param script: The script.
    :param nodes: The nodes' short names, ``r1``...
    """
    def __init__(self, script: Path, nodes: list[str]) -> None:
        self.script = script
        self.nodes = nodes
        self.down: set[str] = set()

    def run(self, *args: str, timeout: float = 60) -> str:
        """Run the script; its output, or :py:class:`ClusterError` with its error output."""
        try:
            done = subprocess.run([str(self.script), *args], capture_output=True, text=True,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired as ex:
            raise ClusterError('{} {}: no answer in {:g} s'.format(
                self.script.name, ' '.join(args), timeout)) from ex
        if done.returncode != 0:
            raise ClusterError('{} {} failed ({}): {}'.format(
                self.script.name, ' '.join(args), done.returncode,
                (done.stderr or done.stdout).strip()[-500:]))
        return done.stdout.strip()

    def leaders(self) -> dict[str, str]:
        """
        The short name of the node of each stream's leader (``r2``), from
        a node that is up: one CLI call for all the partitions.
        """
        error: Exception | None = None
        for node in [n for n in self.nodes if n not in self.down]:
            try:
                out = self.run('ctl', node, 'rabbitmqctl', '-q', 'list_queues', 'name', 'leader',
                               '--no-table-headers')
            except ClusterError as ex:
                error = ex
                continue
            pairs = (line.split() for line in out.splitlines())
            return {w[0]: w[1].split('@', 1)[0] for w in pairs if len(w) == 2}
        raise ClusterError('no node lists the leaders: {}'.format(error))

    def kill(self, node: str) -> None:
        """SIGKILL the node's Erlang VM."""
        self.run('kill', node)
        self.down.add(node)

    def revive(self, node: str) -> subprocess.Popen[bytes]:
        """
        Bring the node back, in the background (a boot takes 10-25 s):
        the caller waits for the process.
        """
        self.down.discard(node)
        return subprocess.Popen([str(self.script), 'revive', node], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def members(self, stream: str, group: str) -> list[GroupMember]:
        """
        The members of a group on a stream, asked to a node that is up
        (none when the group does not exist).

        :raises ClusterError: When no node answers.
        """
        error: Exception | None = None
        for node in [n for n in self.nodes if n not in self.down]:
            try:
                out = self.run('ctl', node, 'rabbitmq-streams', 'list_stream_group_consumers',
                               '--stream', stream, '--reference', group, '--formatter', 'json')
            except ClusterError as ex:
                if GROUP_MISSING in str(ex):
                    return []
                error = ex
                continue
            return parse_group_members(out)
        raise ClusterError('members of {} on {}: {}'.format(group, stream, error))

__all__ = ['Cluster', 'ClusterError', 'cluster_script', 'cluster_urls', 'rotated']
