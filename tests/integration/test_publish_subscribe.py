"""
Publishing with confirmation and reading back, against real brokers.
"""

import asyncio
import itertools

import pytest

from rbfly.amqp import MessageCtx
from rbfly.error import AMQPEncodeError, MessageTooLarge, RbFlyError
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
)

async def read(client: StreamsClient, stream: str, count: int, *, amqp: bool = True,
               offset: Offset = Offset.FIRST) -> list[tuple[int, object]]:
    """Read ``count`` messages with their offsets; fail on a 5 s silence."""
    result: list[tuple[int, object]] = []
    async for body in client.subscribe(stream, offset=offset, amqp=amqp, timeout=5):
        result.append((get_message_ctx().stream_offset, body))
        if len(result) == count:
            break
    return result

async def test_send_and_read_back(client: StreamsClient, stream: str) -> None:
    """Messages sent one by one come back in order, at consecutive offsets."""
    async with client.publisher(stream) as publisher:
        for i in range(100):
            await publisher.send({'n': i, 'text': 'żółw'})
        assert publisher.message_id == 100
    messages = await read(client, stream, 100)
    assert messages == [(i, {'n': i, 'text': 'żółw'}) for i in range(100)]

async def test_read_without_crc_check(any_url: str, client: StreamsClient, stream: str) -> None:
    """A client that does not check chunks' CRC reads the same messages."""
    from rbfly.streams import streams_client

    async with client.publisher(stream, cls=PublisherBatchFast) as publisher:
        for i in range(1000):
            publisher.batch(i)
        await publisher.flush()
    async with streams_client(any_url, crc_check=False) as unchecked:
        assert await read(unchecked, stream, 1000) == list(enumerate(range(1000)))

async def test_batch_publishers_100k(client: StreamsClient, stream: str) -> None:
    """100,000 messages through both batch publishers: none lost, none duplicated."""
    async with client.publisher(stream, cls=PublisherBatchFast) as fast:
        for i in range(50_000):
            fast.batch('{:010d}'.format(i))
            if i % 1000 == 999:
                await fast.flush()
        await fast.flush()
    async with client.publisher(stream, cls=PublisherBatchLimit) as limit:
        for i in range(50_000, 100_000):
            await limit.batch('{:010d}'.format(i), max_len=500)
        await limit.flush()
    messages = await read(client, stream, 100_000)
    assert [body for _, body in messages] == ['{:010d}'.format(i) for i in range(100_000)]
    assert [offset for offset, _ in messages] == list(range(100_000))

async def test_binary_publishers(client: StreamsClient, stream: str) -> None:
    """Raw binary messages are stored as they are and read with amqp=False."""
    async with client.publisher(stream, cls=PublisherBin) as single:
        await single.send(b'\x00raw\xff')
    async with client.publisher(stream, cls=PublisherBinBatch) as batch:
        for i in range(1000):
            batch.batch(b'%06d' % i)
        await batch.flush()
    messages = await read(client, stream, 1001, amqp=False)
    assert messages[0] == (0, b'\x00raw\xff')
    assert [body for _, body in messages[1:]] == [b'%06d' % i for i in range(1000)]

async def test_large_batch_split_into_frames(client: StreamsClient, stream: str) -> None:
    """A batch larger than a frame is split into several Publish frames."""
    payload = b'x' * 100_000
    async with client.publisher(stream, cls=PublisherBatchFast) as publisher:
        for _ in range(30):  # 3 MB, the default frame maximum is 1 MiB
            publisher.batch(payload)
        await publisher.flush()
    messages = await read(client, stream, 30)
    assert all(body == payload for _, body in messages)

async def test_message_context_sections(client: StreamsClient, stream: str) -> None:
    """A message's sections survive the broker and are seen through get_message_ctx."""
    msg = MessageCtx('body', app_properties={'a': 1, 'b': 'two'})
    async with client.publisher(stream) as publisher:
        await publisher.send(msg)
    async for body in client.subscribe(stream, offset=Offset.FIRST, timeout=5):
        ctx = get_message_ctx()
        assert body == 'body'
        assert ctx.app_properties == {'a': 1, 'b': 'two'}
        assert ctx.stream_offset == 0
        assert ctx.stream_timestamp > 1.6e9
        break

async def test_named_publisher_continues_sequence(client: StreamsClient, stream: str) -> None:
    """A named publisher resumes from the stream's stored publishing id (dedup)."""
    async with client.publisher(stream, name='app-1') as publisher:
        for i in range(10):
            await publisher.send(i)
    async with client.publisher(stream, name='app-1', cls=Publisher) as publisher:
        assert publisher.message_id == 10
        await publisher.send(10)
        assert publisher.message_id == 11
    messages = await read(client, stream, 11)
    assert [body for _, body in messages] == list(range(11))

async def test_chunk_api(client: StreamsClient, stream: str) -> None:
    """The chunk-level API yields whole batches of messages with offsets."""
    async with client.publisher(stream, cls=PublisherBatchFast) as publisher:
        for i in range(1000):
            publisher.batch(i)
        await publisher.flush()
    received: list[tuple[int, object]] = []
    async for chunk in client.subscribe_chunks(stream, offset=Offset.FIRST, timeout=5):
        received.extend((m.stream_offset, m.body) for m in chunk)
        if len(received) == 1000:
            break
    assert received == list(zip(itertools.count(), range(1000)))

async def test_pipelined_publisher(client: StreamsClient, stream: str) -> None:
    """Pipelined sends return ids at once; confirmations reach waiters and listeners."""
    confirmed: list[int] = []
    async with client.publisher(stream, cls=PublisherPipelined, window=100) as publisher:
        publisher.add_listener(on_confirm=confirmed.extend)
        ids = [await publisher.send(i) for i in range(1000)]
        assert ids == list(range(1, 1001))
        assert len(publisher._unconfirmed) <= 100
        await publisher.confirmed(ids[-1])
        await publisher.flush()
        assert not publisher._unconfirmed
    assert sorted(confirmed) == ids
    messages = await read(client, stream, 1000)
    assert [body for _, body in messages] == list(range(1000))

