"""
A consumer group through a partition leader's failover (rbfly issue 30):
two single active consumers of every partition of a super stream, each a
client connected to a node that survives, have processed what was
published when the node of a partition's leader is killed (SIGKILL). The
group recovers: every message, published before the kill and after the
new leaders' election, is processed; each partition has one active
member, in the consumers' view and in the broker's, and the broker keeps
no member beyond the two (no ghost).

What went wrong on RabbitMQ 4.0.5 before (3 of 4 harness runs with ghost
members, 2 with a partition never consumed again; ``python -m
soak.consumer_group --cluster --kill-leader N``): the client's own
connection, which queries and stores the group's offsets, watches the
leaders it looked up; their death made the broker drop the consumers'
subscriptions there (a MetadataUpdate) while keeping them, one active, in
the groups (rabbitmq-server issue 13961, fixed in 4.1.2). The client
subscribed again, and the broker never activated the new subscription.
Here that happens every time (the test failed 2 of 2 runs without the
fix: 205 messages never processed, partition 0 without an active member).
So, on such a broker, a single active consumer's subscription has a
connection of its own, closed when its stream moves
(:py:func:`rbfly.streams.parts.placement.sac_cleanup_reliable`).

The test runs on one event loop: the failover logic is above it, and the
node's boot after the test (its teardown) takes 10-25 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator

import pytest

from rbfly.streams import (
    ConsumerUpdateContext,
    Offset,
    PublisherBatchFast,
    ResourceState,
    StateChange,
    get_message_ctx,
    streams_client,
)

from .conftest import FAST, NEEDS_CLUSTER, TIMEOUT, Cluster, Node

pytestmark = [NEEDS_CLUSTER, pytest.mark.one_loop]

PARTITIONS = 3
BEFORE = 600
"""Messages published before the kill (and as many after it)."""
GROUP = 'group'
STORE_INTERVAL = 0.5
STORED = 3 * STORE_INTERVAL
"""Seconds after which the members stored the offsets of what they processed."""
RECOVERY = 30.0
"""Seconds the group has, after the messages of after the kill are published, to process all."""

class Member:
    """A consumer of the group: a client, what it processed, where it is active."""
    def __init__(self, index: int, node: Node) -> None:
        self.index = index
        self.node = node
        self.processed: set[int] = set()
        self.active: dict[str, bool] = defaultdict(bool)

    def on_update(self, update: ConsumerUpdateContext) -> None:
        self.active[update.stream] = update.active

    def on_state(self, change: StateChange) -> None:
        if change.state is not ResourceState.OPEN:  # lost or moved: until activated again
            self.active[change.stream] = False

    async def consume(self, super_stream: str) -> None:
        client = streams_client(self.node.url, reconnect=FAST)
        async with client:
            messages = client.subscribe_super_stream(
                super_stream, name=GROUP, single_active=True, offset=Offset.FIRST,
                store_every=10, store_interval=STORE_INTERVAL,
                consumer_update=self.on_update, on_state=self.on_state,
            )
            async with contextlib.aclosing(messages):
                async for body in messages:
                    assert isinstance(body, int)
                    assert get_message_ctx().stream is not None
                    self.processed.add(body)

@pytest.fixture
async def super_stream(cluster: Cluster) -> AsyncIterator[str]:
    """A super stream whose partitions have a member on each node."""
    name = 'rbfly-group-{}'.format(uuid.uuid4().hex[:10])
    r1 = cluster.nodes[0]
    async with streams_client(r1.url) as client:
        partitions = await client.create_super_stream(
            name, PARTITIONS, arguments={'initial-cluster-size': '3'}, exist_ok=False,
        )
        deadline = time.monotonic() + TIMEOUT
        for p in partitions:
            while len((await client.stream_metadata(p)).replicas) < 2:
                assert time.monotonic() < deadline, 'the replicas of {} did not start'.format(p)
                await asyncio.sleep(0.1)  # wall time: a poll's interval
    try:
        yield name
    finally:
        async with streams_client([n.url for n in cluster.nodes]) as client:
            await client.delete_super_stream(name)

async def wait_leaders(url: str, partitions: list[str], gone: Node) -> None:
    """Wait until every partition has a leader on a node other than ``gone``."""
    deadline = time.monotonic() + TIMEOUT
    async with streams_client(url) as client:
        for p in partitions:
            while True:
                info = await client.stream_metadata(p)
                if info.leader is not None and info.leader[1] != gone.port:
                    break
                assert time.monotonic() < deadline, 'no new leader of {}'.format(p)
                await asyncio.sleep(0.1)  # wall time: a poll's interval

async def publish(url: str, super_stream: str, start: int, count: int) -> None:
    """Publish the integers start..start+count-1, routed by their hash."""
    async with streams_client(url, reconnect=FAST) as client, \
            client.super_stream_publisher(super_stream, str, cls=PublisherBatchFast) as p:
        for i in range(start, start + count):
            p.batch(i)
        async with asyncio.timeout(TIMEOUT):
            await p.flush()

async def leaders(cluster: Cluster, node: Node, partitions: list[str]) -> dict[str, str]:
    """The node of each partition's leader, as a node that is up says."""
    out = await cluster.run('ctl', node.name, 'rabbitmqctl', '-q', 'list_queues', 'name',
                            'leader', '--no-table-headers')
    found = dict(line.split()[:2] for line in out.splitlines() if len(line.split()) >= 2)
    return {p: found[p].split('@')[0] for p in partitions if p in found}

