"""
The state of each publisher and subscription (opening, open, recovering,
closed, with the reason), and the producer controls: ``retry_on_recovery``,
``enqueue_timeout``, ``linger`` and status listeners that get the messages.
"""

import asyncio
import contextlib

import pytest

from rbfly.error import AMQPEncodeError
from rbfly.streams import (
    ConfirmationStatus,
    ConnectionLost,
    EnqueueTimeout,
    NotRetried,
    Offset,
    Publisher,
    PublisherPipelined,
    ResourceState,
    StateChange,
    StreamsClient,
    streams_client,
)
from rbfly.streams.error import StreamDoesNotExist

from .proxy import Proxy

WAIT = 30  # seconds: a bound for what the broker does at once, not a timing

OPENING, OPEN = ResourceState.OPENING, ResourceState.OPEN
RECOVERING, CLOSED = ResourceState.RECOVERING, ResourceState.CLOSED

class Changes(list[StateChange]):
    """A state listener keeping the changes, and waiting for one."""
    def __init__(self) -> None:
        super().__init__()
        self._event = asyncio.Event()

    def __call__(self, change: StateChange) -> None:
        self.append(change)
        self._event.set()

    async def until(self, state: ResourceState) -> StateChange:
        async with asyncio.timeout(WAIT):
            while not self or self[-1].state is not state:
                self._event.clear()
                await self._event.wait()
        return self[-1]

    @property
    def states(self) -> list[tuple[ResourceState, ResourceState]]:
        return [(c.previous, c.state) for c in self]

async def read_until(client: StreamsClient, stream: str, last: object) -> list[object]:
    """The messages of a stream up to the one whose body is ``last``."""
    result: list[object] = []
    async for body in client.subscribe(stream, offset=Offset.FIRST, timeout=WAIT):
        result.append(body)
        if body == last:
            return result
    raise AssertionError('not reached')

async def test_publisher_states(proxied: StreamsClient, proxy: Proxy, stream: str) -> None:
    """A publisher is open, recovering after a cut, open again, closed at the end."""
    changes = Changes()
    async with proxied.publisher(stream, name='p', on_state=changes) as publisher:
        assert publisher.state is OPEN
        await publisher.send(b'one')
        assert proxy.cut() >= 1
        lost = await changes.until(RECOVERING)
        assert isinstance(lost.error, ConnectionLost)
        assert lost.kind == 'publisher' and lost.stream == stream
        await publisher.send(b'two')  # waits for the recovery
        assert publisher.state is OPEN
    assert publisher.state is CLOSED
    assert changes.states == [
        (OPENING, OPEN), (OPEN, RECOVERING), (RECOVERING, OPEN), (OPEN, CLOSED),
    ]
    assert [c.reason for c in changes][::3] == ['declared', 'closed by the application']
    assert changes[2].reason == 'recovered'

async def test_subscription_states(proxied: StreamsClient, proxy: Proxy, stream: str) -> None:
    """A subscription is open, recovering after a cut, open again, closed at the end."""
    changes = Changes()
    async with proxied.publisher(stream, cls=PublisherPipelined) as publisher:
        for i in range(10):
            await publisher.send(i)
        await publisher.flush()
    received = []
    messages = proxied.subscribe(stream, offset=Offset.FIRST, timeout=WAIT, on_state=changes)
    async with contextlib.aclosing(messages):
        async for body in messages:
            received.append(body)
            if len(received) == 5:
                proxy.cut()
                await changes.until(RECOVERING)
                await changes.until(OPEN)  # recovered
            if len(received) == 10:
                break
    assert received == list(range(10))
    assert changes.states == [
        (OPENING, OPEN), (OPEN, RECOVERING), (RECOVERING, OPEN), (OPEN, CLOSED),
    ]
    assert changes[-1].reason == 'ended by the application'
    assert all(c.kind == 'subscription' for c in changes)

async def test_state_stream_deleted(client: StreamsClient, any_url: str, stream: str) -> None:
    """A publisher and a subscription of a deleted stream are closed, with the error."""
    pub_changes, sub_changes = Changes(), Changes()

    async def consume() -> None:
        async for _ in client.subscribe(stream, on_state=sub_changes):
            pass

    task = asyncio.create_task(consume())
    async with client.publisher(stream, on_state=pub_changes) as publisher:
        await publisher.send(b'x')
        await sub_changes.until(OPEN)
        other = streams_client(any_url)
        async with other:
            await other.delete_stream(stream)
        closed = await pub_changes.until(CLOSED)
        assert isinstance(closed.error, StreamDoesNotExist)
        assert publisher.state is CLOSED
        with pytest.raises(StreamDoesNotExist):
            await publisher.send(b'y')
    with pytest.raises(StreamDoesNotExist):
        await task
    assert (await sub_changes.until(CLOSED)).error is not None
    assert isinstance(sub_changes[-1].error, StreamDoesNotExist)
    await client.create_stream(stream)  # for the fixture, which deletes it

async def test_listener_error_ignored(client: StreamsClient, stream: str) -> None:
    """A state listener's exception is logged; the publisher works on."""
    def bad(change: StateChange) -> None:
        raise RuntimeError('listener bug')

    async with client.publisher(stream, on_state=bad) as publisher:
        await publisher.send(b'ok')
        assert publisher.state is OPEN