async def test_pipelined_send_as_task(client: StreamsClient, stream: str) -> None:
    """
    ``send()`` gives a coroutine to asyncio (tasks, gather, wait_for), done
    at once while the window has room; the messages take their ids, and
    their places in the stream, in the order of the calls. With the window
    full, the task waits for room; every message arrives once.
    """
    async with client.publisher(stream, cls=PublisherPipelined, window=50) as publisher:
        first = publisher.send(0)
        assert asyncio.iscoroutine(first)
        tasks = [asyncio.create_task(publisher.send(i)) for i in range(1, 200)]
        ids = [await first, *await asyncio.gather(*tasks)]
        assert ids == list(range(1, 201))
        assert await asyncio.wait_for(publisher.send(200), 5) == 201
        await publisher.flush()
    messages = await read(client, stream, 201)
    assert [body for _, body in messages] == list(range(201))

async def test_pipelined_one_message_an_iteration(client: StreamsClient, stream: str) -> None:
    """
    Messages sent one an event loop iteration, each awaited for its
    confirmation only at the end and with no flush: those that waited for
    the confirmation in flight went when it came; all arrive, in order.
    """
    count = 2000
    async with client.publisher(stream, cls=PublisherPipelined) as publisher:
        frames = 0
        protocol = publisher.protocol
        assert protocol is not None
        send_frame = protocol.send_frame

        def counting(frame: bytes | memoryview) -> None:
            nonlocal frames
            frames += 1
            send_frame(frame)

        protocol.send_frame = counting  # type: ignore[method-assign]
        ids = []
        for i in range(count):
            ids.append(await publisher.send(i))
            await asyncio.sleep(0)
        await asyncio.wait_for(asyncio.gather(*map(publisher.confirmed, ids)), 10)
        # a frame per message would mean nothing waited for the confirmation
        # in flight: one comes back after a broker's round trip (100 us or
        # more here), several loop iterations of this test (a few us each;
        # about a frame per five messages measured)
        assert 0 < frames <= count * 3 // 4
    messages = await read(client, stream, count)
    assert [body for _, body in messages] == list(range(count))

async def test_pipelined_exit_flushes(client: StreamsClient, stream: str) -> None:
    """
    Leaving a pipelined publisher's context sends what it buffered and
    waits for the confirmations: nothing sent is lost.
    """
    async with client.publisher(stream, cls=PublisherPipelined) as publisher:
        for i in range(1500):
            await publisher.send(i)
        assert publisher._buffer  # not sent yet
    assert not publisher._unconfirmed
    messages = await read(client, stream, 1500)
    assert [body for _, body in messages] == list(range(1500))

async def test_pipelined_exit_with_error_sends(client: StreamsClient, stream: str) -> None:
    """Leaving on an exception still sends what was buffered (not awaited)."""
    with pytest.raises(RuntimeError, match='application'):
        async with client.publisher(stream, cls=PublisherPipelined) as publisher:
            for i in range(10):
                await publisher.send(i)
            raise RuntimeError('application error')
    messages = await read(client, stream, 10)
    assert [body for _, body in messages] == list(range(10))

async def test_window_only_for_pipelined(client: StreamsClient, stream: str) -> None:
    """The window option is refused for other publishers."""
    with pytest.raises(ValueError, match='PublisherPipelined'):
        async with client.publisher(stream, window=10):  # type: ignore[call-overload]
            pass

async def test_bad_message_is_refused_before_sending(client: StreamsClient, stream: str) -> None:
    """A message that cannot be encoded raises; the publisher stays usable."""
    async with client.publisher(stream) as publisher:
        with pytest.raises(AMQPEncodeError, match='object'):
            await publisher.send(object())  # type: ignore[arg-type]
        with pytest.raises(AMQPEncodeError, match='range'):
            await publisher.send(2 ** 64)
        await publisher.send('good')
        assert publisher.message_id == 1
    async with client.publisher(stream, cls=PublisherBin) as binary:
        with pytest.raises(TypeError, match='needs bytes'):
            await binary.send('text')  # type: ignore[arg-type]
    messages = await read(client, stream, 1)
    assert messages == [(0, 'good')]

async def test_pipelined_bad_message(client: StreamsClient, stream: str) -> None:
    """A pipelined message that cannot be encoded fails alone, at flush."""
    errors: list[int] = []
    async with client.publisher(stream, cls=PublisherPipelined) as publisher:
        publisher.add_listener(on_error=lambda pid, ex: errors.append(pid))
        await publisher.send('a')
        bad = await publisher.send(object())  # type: ignore[arg-type]
        await publisher.send('b')
        with pytest.raises(AMQPEncodeError):
            await publisher.flush()
        assert errors == [bad]
        await publisher.flush()  # the error was reported once
    messages = await read(client, stream, 2)
    assert [body for _, body in messages] == ['a', 'b']

async def test_message_too_large(client: StreamsClient, stream: str) -> None:
    """A message larger than the frame maximum is refused before sending."""
    async with client.publisher(stream) as publisher:
        with pytest.raises(MessageTooLarge):
            await publisher.send(b'x' * 2_000_000)
        await publisher.send(b'fits')

async def test_closed_publisher(client: StreamsClient, stream: str) -> None:
    """Using a publisher after its context ended is an error."""
    async with client.publisher(stream) as publisher:
        pass
    with pytest.raises(RbFlyError, match='closed'):
        await publisher.send('late')