async def group_members(cluster: Cluster, node: Node, partition: str) -> list[dict[str, object]]:
    """The members the broker keeps in the group of a partition."""
    out = await cluster.run(
        'ctl', node.name, 'rabbitmq-streams', 'list_stream_group_consumers',
        '--stream', partition, '--reference', GROUP, '--formatter', 'json',
    )
    members = json.loads(out)
    assert isinstance(members, list)
    return members

async def joined(members: list[Member], partitions: list[str],
                 tasks: list[asyncio.Task[None]]) -> None:
    """
    Wait until each partition has one active member and each member is
    active on one partition at least.

    The members join one after the other: RabbitMQ makes active the
    member of a partition's group at index ``partition index mod members``,
    in the order they registered in that group (its stream SAC
    coordinator, ``evaluate_active_consumer``). Members joining at once
    register in an order of their race, which may differ from one
    partition to another, and one member may then be the active one of
    all three partitions, the other of none: a legitimate outcome, which
    the test, waiting for both members to be active, took for a group
    that does not consume (1 run of 4; a run of the joins alone showed
    other orders in 3 of 12). Joined in turn, the first member is active
    on partitions 0 and 2, the second on partition 1, handed over by the
    first.
    """
    deadline = time.monotonic() + TIMEOUT
    while not (all(any(m.active.values()) for m in members)
               and all(sum(m.active[p] for m in members) == 1 for p in partitions)):
        assert time.monotonic() < deadline, 'members not active: {}'.format(
            {p: [m.index for m in members if m.active[p]] for p in partitions})
        assert not any(t.done() for t in tasks), [t.result() for t in tasks if t.done()]
        await asyncio.sleep(0.05)

async def test_group_recovers_from_leader_kill(cluster: Cluster, super_stream: str) -> None:
    """
    The node of partition 0's leader dies while two members, connected to
    the two other nodes, consume: every message is processed, and each
    partition has one active member, no ghost.
    """
    r1 = cluster.nodes[0]
    async with streams_client(r1.url) as client:
        partitions = await client.super_stream_partitions(super_stream)
    led = await leaders(cluster, r1, partitions)
    victim = cluster.by_name(led[partitions[0]])
    survivors = [n for n in cluster.nodes if n != victim]
    members = [Member(i, n) for i, n in enumerate(survivors)]
    tasks: list[asyncio.Task[None]] = []
    killed = False
    try:
        # the members join one after the other (see joined())
        for m in members:
            tasks.append(asyncio.create_task(m.consume(super_stream)))
            await joined(members[:len(tasks)], partitions, tasks)
        await publish(survivors[0].url, super_stream, 0, BEFORE)
        deadline = time.monotonic() + TIMEOUT
        # every message processed: the offsets were queried and stored
        # (the own connections watch the partitions' leaders)
        while len(set().union(*(m.processed for m in members))) < BEFORE:
            if time.monotonic() > deadline:
                broker = {p: await group_members(cluster, r1, p) for p in partitions}
                pytest.fail('the group did not consume: {} of {} processed; active: {};'
                            ' the broker\'s groups: {}'.format(
                    len(set().union(*(m.processed for m in members))), BEFORE,
                    {p: [m.index for m in members if m.active[p]] for p in partitions},
                    broker))
            assert not any(t.done() for t in tasks), [t.result() for t in tasks if t.done()]
            await asyncio.sleep(0.05)
        # the last offsets stored (store_interval), nothing stored after:
        # RabbitMQ 4.0.5 closes a connection storing an offset of a stream
        # without a leader (osiris_writer:write_tracking(undefined, ...)),
        # which would remove its members from the groups, ghosts included
        await asyncio.sleep(STORED)
        await cluster.kill(victim)
        killed = True
        await wait_leaders(survivors[1].url, partitions, victim)
        await publish(survivors[1].url, super_stream, BEFORE, BEFORE)

        expected = set(range(2 * BEFORE))
        deadline = time.monotonic() + RECOVERY
        while True:
            processed = set().union(*(m.processed for m in members))
            missing = expected - processed
            if not missing:
                break
            assert not any(t.done() for t in tasks), [t.result() for t in tasks if t.done()]
            assert time.monotonic() < deadline, (
                '{} messages not processed {} s after the failover; active members: {}'.format(
                    len(missing), RECOVERY,
                    {p: [m.index for m in members if m.active[p]] for p in partitions}))
            await asyncio.sleep(0.1)  # wall time: a poll's interval

        # the consumers' view: one active member a partition
        deadline = time.monotonic() + TIMEOUT
        while any(sum(m.active[p] for m in members) != 1 for p in partitions):
            assert time.monotonic() < deadline, {
                p: [m.index for m in members if m.active[p]] for p in partitions}
            await asyncio.sleep(0.1)  # wall time: a poll's interval
        # the broker's: two members, one active, in each group (RabbitMQ
        # 4.1+ adds the connection's state: "active (connected)")
        for p in partitions:
            found = await group_members(cluster, survivors[0], p)
            active = [m for m in found if str(m['state']).split(' ')[0] == 'active']
            assert len(found) == len(members) and len(active) == 1, (p, found)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.wait(tasks)
        if killed:
            await cluster.revive(victim)
