"""
Flow control, cancellation and logging against real brokers.
"""

import asyncio
import logging
import typing as tp
from urllib.parse import urlsplit, urlunsplit

import pytest

from rbfly.streams import (
    Offset,
    Publisher,
    PublisherBatchFast,
    PublisherBatchLimit,
    PublisherBin,
    PublisherBinBatch,
    PublisherPipelined,
    StreamsClient,
    get_message_ctx,
    streams_client,
)
from rbfly.streams.aio.read_pause import ReadPause
from rbfly.streams.error import AuthenticationFailure
from rbfly.testing import own_connection

from .conftest import Opened
from .proxy import Proxy

async def fill(client: StreamsClient, stream: str, n: int, per_batch: int = 10) -> None:
    async with client.publisher(stream, cls=PublisherBatchFast) as publisher:
        for i in range(n):
            publisher.batch(i)
            if i % per_batch == per_batch - 1:
                await publisher.flush()
        await publisher.flush()

async def test_slow_consumer_bounded(any_url: str, stream: str) -> None:
    """A stopped consumer of big chunks holds at most ``credit`` chunks buffered plus
    ``credit`` on their way."""
    client = streams_client(any_url, credit=4, buffer_bytes=1)
    async with client:
        await client.create_stream(stream)
        await fill(client, stream, 1000)  # about 100 chunks
        chunks = client.subscribe_chunks(stream, offset=Offset.FIRST, timeout=5)
        first = await anext(chunks)
        await asyncio.sleep(1)  # wall time: the broker could send everything meanwhile
        [sub] = own_connection(client).subscriptions
        assert sub.buffered_chunks <= 8
        seen = len(first)
        async for chunk in chunks:
            seen += len(chunk)
            if seen == 1000:
                break
        assert seen == 1000
        await client.delete_stream(stream)

async def test_flow_per_subscription(any_url: str, stream: str) -> None:
    """
    A subscription's own credit and buffer size bound it while the client's
    defaults stay large; bad values are refused before subscribing.
    """
    client = streams_client(any_url)  # default credit and buffer
    async with client:
        await client.create_stream(stream)
        await fill(client, stream, 1000)  # about 100 chunks
        chunks = client.subscribe_chunks(
            stream, offset=Offset.FIRST, timeout=5, credit=2, buffer_bytes=1,
        )
        seen = len(await anext(chunks))
        await asyncio.sleep(1)  # wall time: the broker could send everything meanwhile
        [sub] = own_connection(client).subscriptions
        assert (sub.credit, sub.buffer_bytes) == (2, 1)
        assert sub.buffered_chunks <= 4
        async for chunk in chunks:
            seen += len(chunk)
            if seen == 1000:
                break
        await chunks.aclose()
        assert seen == 1000
        for bad in ({'credit': 0}, {'credit': 70_000}, {'buffer_bytes': 0},
                    {'credit': True}):
            with pytest.raises(ValueError, match=next(iter(bad))):
                await anext(client.subscribe(stream, **bad))
        assert not own_connection(client).subscriptions
        await client.delete_stream(stream)

async def test_break_ends_subscription(any_url: str, stream: str) -> None:
    """
    Leaving ``async for`` over a subscription ends it on the broker: at once
    with ``aclose()``, and soon after the iterator is dropped without it
    (the event loop closes the chunk generator); the connection stays
    usable.
    """
    client = streams_client(any_url)
    async with client:
        await client.create_stream(stream)
        await fill(client, stream, 100)
        it = client.subscribe(stream, offset=Offset.FIRST)
        async for body in it:
            if body == 10:
                break
        assert len(own_connection(client).subscriptions) == 1
        await it.aclose()
        assert not own_connection(client).subscriptions

        async for body in client.subscribe(stream, offset=Offset.FIRST):
            if body == 20:
                break
        for _ in range(100):
            if not own_connection(client).subscriptions:
                break
            await asyncio.sleep(0.01)
        assert not own_connection(client).subscriptions
        assert await anext(client.subscribe(stream, offset=Offset.offset(99))) == 99
        await client.delete_stream(stream)

