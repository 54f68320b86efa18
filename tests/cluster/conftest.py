"""
Fixtures of the cluster tests: a three-node RabbitMQ 4.x cluster provisioned
by ``scripts/cluster.sh start``, found through the variables that
``scripts/cluster.sh env`` prints:

- ``RBFLY_CLUSTER_URLS``: stream URIs of the nodes, separated by spaces; the
  i-th URI is node ``ri`` of the script;
- ``RBFLY_CLUSTER_SCRIPT``: the script that kills and revives nodes
  (default: ``scripts/cluster.sh`` of this repository; it runs as root).

Without ``RBFLY_CLUSTER_URLS`` the tests are skipped; under CI
(``CI=true``) they fail.
"""

import asyncio
import dataclasses as dtc
import logging
import os
import subprocess
import typing as tp
import uuid
import zlib
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import uvloop

from rbfly.streams import streams_client
from rbfly.streams.backoff import Backoff

from ..missing import in_ci, missing

URLS = os.environ.get('RBFLY_CLUSTER_URLS', '').split()
SCRIPT = os.environ.get(
    'RBFLY_CLUSTER_SCRIPT', str(Path(__file__).resolve().parents[2] / 'scripts' / 'cluster.sh'),
)

NEEDS_CLUSTER = pytest.mark.skipif(
    len(URLS) < 3 and not in_ci(), reason='cluster not provisioned: scripts/cluster.sh start',
)
"""Skips a test without the cluster (under CI, the ``cluster`` fixture fails it)."""
FAST = Backoff(initial=0.05, maximum=0.5)
"""Reconnection delays of the tests' clients."""
TIMEOUT = 30
"""Seconds any single step of a test may take."""

@dtc.dataclass(frozen=True)
class Node:
    """A node of the cluster: its name for scripts/cluster.sh and its URI."""
    name: str
    url: str

    @property
    def port(self) -> int:
        return urlsplit(self.url).port or 5552

class Cluster:
    """The nodes, and scripts/cluster.sh to kill, revive and inspect them."""
    def __init__(self, urls: list[str], script: str) -> None:
        self.nodes = [Node('r{}'.format(i), url) for i, url in enumerate(urls, 1)]
        self.script = script

    def by_name(self, name: str) -> Node:
        """Node named ``rN`` or ``rN@host``."""
        short = name.split('@', maxsplit=1)[0]
        return next(n for n in self.nodes if n.name == short)

    def by_port(self, port: int) -> Node:
        return next(n for n in self.nodes if n.port == port)

    async def run(self, *args: str) -> str:
        """Run scripts/cluster.sh; its output, or RuntimeError with its log."""
        proc = await asyncio.create_subprocess_exec(
            self.script, *args,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError('{} {} failed ({}): {}'.format(
                self.script, ' '.join(args), proc.returncode, err.decode(errors='replace'),
            ))
        return out.decode().strip()

    async def coordinator(self) -> Node:
        """Node of the stream coordinator's Raft leader."""
        return self.by_name(await self.run('coordinator'))

    async def kill(self, node: Node) -> None:
        await self.run('kill', node.name)

    async def revive(self, node: Node) -> None:
        await self.run('revive', node.name)

@pytest.fixture(scope='session')
def cluster() -> Cluster:
    if len(URLS) < 3:
        missing('cluster not provisioned: scripts/cluster.sh start'
                    ' (and eval "$(scripts/cluster.sh env)")')
    status = subprocess.run([SCRIPT, 'status'], capture_output=True, text=True, check=False)
    if status.returncode != 0:
        pytest.fail('cluster not running (scripts/cluster.sh start):\n{}{}'.format(
            status.stdout, status.stderr,
        ))
    return Cluster(URLS, SCRIPT)

@pytest.fixture
def stream() -> str:
    """A stream name unique to the test."""
    return 'rbfly-failover-{}'.format(uuid.uuid4().hex[:12])

@dtc.dataclass
class Failover:
    """
    A stream replicated on the three nodes, its leader, and the nodes that
    survive when :py:meth:`kill_leader` kills it.
    """
    cluster: Cluster
    stream: str
    leader: Node
    survivors: list[Node]
    killed: bool = False

    async def kill_leader(self) -> None:
        self.killed = True
        await self.cluster.kill(self.leader)

async def _new_stream(cluster: Cluster, stream: str, on: Node) -> Node:
    """Create the stream with its leader on a node; return the leader."""
    client = streams_client(on.url)
    async with client:
        await client.create_stream(
            stream, initial_cluster_size=3, leader_locator='client-local', exist_ok=False,
        )
        for _ in range(50):  # the replicas start after the leader
            info = await client.stream_metadata(stream)
            if info.leader is not None and len(info.replicas) == 2:
                return cluster.by_port(info.leader[1])
            await asyncio.sleep(0.1)  # wall time: a poll's interval
    pytest.fail('stream {} has no leader and two replicas: {}'.format(stream, info))

LEADER_WITH_COORDINATOR = 'leader-with-coordinator'
LEADER_ONLY = 'leader-only'

@pytest.fixture(params=[LEADER_WITH_COORDINATOR, LEADER_ONLY])
async def failover(
        request: pytest.FixtureRequest, cluster: Cluster, stream: str,
        caplog: pytest.LogCaptureFixture,
) -> AsyncIterator[Failover]:
    """
    The test's stream, with its leader on a chosen node:

    - ``leader-with-coordinator``: on the node of the stream coordinator's
      Raft leader; when that node dies, the stream has no leader until the
      coordinator elected a leader of its own (a few hundred ms);
    - ``leader-only``: on another node; a new stream leader is elected at
      once (about 10 ms).

    After the test, the killed node is revived and the stream deleted.
    """
    caplog.set_level(logging.INFO, logger='rbfly')  # reconnections, metadata updates
    coordinator = await cluster.coordinator()
    if request.param == LEADER_WITH_COORDINATOR:
        on = coordinator
    else:
        on = next(n for n in cluster.nodes if n != coordinator)
    leader = await _new_stream(cluster, stream, on)
    assert leader == on, 'client-local leader locator ignored'
    f = Failover(cluster, stream, leader, [n for n in cluster.nodes if n != leader])
    try:
        yield f
    finally:
        if f.killed:
            await cluster.revive(f.leader)
        client = streams_client(f.survivors[0].url)
        async with client:
            await client.delete_stream(stream)

def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """
    Each failover test kills a node, and reviving it takes a RabbitMQ boot
    (8-10 s, the test's teardown): the four combinations of event loop
    and leader placement cost 200 s of the suite. The event loop matters
    below the failover logic (the asyncio adapter, tested on both loops by
    ``tests/integration``, connection cuts and broker restarts included),
    so each failover test runs each placement once, on loops that depend
    on the test's name only (across the tests, every loop meets every
    placement). A combination named on the command line always runs.
    """
    named = {arg.replace('\\', '/') for arg in config.args}
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        params = getattr(getattr(item, 'callspec', None), 'params', {})
        if 'failover' not in params or any(item.nodeid.endswith(a) for a in named):
            keep.append(item)
            continue
        parity = zlib.crc32(tp.cast(pytest.Function, item).originalname.encode()) & 1
        on_uvloop = params.get('_asyncio_loop_factory') is uvloop.new_event_loop
        with_coordinator = params['failover'] == LEADER_WITH_COORDINATOR
        wanted_uvloop = with_coordinator == bool(parity)
        (keep if on_uvloop == wanted_uvloop else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