@pytest.mark.parametrize('dedup', [True, False])
async def test_no_retry_on_recovery(
        proxied: StreamsClient, proxy: Proxy, stream: str, dedup: bool,
) -> None:
    """
    With ``retry_on_recovery=False``, messages unconfirmed at a cut are
    not sent again: a named publisher confirms those the broker stored and
    fails the others; an anonymous one fails them all. The stream never
    holds a message twice, and each message has exactly one outcome.
    """
    n = 100
    statuses: list[ConfirmationStatus] = []
    name = 'p' if dedup else None
    async with proxied.publisher(
            stream, name=name, dedup=dedup, cls=PublisherPipelined,
            retry_on_recovery=False) as publisher:
        publisher.add_listener(on_status=statuses.extend)
        proxy.hold()  # no confirmation reaches the client
        for i in range(n):
            await publisher.send('m{}'.format(i))
        await asyncio.sleep(0)  # the buffer goes out
        assert not publisher._buffer
        proxy.cut()
        proxy.release()
        failed = 0
        try:
            await publisher.flush()
        except NotRetried as ex:
            failed = 1
            assert ex.stream == stream
        await publisher.send('after')  # the publisher works on
        await publisher.flush()
    by_id = {s.publishing_id: s for s in statuses}
    assert len(by_id) == len(statuses) == n + 1
    confirmed = [s for s in statuses if s.confirmed]
    not_retried = [s for s in statuses if isinstance(s.error, NotRetried)]
    assert len(confirmed) + len(not_retried) == n + 1
    assert all(s.message == 'm{}'.format(s.publishing_id - 1) for s in statuses[:n])
    assert failed == (1 if not_retried[:1] else 0)
    stored = await read_until(proxied, stream, 'after')
    assert len(stored) == len(set(stored))  # never twice
    if dedup:  # the broker's sequence says exactly which were stored
        assert stored == [s.message for s in confirmed]
    else:
        assert [s.message for s in confirmed] == ['after']

async def test_enqueue_timeout(proxied: StreamsClient, proxy: Proxy, stream: str) -> None:
    """A send waiting for room longer than ``enqueue_timeout`` fails; nothing is taken."""
    async with proxied.publisher(
            stream, cls=PublisherPipelined, window=10, enqueue_timeout=0.2) as publisher:
        proxy.hold()
        for i in range(10):
            await publisher.send(i)
        with pytest.raises(EnqueueTimeout) as info:
            await publisher.send(10)
        assert isinstance(info.value, TimeoutError)
        assert info.value.stream == stream and info.value.timeout == 0.2
        assert publisher.message_id == 10
        proxy.release()
        await publisher.flush()
        assert await publisher.send(11) == 11  # room again
    received = []
    async for body in proxied.subscribe(stream, offset=Offset.FIRST, timeout=WAIT):
        received.append(body)
        if len(received) == 11:
            break
    assert received == [*range(10), 11]

async def test_linger(client: StreamsClient, stream: str) -> None:
    """Messages sent in several event loop iterations wait ``linger`` to share a frame."""
    async with client.publisher(stream, cls=PublisherPipelined, linger=5.0) as publisher:
        protocol = publisher.protocol
        assert protocol is not None
        frames = 0
        send_frame = protocol.send_frame

        def counting(frame: bytes | memoryview) -> None:
            nonlocal frames
            frames += 1
            send_frame(frame)

        protocol.send_frame = counting  # type: ignore[method-assign]
        for i in range(10):
            await publisher.send(i)
            await asyncio.sleep(0)  # without linger, each would go alone
        assert frames == 0
        await publisher.flush()  # sends the buffer at once
        assert frames == 1
    async with client.publisher(stream, cls=PublisherPipelined, linger=0.01) as publisher:
        pid = await publisher.send('alone')
        await asyncio.wait_for(publisher.confirmed(pid), WAIT)  # the linger ran out

async def test_status_listener_rejected(client4: StreamsClient, stream: str) -> None:
    """A status listener gets confirmed messages, and an unencodable one with its error."""
    statuses: list[ConfirmationStatus] = []
    async with client4.publisher(stream, cls=PublisherPipelined) as publisher:
        publisher.add_listener(on_status=statuses.extend)
        await publisher.send('a')
        await publisher.send(object())  # type: ignore[arg-type]
        await publisher.send('b')
        with pytest.raises(AMQPEncodeError):
            await publisher.flush()
    assert [(s.publishing_id, s.message, s.confirmed) for s in statuses if s.confirmed] \
        == [(1, 'a', True), (3, 'b', True)]
    bad = [s for s in statuses if not s.confirmed]
    assert len(bad) == 1 and bad[0].publishing_id == 2 and isinstance(bad[0].error, AMQPEncodeError)

@pytest.mark.parametrize('options, error', [
    ({'cls': Publisher, 'enqueue_timeout': 1}, ValueError),
    ({'cls': Publisher, 'linger': 0.1}, ValueError),
    ({'cls': PublisherPipelined, 'enqueue_timeout': 0}, ValueError),
    ({'cls': PublisherPipelined, 'enqueue_timeout': -1}, ValueError),
    ({'cls': PublisherPipelined, 'linger': float('inf')}, ValueError),
    ({'cls': PublisherPipelined, 'linger': True}, ValueError),
    ({'cls': PublisherPipelined, 'window': 0}, ValueError),
    ({'retry_on_recovery': 'no'}, TypeError),
    ({'on_state': 'not callable'}, TypeError),
    ({'cls': int}, TypeError),
])
async def test_bad_options(
        client310: StreamsClient, stream: str, options: dict[str, object],
        error: type[Exception],
) -> None:
    """Bad producer options raise at the call, naming the option; the client goes on."""
    with pytest.raises(error) as info:
        client310.publisher(stream, **options)  # type: ignore[call-overload]
    assert any(str(key) in str(info.value) for key in options if key != 'cls') \
        or 'cls' in str(info.value)
    async with client310.publisher(stream) as publisher:
        await publisher.send(b'still fine')
