"""
Placement: a node serves subscriptions only to streams with a member (the
leader or a replica) on that node. A client connected to a node without a
member subscribes through a connection to a member's node; when that node
dies, the subscription moves to another member, without a gap or a repeat.

The streams here live on r2 and r3: created with three members through r2,
then the replica on r1 is deleted (the broker may move the leader to r3
then). The clients connect to r1 only.
"""

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import aclosing

import pytest

from rbfly.streams import (
    ConnectionEvent,
    ConnectionState,
    Offset,
    PublisherBatchFast,
    get_message_ctx,
    streams_client,
)
from rbfly.streams.error import ConnectionLost, StreamNotAvailable
from rbfly.testing import connect, node_connections

from ..integration.proxy import Proxy
from .conftest import FAST, NEEDS_CLUSTER, TIMEOUT, Cluster

pytestmark = NEEDS_CLUSTER


@pytest.fixture
async def away(cluster: Cluster, stream: str) -> AsyncIterator[str]:
    """A stream with members on r2 and r3, none on r1."""
    _, r2, _ = cluster.nodes
    async with streams_client(r2.url) as client:
        await client.create_stream(stream, initial_cluster_size=3, leader_locator='client-local')
        deadline = time.monotonic() + TIMEOUT
        while len((await client.stream_metadata(stream)).replicas) < 2:
            assert time.monotonic() < deadline, 'replicas did not start'
            await asyncio.sleep(0.1)  # wall time: a poll's interval
        await cluster.run('ctl', 'r2', 'rabbitmq-streams', 'delete_replica',
                          stream, 'r1@localhost')
        # the members restart after the change: wait for the new set
        want = {r2.port, cluster.nodes[2].port}
        while True:
            info = await client.stream_metadata(stream)
            got = {p for _, p in info.replicas}
            if info.leader is not None:
                got.add(info.leader[1])
            if got == want and len(info.replicas) == 1:
                break
            assert time.monotonic() < deadline, 'members {}, expected {}'.format(got, want)
            await asyncio.sleep(0.1)  # wall time: a poll's interval
    try:
        yield stream
    finally:
        async with streams_client(r2.url) as client:
            await client.delete_stream(stream)

async def publish(url: str, stream: str, start: int, count: int) -> None:
    async with streams_client(url) as client:
        async with client.publisher(stream, cls=PublisherBatchFast) as publisher:
            for i in range(start, start + count):
                publisher.batch(i)
            async with asyncio.timeout(TIMEOUT):
                await publisher.flush()

async def test_node_without_member_has_no_subscriptions(cluster: Cluster, away: str) -> None:
    """The broker itself refuses: the reason for the placement."""
    from rbfly.streams.protocol.commands import OffsetSpec, Subscribe
    client = streams_client(cluster.nodes[0].url)
    async with client:
        protocol = await connect(client)
        with pytest.raises(StreamNotAvailable):
            await protocol.request(Subscribe(0, away, OffsetSpec.first(), 10, {}))

@pytest.mark.parametrize('chunks', [False, True])
async def test_subscribe_through_node_without_member(
        cluster: Cluster, away: str, chunks: bool,
) -> None:
    """
    A client of r1 reads a stream living on r2 and r3: every message once,
    in order (published through r1: the broker forwards to the leader).
    """
    r1 = cluster.nodes[0]
    await publish(r1.url, away, 0, 500)
    received: list[object] = []
    client = streams_client(r1.url)
    async with client, asyncio.timeout(TIMEOUT):
        if chunks:
            async with aclosing(client.subscribe_chunks(away, offset=Offset.FIRST)) as it:
                async for chunk in it:
                    received.extend(m.body for m in chunk)
                    if len(received) >= 500:
                        break
        else:
            async with aclosing(client.subscribe(away, offset=Offset.FIRST)) as bodies:
                async for body in bodies:
                    received.append(body)
                    if len(received) == 500:
                        break
        # the subscription's node connection closes with the subscription
        assert node_connections(client) == {}
    assert received == list(range(500))

