"""
The workloads of ``perf.workloads`` with rbfly (this version; sizes
and slow also RbFly 0.10, whose API they use only).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from perf.common.results import JsonDict
from perf.common.streams import Stopwatch
from perf.workloads.parts import (
    OpenLoop,
    RssSampler,
    Tally,
    _compression_result,
    body,
    busy,
    filler_of,
    sized_result,
    written_bytes,
)

#
# rbfly (this version; sizes and slow also RbFly 0.10)
#

def _client(url: str) -> Any:
    from rbfly.streams import streams_client
    return streams_client(url)


async def _connect(client: Any) -> None:
    """Connect before a timing (rbfly: its connections part; RbFly 0.10: get_protocol)."""
    connections = getattr(client, '_connections', None)
    connect = connections.get if connections is not None \
        else getattr(client, '_get_protocol', None) or client.get_protocol
    await connect()


async def rbfly_publish_sized(url: str, stream: str, size: int, count: int) -> JsonDict:
    """
    Publish ``count`` messages of ``size`` bytes: rbfly's
    ``PublisherPipelined`` (``await send(m)`` each, ``await flush()``);
    RbFly 0.10, which has none, ``PublisherBatchFast`` batches (100
    messages, fewer when they would not fit a 1 MiB frame).
    """
    import rbfly.streams as rs

    filler = filler_of(size)
    client = _client(url)
    watch = Stopwatch()
    pipelined = getattr(rs, 'PublisherPipelined', None)
    try:
        if pipelined is not None:
            async with client.publisher(stream, cls=pipelined) as p:
                send = p.send
                watch.start()
                for i in range(count):
                    await send(body(i, size, filler))
                await p.flush()
                watch.stop()
        else:
            batch_size = max(1, min(100, (1 << 20) // (size + 64)))
            async with client.publisher(stream, cls=rs.PublisherBatchFast) as p:
                watch.start()
                for start in range(0, count, batch_size):
                    for i in range(start, min(count, start + batch_size)):
                        p.batch(body(i, size, filler))
                    await p.flush()
                watch.stop()
    finally:
        await client.disconnect()
    return sized_result(count, size, watch)


async def rbfly_consume_sized(url: str, stream: str, size: int, count: int) -> JsonDict:
    """Read ``count`` messages from the first offset: ``async for``."""
    from rbfly.streams import Offset

    client = _client(url)
    tally = Tally('rbfly', count)
    watch = Stopwatch()
    try:
        await _connect(client)
        watch.start()
        it = client.subscribe(stream, offset=Offset.FIRST)
        try:
            async for msg in it:
                if tally.add(msg):
                    break
        finally:
            await it.aclose()
        watch.stop()
    finally:
        await client.disconnect()
    tally.check()
    return sized_result(count, size, watch)


async def rbfly_slow(url: str, stream: str, size: int, count: int, work_us: float) -> JsonDict:
    """
    Read ``count`` messages with ``async for``, spending ``work_us`` of CPU
    on each (the application's pace); the process's RSS sampled meanwhile.
    """
    from rbfly.streams import Offset

    client = _client(url)
    tally = Tally('rbfly', count)
    watch = Stopwatch()
    work_ns = int(work_us * 1000)
    try:
        await _connect(client)
        with RssSampler() as rss:
            watch.start()
            it = client.subscribe(stream, offset=Offset.FIRST)
            try:
                async for msg in it:
                    busy(work_ns)
                    if tally.add(msg):
                        break
            finally:
                await it.aclose()
            watch.stop()
    finally:
        await client.disconnect()
    tally.check()
    return sized_result(count, size, watch, **rss.summary())


async def rbfly_fanout(
        url: str, streams: Sequence[str], per_stream: int, connections: str,
) -> JsonDict:
    """
    One ``PublisherPipelined`` per stream, all sending at once
    (``asyncio.gather``), 10-byte messages: on one client (one connection)
    or on a client each (``connections='many'``).
    """
    from rbfly.streams import PublisherPipelined

    clients = [_client(url) for _ in (streams if connections == 'many' else streams[:1])]
    watch = Stopwatch()
    filler = b''

    async def publish(p: Any) -> None:
        send = p.send
        for i in range(per_stream):
            await send(body(i, 10, filler))
        await p.flush()

    try:
        publishers = []
        for k, stream in enumerate(streams):
            cm = clients[k % len(clients)].publisher(stream, cls=PublisherPipelined)
            publishers.append((cm, await cm.__aenter__()))
        try:
            watch.start()
            await asyncio.gather(*(publish(p) for _, p in publishers))
            watch.stop()
        finally:
            for cm, _ in publishers:
                await cm.__aexit__(None, None, None)
    finally:
        for client in clients:
            await client.disconnect()
    return sized_result(per_stream * len(streams), 10, watch, connections=len(clients))


async def rbfly_latency(
        url: str, stream: str, rate: float, count: int, linger: float = 0.0,
) -> JsonDict:
    """
    ``PublisherPipelined`` at a fixed rate, a confirmation listener noting
    when each is confirmed, and an ``async for`` subscriber on another
    client (connection) of the same process noting when each arrives;
    ``linger``: the publisher's (0, its default, or 1 ms, the line beside
    the Java client's 1 ms batches).
    """
    from rbfly.streams import Offset, PublisherPipelined

    loop = OpenLoop(rate, count)
    clock = time.perf_counter_ns
    pub_client, sub_client = _client(url), _client(url)
    subscribed = asyncio.get_running_loop().create_future()
    watch = Stopwatch()
    task: asyncio.Task[None] | None = None

    async def consume() -> None:
        received = loop.received
        n = 0
        it = sub_client.subscribe(stream, offset=Offset.FIRST)
        try:
            async for msg in it:
                if msg[:1] == b'w':      # the warm-up message: subscribed
                    subscribed.set_result(None)
                    continue
                received[int(msg[:10])] = clock()
                n += 1
                if n == count:
                    break
        finally:
            await it.aclose()

    try:
        options = {'linger': linger} if linger else {}
        async with pub_client.publisher(stream, cls=PublisherPipelined, **options) as p:
            task = asyncio.create_task(consume())
            first = await p.send(b'w' * 10)
            await p.flush()
            await asyncio.wait_for(subscribed, 30)
            base = first + 1
            confirmed = loop.confirmed

            def on_confirm(pids: Sequence[int]) -> None:
                now = clock()
                for pid in pids:
                    confirmed[pid - base] = now

            p.add_listener(on_confirm=on_confirm)
            send = p.send
            watch.start()
            await loop.run(lambda i: send(b'%010d' % i))
            await p.flush()
            await asyncio.wait_for(task, 60)
            watch.stop()
    finally:
        if task is not None:
            task.cancel()
        await pub_client.disconnect()
        await sub_client.disconnect()
    return loop.result(watch)


async def rbfly_compression(
        url: str, stream: str, bodies: Sequence[bytes], codec: str | None, batch: int,
) -> JsonDict:
    """
    Publish ``bodies`` with ``PublisherPipelined``: one message per send
    (``codec=None``) or a ``SubEntryBatch`` of ``batch`` messages
    compressed with ``codec``; the bytes this process wrote meanwhile
    (the wire, but for TCP/IP headers); then read them back with
    ``async for``.
    """
    from rbfly.streams import Offset, PublisherPipelined, SubEntryBatch

    count = len(bodies)
    client = _client(url)
    watch = Stopwatch()
    try:
        await _connect(client)
        async with client.publisher(stream, cls=PublisherPipelined) as p:
            send = p.send
            wrote = written_bytes()
            watch.start()
            if codec is None:
                for m in bodies:
                    await send(m)
            else:
                for start in range(0, count, batch):
                    await send(SubEntryBatch(bodies[start:start + batch], compression=codec))
            await p.flush()
            watch.stop()
            wrote = written_bytes() - wrote
        read = Stopwatch()
        tally = Tally('rbfly', count)
        read.start()
        it = client.subscribe(stream, offset=Offset.FIRST)
        try:
            async for msg in it:
                if tally.add(msg):
                    break
        finally:
            await it.aclose()
        read.stop()
        tally.check()
    finally:
        await client.disconnect()
    return _compression_result(count, bodies, watch, wrote, read)
