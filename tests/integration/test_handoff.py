"""
Hand-offs of single active consumers (a consumer group) on RabbitMQ 4.0
and 4.3, in the middle of consumption: a super stream's partitions moving
as members join and leave, a plain stream passing to the next member, a
member losing its connection. Each message is processed once, by the
member active at the time (automatic offset tracking commits on stepping
down and at the end; a member activated starts after the stored offset).

Members are clients in one process here; test_examples.py's
test_consumer_group runs examples/consumer_group.py as processes, stopped
with signals.
"""

import asyncio
import collections
import contextlib
import logging
import subprocess
import typing as tp
import uuid
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest

from rbfly.streams import (
    ConsumerUpdateContext,
    Offset,
    PublisherBatchFast,
    ResourceState,
    StateChange,
    StreamsClient,
    get_message_ctx,
    streams_client,
)
from rbfly.streams.backoff import Backoff

from .group_view import group_consumers
from .proxy import Proxy
from .test_update_secret import SCRIPT

GROUP = 'handoff-group'
WAIT = 30  # seconds any step may take at most

@pytest.fixture(params=['4.0', '4.3'])
def url(request: pytest.FixtureRequest) -> str:
    """RabbitMQ 4.0, then 4.3."""
    return str(request.getfixturevalue('url4' if request.param == '4.0' else 'url43'))

@pytest.fixture
async def admin(url: str) -> AsyncIterator[StreamsClient]:
    async with streams_client(url) as client:
        yield client

Processed: tp.TypeAlias = list[tuple[str, str, int, object]]
"""(member, stream, offset, body) of each message processed, in order."""

class Member:
    """
    A member of the group, on a client of its own: processes messages
    (records them, yields to the loop) until it leaves.

    :param hold_at: Stop after processing this many messages (holding the
        last one: the iteration does not move past it) until
        :py:meth:`go` (``None``: never). On uvloop the "little processing"
        takes no time (uvloop rounds the sleep of 0.5 ms to 0 ms): a
        member reads 2,000 messages in about 80 ms, before another member
        has connected and subscribed.
    """
    def __init__(
            self, url: str, label: str, processed: Processed, hold_at: int | None = None,
    ) -> None:
        self.url = url
        self.label = label
        self.processed = processed
        self.count = 0
        self.updates: list[ConsumerUpdateContext] = []
        self.states: list[tuple[float, ResourceState, str]] = []
        self.log: list[tuple[float, int]] = []  # (when, offset) of each message processed
        self.subscribed = asyncio.Event()  # (every partition)
        self.lost = asyncio.Event()  # its subscription is recovering (once)
        self.held = asyncio.Event()  # stopped at hold_at
        self.task: asyncio.Task[None] | None = None
        self._progress = asyncio.Event()
        self._hold_at = hold_at
        self._go = asyncio.Event()

    def start(self, messages: tp.Callable[[StreamsClient], tp.AsyncGenerator[object, None]],
              client: StreamsClient | None = None) -> None:
        self.task = asyncio.create_task(self._run(messages, client))

    def on_update(self, context: ConsumerUpdateContext) -> None:
        self.updates.append(context)

    def on_state(self, change: StateChange) -> None:
        self.states.append((asyncio.get_running_loop().time(), change.state, change.reason))
        if change.state is ResourceState.OPEN:
            self.subscribed.set()
        elif change.state is ResourceState.RECOVERING:
            self.lost.set()

    def go(self) -> None:
        """Go on processing after stopping at ``hold_at``."""
        self._go.set()

    async def _run(
            self, messages: tp.Callable[[StreamsClient], tp.AsyncGenerator[object, None]],
            client: StreamsClient | None,
    ) -> None:
        async with contextlib.AsyncExitStack() as stack:
            if client is None:
                client = await stack.enter_async_context(streams_client(self.url))
            iterator = messages(client)
            async with contextlib.aclosing(iterator):
                async for body in iterator:
                    ctx = get_message_ctx()
                    assert ctx.stream is not None
                    self.processed.append((self.label, ctx.stream, ctx.stream_offset, body))
                    self.log.append((asyncio.get_running_loop().time(), ctx.stream_offset))
                    self.count += 1
                    self._progress.set()
                    if self.count == self._hold_at:
                        self.held.set()
                        await self._go.wait()
                    await asyncio.sleep(0.0005)  # a little processing

    async def reach(self, count: int) -> None:
        """Wait until the member processed ``count`` messages (in all)."""
        async with asyncio.timeout(WAIT):
            while self.count < count:
                self._progress.clear()
                await self._progress.wait()

    def describe(self, start: float) -> str:
        """
        What the member processed (runs of consecutive offsets, and when)
        and its subscription's states (seconds since ``start``), for a failure's
        report.
        """
        runs: list[list[tuple[float, int]]] = []  # of consecutive offsets
        for t, o in self.log:
            if runs and runs[-1][-1][1] + 1 == o:
                runs[-1].append((t, o))
            else:
                runs.append([(t, o)])
        task = self.task
        outcome = 'not started' if task is None else 'running' if not task.done() \
            else 'cancelled' if task.cancelled() else repr(task.exception())
        states = ', '.join('{:.3f} {} ({})'.format(t - start, s.value, r)
                           for t, s, r in self.states)
        processed = ', '.join('{}-{} ({:.3f}-{:.3f})'.format(
            r[0][1], r[-1][1], r[0][0] - start, r[-1][0] - start) for r in runs)
        return '{}: {} processed: {}; task {}; states: {}'.format(
            self.label, self.count, processed or 'none', outcome, states or 'none',
        )

    async def leave(self) -> None:
        """
        Leave the group, as a service stopping on SIGTERM: cancel the
        task processing messages (closing the iteration commits the
        offsets of the messages processed); it may be waiting for one.
        """
        task = self.task
        assert task is not None
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=WAIT)
        assert done, '{} did not stop'.format(self.label)
        if not task.cancelled():
            task.result()