async def test_memory_bound_in_bytes(any_url: str, stream: str) -> None:
    """Small chunks: many in flight, but about buffer_bytes held at most."""
    client = streams_client(any_url, credit=4, buffer_bytes=20_000)
    async with client:
        await client.create_stream(stream)
        await fill(client, stream, 20_000)  # about 2,000 chunks, 200 kB
        chunks = client.subscribe_chunks(stream, offset=Offset.FIRST, timeout=5)
        seen = len(await anext(chunks))
        await asyncio.sleep(1)  # wall time: the broker could send more meanwhile
        [sub] = own_connection(client).subscriptions
        held = sub.buffered_bytes
        assert 4 < sub.buffered_chunks  # more than the initial credit
        assert held <= 20_000 * 1.5  # the chunk size is a moving average
        async for chunk in chunks:
            seen += len(chunk)
            if seen == 20_000:
                break
        await client.delete_stream(stream)

async def test_concurrent_processing_bounded(any_url: str, stream: str) -> None:
    """
    The documented recipe for handing messages to tasks (doc/usage.rst): a
    semaphore bounds the messages in progress, the subscription waits for
    it (its buffer bounds the rest), and each task's message context is its
    own message's.
    """
    client = streams_client(any_url, credit=4, buffer_bytes=2_000)
    limit = asyncio.Semaphore(50)
    held = 0
    in_progress = peak = 0
    seen: dict[int, int] = {}

    async def handle(body: int) -> None:
        nonlocal in_progress, peak
        try:
            in_progress += 1
            peak = max(peak, in_progress)
            await asyncio.sleep(0.001 * (body % 7))   # finish out of order
            seen[get_message_ctx().stream_offset] = body
        finally:
            in_progress -= 1
            limit.release()

    async with client:
        await client.create_stream(stream)
        await fill(client, stream, 5_000)
        async with asyncio.timeout(60), asyncio.TaskGroup() as tg:
            async for body in client.subscribe(stream, offset=Offset.FIRST):
                await limit.acquire()
                tg.create_task(handle(tp.cast(int, body)))
                [sub] = own_connection(client).subscriptions
                held = max(held, sub.buffered_bytes)
                if body == 4_999:
                    break
        assert peak == 50
        assert held <= 2_000 * 1.5   # bytes of chunks buffered (the stream: about 60 kB)
        assert seen == {i: i for i in range(5_000)}
        await client.delete_stream(stream)

async def test_wait_for_around_send(
        proxy: Proxy, proxied: StreamsClient, stream: str,
) -> None:
    """
    wait_for around a send waiting for its confirmation (the proxy holds the
    broker's answers) raises TimeoutError; the message stays sent and is
    confirmed later, the publisher goes on, on the same connection.

    (``wait_for(send, 0)`` tested nothing: Python 3.11 cancels the
    coroutine before it starts.)
    """
    async with proxied.publisher(stream) as publisher:
        await publisher.send('before')
        protocol = own_connection(proxied).protocol
        proxy.hold()
        with pytest.raises(TimeoutError):
            # (the send's first step, which writes the message, runs before
            # the timeout can fire)
            await asyncio.wait_for(publisher.send('maybe'), 0.5)
        assert publisher.unconfirmed == 1  # sent, waiting for its confirmation
        proxy.release()
        await publisher.send('sure')
        assert publisher.unconfirmed == 0  # the late confirmation was taken
        assert own_connection(proxied).protocol is protocol and protocol is not None
        assert protocol.is_open and proxy.connections == 1
    bodies = []
    async for body in proxied.subscribe(stream, offset=Offset.FIRST, timeout=5):
        bodies.append(body)
        if body == 'sure':
            break
    assert bodies == ['before', 'maybe', 'sure']

async def test_wait_for_around_subscribe(client: StreamsClient, stream: str) -> None:
    """A subscription with no messages is ended by wait_for; the client still works."""
    async def first() -> object:
        async for body in client.subscribe(stream, offset=Offset.NEXT):
            return body
        return None

    with pytest.raises(TimeoutError):
        await asyncio.wait_for(first(), 0.5)
    await fill(client, stream, 1)
    async for body in client.subscribe(stream, offset=Offset.FIRST, timeout=5):
        assert body == 0
        break

async def test_subscription_timeout(client: StreamsClient, stream: str) -> None:
    """The subscribe timeout raises TimeoutError when nothing arrives."""
    with pytest.raises(TimeoutError):
        async for _ in client.subscribe(stream, offset=Offset.NEXT, timeout=0.3):
            pass