async def test_subscription_moves_when_member_node_dies(cluster: Cluster, away: str) -> None:
    """
    The subscription of an r1 client sits on the stream's replica (spared
    the leader); that node is killed mid-stream; the subscription moves to
    the leader and reads on. With the node back, messages published then
    come too: every message once, in order.
    """
    r1 = cluster.nodes[0]
    n = 1000
    await publish(r1.url, away, 0, n)
    received: list[object] = []
    offsets: list[int] = []
    reached = {k: asyncio.Event() for k in (n // 3, n, 2 * n)}
    client = streams_client(r1.url, reconnect=FAST)

    async def consume() -> None:
        async for body in client.subscribe(away, offset=Offset.FIRST):
            received.append(body)
            offsets.append(get_message_ctx().stream_offset)
            if len(received) % 100 == 0:
                await asyncio.sleep(0.05)  # slow: the kill comes mid-stream
            if len(received) in reached:
                reached[len(received)].set()

    async def wait(k: int) -> None:
        # the subscriber's error, if any, ends the wait
        event = asyncio.ensure_future(reached[k].wait())
        await asyncio.wait([task, event], timeout=TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
        event.cancel()
        if task.done():
            task.result()
        assert reached[k].is_set(), 'received {} of {}'.format(len(received), k)

    async with streams_client(r1.url) as admin:
        info = await admin.stream_metadata(away)
    replica = cluster.by_port(info.replicas[0][1])
    killed = False
    async with client:
        task = asyncio.create_task(consume())
        try:
            await wait(n // 3)
            assert [w[1] for w in node_connections(client) if w is not None] == [replica.port]
            await cluster.kill(replica)
            killed = True
            await wait(n)  # the rest, from the leader
            await cluster.revive(replica)
            killed = False
            await publish(r1.url, away, n, n)
            await wait(2 * n)
        finally:
            task.cancel()
            await asyncio.wait([task])
            if killed:
                await cluster.revive(replica)
    assert received == list(range(2 * n))
    assert offsets == list(range(2 * n))

async def test_publisher_on_leader_node(cluster: Cluster, away: str) -> None:
    """
    A publisher of an r1 client goes to the leader's node (no forwarding
    through r1); its connection closes with it; the stream holds every
    message once.
    """
    r1 = cluster.nodes[0]
    events: list[ConnectionEvent] = []
    closed = asyncio.Event()

    def on_connection(event: ConnectionEvent) -> None:
        events.append(event)
        if event.placement and event.state is ConnectionState.CLOSED:
            closed.set()

    async with streams_client(r1.url, on_connection=on_connection) as client:
        leader = (await client.stream_metadata(away)).leader
        assert leader is not None
        async with client.publisher(away, name='placed', cls=PublisherBatchFast) as publisher:
            assert [w[1] for w in node_connections(client) if w is not None] == [leader[1]]
            assert publisher.protocol is not await connect(client)
            for i in range(300):
                publisher.batch(i)
            await publisher.flush()
        assert node_connections(client) == {}
        async with asyncio.timeout(TIMEOUT):
            await closed.wait()  # the node connection closes in a task
        placed = [(e.state, e.node) for e in events if e.placement]
        assert placed == [
            (ConnectionState.OPEN, leader), (ConnectionState.CLOSED, leader),
        ]
        assert await client.query_publisher_sequence(away, 'placed') == 300
        received: list[object] = []
        async with aclosing(client.subscribe(away, offset=Offset.FIRST, timeout=5)) as bodies:
            async for body in bodies:
                received.append(body)
                if len(received) == 300:
                    break
    assert received == list(range(300))

async def test_through_load_balancer(cluster: Cluster, away: str) -> None:
    """
    Behind a load balancer (a proxy handing connections to r1, r2, r3 in
    turn), with an address resolver naming it for every node: the client
    connects until it reaches a member's node, every connection goes
    through the balancer, and every message arrives once.
    """
    r1 = cluster.nodes[0]
    await publish(r1.url, away, 0, 300)
    balancer = Proxy('localhost', r1.port, tuple(('localhost', n.port) for n in cluster.nodes[1:]))
    await balancer.start()
    resolved: list[tuple[str, int]] = []

    def resolver(host: str, port: int) -> tuple[str, int]:
        resolved.append((host, port))
        return '127.0.0.1', balancer.port

    url = 'rabbitmq-stream://guest:guest@127.0.0.1:{}/'.format(balancer.port)
    client = streams_client(url, address_resolver=resolver, reconnect=FAST)
    received: list[object] = []
    try:
        async with client, asyncio.timeout(TIMEOUT):
            home = await connect(client)
            assert home.connection_properties['advertised_port'] == str(r1.port)
            async with aclosing(client.subscribe(away, offset=Offset.FIRST)) as bodies:
                async for body in bodies:
                    received.append(body)
                    if len(received) == 300:
                        break
                # a member's node, reached through the balancer
                (node,) = node_connections(client)
                assert node is not None
                assert resolved[0] == node
                assert node[1] in {n.port for n in cluster.nodes[1:]}
                (view,) = node_connections(client)[node]
                assert view.protocol is not None
                assert view.protocol.address == ('127.0.0.1', balancer.port)
                assert view.protocol.connection_properties['advertised_port'] == str(node[1])
            assert balancer.connections >= 2
    finally:
        await balancer.close()
    assert received == list(range(300))

async def test_publishers_on_leader(cluster: Cluster, away: str) -> None:
    """
    An address resolver that always lands on r1, a node without a member:
    the leader's node is never reached. By default a publisher then
    publishes through r1 (the broker forwards), and the stream holds its
    messages; with ``publishers_on_leader`` (Java's
    ``forceLeaderForProducers``) declaring it raises ``ConnectionLost``
    naming the leader's node, and nothing is published.
    """
    r1 = cluster.nodes[0]
    resolved: list[tuple[str, int]] = []

    def resolver(host: str, port: int) -> tuple[str, int]:
        resolved.append((host, port))
        return 'localhost', r1.port

    async with streams_client(r1.url, address_resolver=resolver, reconnect=FAST) as client:
        leader = (await client.stream_metadata(away)).leader
        assert leader is not None and leader[1] != r1.port
        async with client.publisher(away, name='forwarded', cls=PublisherBatchFast) as publisher:
            assert publisher.protocol is await connect(client)
            for i in range(100):
                publisher.batch(i)
            async with asyncio.timeout(TIMEOUT):
                await publisher.flush()
        assert resolved and set(resolved) == {leader}
        assert await client.query_publisher_sequence(away, 'forwarded') == 100

    async with streams_client(
            r1.url, address_resolver=resolver, reconnect=FAST, publishers_on_leader=True,
    ) as client:
        with pytest.raises(ConnectionLost, match=r'stream leader, .*:{}, cannot be reached'.format(
                leader[1])):
            async with asyncio.timeout(TIMEOUT):
                async with client.publisher(away, name='on-leader', cls=PublisherBatchFast):
                    pytest.fail('declared off the leader')
        assert node_connections(client) == {}
        assert await client.query_publisher_sequence(away, 'on-leader') == 0
        # the client stays usable
        assert (await client.stream_metadata(away)).leader == leader

async def test_replicas_only(cluster: Cluster, stream: str) -> None:
    """
    A client connected to the node of a stream's leader: by default its
    subscription reads there; with ``replicas_only`` it reads through a
    connection to a replica's node. Both receive every message once.
    """
    r1 = cluster.nodes[0]
    async with streams_client(r1.url, reconnect=FAST) as client:
        await client.create_stream(
            stream, initial_cluster_size=3, leader_locator='client-local',
        )
        async with client.publisher(stream, cls=PublisherBatchFast) as publisher:
            for i in range(300):
                publisher.batch(i)
            await publisher.flush()
        info = await client.stream_metadata(stream)
        assert info.leader is not None and info.leader[1] == r1.port
    try:
        for replicas_only in (False, True):
            client = streams_client(r1.url, reconnect=FAST, replicas_only=replicas_only)
            received: list[object] = []
            async with client, asyncio.timeout(TIMEOUT):
                async with aclosing(client.subscribe(stream, offset=Offset.FIRST)) as bodies:
                    async for body in bodies:
                        received.append(body)
                        if len(received) == 300:
                            break
                    nodes = list(node_connections(client))
                    metrics = client.metrics()
            assert received == list(range(300)), replicas_only
            if replicas_only:
                (node,) = nodes  # a replica's node: not r1, the leader's
                assert node is not None and node[1] in {n.port for n in cluster.nodes[1:]}
                assert metrics.connections == 2
            else:
                assert nodes == []
                assert metrics.connections == 1
    finally:
        async with streams_client(r1.url) as client:
            await client.delete_stream(stream)