def check_once(processed: Processed, total: int) -> None:
    """
    Each message (bodies 0 to ``total`` - 1) processed exactly once, in
    order per stream.
    """
    seen = collections.Counter((stream, offset) for _, stream, offset, _ in processed)
    repeated = {k: n for k, n in seen.items() if n > 1}
    assert not repeated, 'processed more than once: {}'.format(sorted(repeated)[:10])
    for stream in {s for _, s, _, _ in processed}:
        offsets = [o for _, s, o, _ in processed if s == stream]
        assert offsets == sorted(offsets), 'out of order on {}'.format(stream)
    assert sorted(tp.cast(int, body) for *_, body in processed) == list(range(total))

async def wait_all(members: tp.Sequence[Member], total: int) -> None:
    """Wait until the members processed ``total`` messages between them (once each)."""
    processed = members[0].processed
    async with asyncio.timeout(WAIT):
        while len({(s, o) for _, s, o, _ in processed}) < total:
            waits = [asyncio.ensure_future(m.reach(m.count + 1)) for m in members
                     if m.task and not m.task.done()]
            assert waits, 'no member left'
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waits:
                    w.cancel()
                await asyncio.wait(waits)

async def stop(members: tp.Sequence[Member]) -> None:
    """
    Stop the members still running (a test failed): before their stream is
    deleted, which they would take for a stream moved.
    """
    tasks = [m.task for m in members if m.task is not None and not m.task.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=WAIT)

async def publish_until(
        client: StreamsClient, super_stream: str, stop: asyncio.Event,
) -> int:
    """
    Publish numbers to a super stream, about 1,000 a second, until
    ``stop`` is set; return how many (each confirmed).
    """
    count = 0
    async with client.super_stream_publisher(
            super_stream, str, cls=PublisherBatchFast) as publisher:
        while not stop.is_set():
            for _ in range(10):
                publisher.batch(count)
                count += 1
            await publisher.flush()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.01)
    return count