@pytest.mark.parametrize('cls', [
    Publisher, PublisherBatchFast, PublisherBatchLimit, PublisherPipelined, PublisherBin,
    PublisherBinBatch,
])
async def test_round_trip_100k(client: StreamsClient, stream: str, cls: type) -> None:
    """100,000 messages through each publisher class come back exactly once."""
    n = 100_000
    binary = cls in (PublisherBin, PublisherBinBatch)
    values: list[tp.Any] = [b'%010d' % i for i in range(n)] if binary \
        else ['{:010d}'.format(i) for i in range(n)]
    publisher: tp.Any
    async with client.publisher(stream, cls=cls) as publisher:
        if cls is Publisher or cls is PublisherBin:
            # one at a time, but many at once, each awaiting its confirmation
            async def part(k: int) -> None:
                for v in values[k::50]:
                    await publisher.send(v)
            await asyncio.gather(*(part(k) for k in range(50)))
        elif cls is PublisherPipelined:
            for value in values:
                await publisher.send(value)
            await publisher.flush()
        elif cls is PublisherBatchLimit:
            for value in values:
                await publisher.batch(value, max_len=1000)
            await publisher.flush()
        else:
            for i, value in enumerate(values):
                publisher.batch(value)
                if i % 1000 == 999:
                    await publisher.flush()
    received = []
    offsets = []
    async for body in client.subscribe(stream, offset=Offset.FIRST, amqp=not binary, timeout=5):
        received.append(body)
        offsets.append(get_message_ctx().stream_offset)
        if len(received) == n:
            break
    assert offsets == list(range(n))
    assert sorted(received) == values  # type: ignore[type-var]
    if cls is not Publisher and cls is not PublisherBin:
        assert received == values

async def test_password_not_logged(any_url: str, caplog: pytest.LogCaptureFixture) -> None:
    """Credentials never appear in logs or errors."""
    p = urlsplit(any_url)
    url = urlunsplit((p.scheme, 'guest:s3cr3t-pw@{}:{}'.format(p.hostname, p.port), '/', '', ''))
    caplog.set_level(logging.DEBUG)
    client = streams_client(url)
    with pytest.raises(AuthenticationFailure) as info:
        await client.create_stream('never-created')
    assert 's3cr3t-pw' not in caplog.text
    assert 's3cr3t-pw' not in str(info.value)
    assert 'guest' in caplog.text  # the user name is fine to log

async def test_disconnect_ends_waiting_subscriber(any_url: str, stream: str) -> None:
    """disconnect() ends a subscriber waiting for messages instead of leaving it hanging."""
    from rbfly.streams import ConnectionLost

    client = streams_client(any_url)
    await client.create_stream(stream)

    opened = Opened()

    async def consume() -> None:
        async for _ in client.subscribe(stream, offset=Offset.NEXT, on_state=opened):
            pass

    task = asyncio.create_task(consume())
    await opened.wait()  # waiting for messages (not 0.3 s: maybe still subscribing)
    await client.disconnect()
    with pytest.raises(ConnectionLost, match='disconnected'):
        await asyncio.wait_for(task, 5)
    await client.delete_stream(stream)
    await client.disconnect()

async def test_history_read_pausing(
        any_url: str, stream: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """
    Reading a stream's history (chunks written a second or more before they
    arrive) pauses the connection's reads between bursts of chunks
    (``read_pause``): every message arrives, in order, and a message
    published after that, at the live end, arrives too.
    """
    pauses = 0
    pause = ReadPause._pause

    def counting(self: ReadPause, transport: asyncio.Transport | None) -> None:
        nonlocal pauses
        pauses += 1
        pause(self, transport)

    monkeypatch.setattr(ReadPause, '_pause', counting)
    client = streams_client(any_url, read_pause=0.001)
    async with client:
        await client.create_stream(stream)
        await fill(client, stream, 2000)  # about 200 chunks
        await asyncio.sleep(1.2)  # wall time: a second old: history
        received = []
        async for body in client.subscribe(stream, offset=Offset.FIRST, timeout=10):
            received.append(body)
            if len(received) == 2000:
                assert pauses > 0
                async with client.publisher(stream) as publisher:
                    await publisher.send(2000)
            elif len(received) == 2001:
                break
    assert received == list(range(2001))