async def test_super_stream_rebalance(url: str, admin: StreamsClient) -> None:
    """
    Members join and leave a group reading a super stream of 6 partitions
    while a producer publishes: at each join and leave partitions move
    while their old owner is processing them; no message is lost or
    processed twice. The callback names each partition, the group, and
    the stored offset.
    """
    super_stream = 'rbfly-handoff-{}'.format(uuid.uuid4().hex[:8])
    partitions = await admin.create_super_stream(super_stream, 6)
    stop = asyncio.Event()
    producer = asyncio.create_task(publish_until(admin, super_stream, stop))
    processed: Processed = []
    members = [Member(url, label, processed) for label in 'ABC']
    try:
        def messages(member: Member) -> tp.Callable[
                [StreamsClient], tp.AsyncGenerator[object, None]]:
            return lambda client: client.subscribe_super_stream(
                super_stream, name=GROUP, single_active=True, offset=Offset.FIRST,
                store_every=10, store_interval=0.2, consumer_update=member.on_update,
            )

        a, b, c = members
        a.start(messages(a))
        await a.reach(300)
        b.start(messages(b))  # partitions move from A to B
        await b.reach(200)
        await a.reach(a.count + 200)
        c.start(messages(c))  # and to C
        await c.reach(200)
        await a.leave()  # A's partitions move to B and C
        await b.reach(b.count + 200)
        await b.leave()  # all go to C
        await c.reach(c.count + 200)
        stop.set()
        total = await asyncio.wait_for(producer, WAIT)
        await wait_all(members, total)
        await c.leave()
    finally:
        stop.set()
        for m in members:
            if m.task is not None:
                m.task.cancel()
        await asyncio.wait([producer, *(m.task for m in members if m.task)])
        await admin.delete_super_stream(super_stream)
    check_once(processed, total)
    # every member had some
    assert all(m.count > 0 for m in members)
    updates = [u for m in members for u in m.updates]
    assert {u.stream for u in updates} == set(partitions)
    assert {u.name for u in updates} == {GROUP}
    assert any(not u.active for u in updates)  # steps down happened
    # activated after a step-down: the stored offset is the old owner's
    # last message of the partition, and the start right after it
    for m in members:
        for u in m.updates:
            if u.active and u.stored_offset is not None:
                assert u.offset == Offset.offset(u.stored_offset + 1)
                before = [o for who, s, o, _ in processed if s == u.stream and who != m.label]
                assert u.stored_offset in before

async def test_stream_passes_to_next_member(url: str, admin: StreamsClient) -> None:
    """
    A plain stream: the first member processes part of it and leaves in
    the middle of a chunk; the next member continues right after its last
    message, by default (no ``Offset.reference`` needed), and its
    callback is told the stored offset.
    """
    stream = 'rbfly-handoff-{}'.format(uuid.uuid4().hex[:8])
    await admin.create_stream(stream)
    try:
        async with admin.publisher(stream, cls=PublisherBatchFast) as publisher:
            for i in range(1000):
                publisher.batch(i)
                if i % 250 == 249:
                    await publisher.flush()
        processed: Processed = []
        a, b = Member(url, 'A', processed), Member(url, 'B', processed)

        def messages(member: Member) -> tp.Callable[
                [StreamsClient], tp.AsyncGenerator[object, None]]:
            return lambda client: client.subscribe(
                stream, name=GROUP, single_active=True, offset=Offset.FIRST,
                store_every=1000, store_interval=60, consumer_update=member.on_update,
            )

        a.start(messages(a))
        await a.reach(1)
        b.start(messages(b))
        await a.reach(333)  # mid-chunk (chunks of 250)
        await a.leave()
        await wait_all([a, b], 1000)
        await b.leave()
    finally:
        await admin.delete_stream(stream)
    check_once(processed, 1000)
    last_a = max(o for who, _, o, _ in processed if who == 'A')
    assert min(o for who, _, o, _ in processed if who == 'B') == last_a + 1
    assert b.updates[-1] == ConsumerUpdateContext(
        stream, GROUP, True, last_a, Offset.offset(last_a + 1),
    )

async def test_lost_connection_while_active(
        url: str, admin: StreamsClient, request: pytest.FixtureRequest,
        caplog: pytest.LogCaptureFixture,
) -> None:
    """
    The active member loses its connection: the next member takes over
    after the offset stored last; the first, connected again, waits, and
    hands out nothing it received before the loss (which would be
    processed twice). Repeated at most: what the tracking had not stored.
    """
    for logger in ('rbfly', __name__):  # the story, on a failure
        caplog.set_level(logging.INFO, logger=logger)
    broker = '4' if request.node.callspec.params['url'] == '4.0' else '43'
    stream = 'rbfly-handoff-{}'.format(uuid.uuid4().hex[:8])
    await admin.create_stream(stream)
    p = urlsplit(url)
    proxy = Proxy(p.hostname or 'localhost', p.port or 5552)
    await proxy.start()
    processed: Processed = []
    # A stops at message 600 until its connection is cut and it knows,
    # so that the cut comes in the middle of the stream, A active and
    # holding a message (A read all 2,000 before B had subscribed on
    # uvloop, in 1 run in 10 on RabbitMQ 4.0: the stored offset was 1999,
    # and B, active, had nothing to process)
    a, b = Member(url, 'A', processed, hold_at=600), Member(url, 'B', processed)
    try:
        async with admin.publisher(stream, cls=PublisherBatchFast) as publisher:
            for i in range(2000):
                publisher.batch(i)
                if i % 100 == 99:
                    await publisher.flush()

        def messages(member: Member) -> tp.Callable[
                [StreamsClient], tp.AsyncGenerator[object, None]]:
            return lambda client: client.subscribe(
                stream, name=GROUP, single_active=True, offset=Offset.FIRST,
                store_every=50, store_interval=60, on_state=member.on_state,
            )

        proxied = streams_client(
            'rabbitmq-stream://guest:guest@127.0.0.1:{}/'.format(proxy.port),
            reconnect=Backoff(initial=0.05, maximum=0.2),
        )
        async with proxied, explained(admin, broker, stream, [a, b]):
            a.start(messages(a), proxied)
            await a.reach(500)
            b.start(messages(b))
            await asyncio.wait_for(b.subscribed.wait(), WAIT)  # a member, inactive
            await asyncio.wait_for(a.held.wait(), WAIT)  # at 600 (of 2,000)
            assert b.count == 0
            at_cut = a.count
            logging.getLogger(__name__).info('cutting A\'s connections')
            proxy.cut()
            await asyncio.wait_for(a.lost.wait(), WAIT)
            a.go()
            await b.reach(1)
            await wait_all([a, b], 2000)
            await a.leave()
            await b.leave()
    finally:
        await stop([a, b])
        await proxy.close()
        await admin.delete_stream(stream)
    seen = collections.Counter(o for _, _, o, _ in processed)
    repeated = sorted(o for o, n in seen.items() if n > 1)
    assert set(seen) == set(range(2000))
    # what the tracking had not stored: up to store_every messages since
    # the last store that reached the broker (the one sent last may be
    # lost with the connection, with store_every more before it) and the
    # message at hand at the loss
    assert len(repeated) <= 2 * 50 + 1, 'more than the tracking allows: {}'.format(repeated)
    # A took nothing after the loss but what it held at the cut, and
    # nothing of what B processed
    a_offsets = [o for who, _, o, _ in processed if who == 'A']
    assert len(a_offsets) <= at_cut + 1
    assert min(o for who, _, o, _ in processed if who == 'B') <= max(a_offsets) + 1

@contextlib.asynccontextmanager
async def explained(
        admin: StreamsClient, broker: str, stream: str, members: tp.Sequence[Member],
) -> AsyncIterator[None]:
    """
    On a failure in the block, add to its error the broker's view of the
    group (its members' states, the offset stored under its name) and
    each member's story, so that the report says whether the broker or a
    member is at fault.
    """
    start = asyncio.get_running_loop().time()
    try:
        yield
    except Exception as ex:
        try:
            # (bounded: the report is not worth a hung test)
            group: object = await group_consumers(broker, stream, GROUP, timeout=120)
        except Exception as group_ex:  # noqa: BLE001 - the report of a failure
            group = group_ex
        try:
            stored: object = await asyncio.wait_for(admin.query_offset(stream, GROUP), WAIT)
        except Exception as stored_ex:  # noqa: BLE001 - the report of a failure
            stored = stored_ex
        ex.add_note('group {!r} on {!r}, as the broker lists it: {}; offset stored: {}'.format(
            GROUP, stream, group, stored))
        for m in members:
            ex.add_note(m.describe(start))
        raise

async def test_stream_restarted_while_active(
        url: str, admin: StreamsClient, request: pytest.FixtureRequest,
) -> None:
    """
    The stream of an active member restarts (its leader moves: the broker
    drops its subscriptions there, with a metadata update): the member
    subscribes again, hands out nothing it held from before (the group
    may have another active member by then), and the group goes on with
    one active member and no member left behind; repeated at most what
    the tracking had not stored.
    """
    broker = '4' if request.node.callspec.params['url'] == '4.0' else '43'
    stream = 'rbfly-handoff-{}'.format(uuid.uuid4().hex[:8])
    await admin.create_stream(stream)

    async def publish(first: int, count: int) -> None:
        async with admin.publisher(stream, cls=PublisherBatchFast) as publisher:
            for i in range(first, first + count):
                publisher.batch(i)
                if i % 100 == 99:
                    await publisher.flush()

    try:
        await publish(0, 2000)
        processed: Processed = []
        a, b = Member(url, 'A', processed), Member(url, 'B', processed)

        def messages(member: Member) -> tp.Callable[
                [StreamsClient], tp.AsyncGenerator[object, None]]:
            return lambda client: client.subscribe(
                stream, name=GROUP, single_active=True, offset=Offset.FIRST,
                store_every=50, store_interval=60, on_state=member.on_state,
            )

        a.start(messages(a))
        await a.reach(500)
        b.start(messages(b))
        await asyncio.wait_for(b.subscribed.wait(), WAIT)
        await a.reach(600)  # (of 2,000)
        await asyncio.to_thread(
            subprocess.run,
            [SCRIPT, 'ctl', broker, 'rabbitmq-streams', '-q', 'restart_stream', stream],
            capture_output=True, check=True,
        )
        await publish(2000, 1000)
        await wait_all([a, b], 3000)
        members = await group_consumers(broker, stream, GROUP)
        await a.leave()
        await b.leave()
    finally:
        await admin.delete_stream(stream)
    seen = collections.Counter(tp.cast(int, body) for *_, body in processed)
    assert set(seen) == set(range(3000))
    repeated = sorted(o for o, n in seen.items() if n > 1)
    # what the tracking had not stored: the broker drops the stores that
    # come while the stream restarts (measured: up to 119 messages again,
    # with store_every=50), so more than after a lost connection; a member
    # resuming anywhere but after the stored offset repeats hundreds
    assert len(repeated) <= 4 * 50, 'more than the tracking allows: {}'.format(repeated)
    assert len(members) == 2, members
    # (RabbitMQ 4.0 says 'active' and 'inactive'; 4.3 'active (connected)'
    # and 'waiting (connected)')
    states = sorted(m['state'].split()[0] for m in members)
    assert states in (['active', 'inactive'], ['active', 'waiting']), members

async def test_group_reset_to_first(url: str, admin: StreamsClient) -> None:
    """
    A group reset to the first message (nothing before offset 0 to store:
    rbfly stores 2**64-1) is activated at offset 0; its callback sees no
    stored offset.
    """
    stream = 'rbfly-handoff-{}'.format(uuid.uuid4().hex[:8])
    await admin.create_stream(stream)
    try:
        async with admin.publisher(stream, cls=PublisherBatchFast) as publisher:
            for i in range(5):
                publisher.batch(i)
            await publisher.flush()
        await admin.commit_offset(stream, GROUP, 3)
        await admin.reset_group(GROUP, Offset.FIRST, stream=stream, force=True)
        updates: list[ConsumerUpdateContext] = []
        bodies = []
        async for body in admin.subscribe(
                stream, name=GROUP, single_active=True, offset=Offset.NEXT,
                consumer_update=updates.append, timeout=WAIT):
            bodies.append(body)
            if len(bodies) == 5:
                break
    finally:
        await admin.delete_stream(stream)
    assert bodies == [0, 1, 2, 3, 4]
    assert updates == [ConsumerUpdateContext(stream, GROUP, True, None, Offset.offset(0))]

async def test_failed_activation_leaves_group(
        url: str, admin: StreamsClient, request: pytest.FixtureRequest,
) -> None:
    """
    A ``consumer_update`` callback failing on activation ends the
    iteration with its error, and the subscription leaves the group (the
    broker would keep it, the group's active member, holding the stream).
    """
    broker = '4' if request.node.callspec.params['url'] == '4.0' else '43'
    stream = 'rbfly-handoff-{}'.format(uuid.uuid4().hex[:8])
    await admin.create_stream(stream)

    def update(context: ConsumerUpdateContext) -> None:
        raise RuntimeError('no offset for you')

    try:
        with pytest.raises(RuntimeError, match='no offset for you'):
            async for _ in admin.subscribe(
                    stream, name=GROUP, single_active=True, consumer_update=update,
                    timeout=WAIT):
                pass
        async with asyncio.timeout(WAIT):
            while members := await group_consumers(broker, stream, GROUP):  # noqa: ASYNC110 - a CLI of the broker
                await asyncio.sleep(0.05)  # the Unsubscribe is on its way
        assert members == []
    finally:
        await admin.delete_stream(stream)
