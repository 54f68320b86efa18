"""
The workloads of ``perf.workloads`` with rstream.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from perf.common.errors import SkipImplementation, VerificationError
from perf.common.results import JsonDict
from perf.common.streams import Stopwatch, endpoint
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
# rstream
#

def _rstream_args(url: str) -> tuple[tuple[str, int], dict[str, Any]]:
    ep = endpoint(url)
    return (ep.host, ep.port), {
        'username': ep.username, 'password': ep.password, 'vhost': ep.vhost,
    }


def amqp(data: bytes) -> Any:
    """An rstream AMQP message of a data section (what rbfly and the Java client send)."""
    from rstream import AMQPMessage
    return AMQPMessage(body=data)


class _Counter:
    """rstream confirmations counted; a future waits for a number."""

    def __init__(self, goal: int) -> None:
        self.goal = goal
        self.confirmed = 0
        self.failed = 0
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def __call__(self, status: Any) -> None:
        if status.is_confirmed:
            self.confirmed += 1
        else:
            self.failed += 1
        if self.confirmed + self.failed >= self.goal and not self.done.done():
            if self.failed:
                self.done.set_exception(VerificationError(
                    'rstream: {} messages rejected'.format(self.failed),
                ))
            else:
                self.done.set_result(None)


async def rstream_publish_sized(url: str, stream: str, size: int, count: int) -> JsonDict:
    """``Producer.send(stream, bytes, on_publish_confirm=cb)`` each, then wait for all."""
    from rstream import Producer

    filler = filler_of(size)
    (host, port), kw = _rstream_args(url)
    watch = Stopwatch()
    async with Producer(host, port, **kw) as producer:
        await _rstream_warm_up(producer, stream)   # its publisher declared before the timing
        counter = _Counter(count)
        watch.start()
        for i in range(count):
            await producer.send(stream, amqp(body(i, size, filler)), on_publish_confirm=counter)
        await counter.done
        watch.stop()
    return sized_result(count, size, watch)


async def _rstream_read(
        url: str, stream: str, count: int, watch: Stopwatch,
        on_each: Callable[[], None] | None = None,
) -> Tally:
    """Read ``count`` messages; ``watch`` starts once connected (as rbfly's)."""
    from rstream import Consumer, ConsumerOffsetSpecification, OffsetType, amqp_decoder

    (host, port), kw = _rstream_args(url)
    tally = Tally('rstream', count)
    done = asyncio.get_running_loop().create_future()

    def on_message(msg: Any, ctx: Any) -> None:
        if on_each is not None:
            on_each()
        if tally.add(msg.body) and not done.done():
            done.set_result(None)

    consumer = Consumer(host, port, **kw)
    await consumer.start()
    try:
        watch.start()
        await consumer.subscribe(
            stream, on_message, decoder=amqp_decoder,
            offset_specification=ConsumerOffsetSpecification(OffsetType.FIRST, None),
        )
        await done
        watch.stop()
    finally:
        await consumer.close()
    return tally


async def rstream_consume_sized(url: str, stream: str, size: int, count: int) -> JsonDict:
    """``Consumer.subscribe(stream, callback, offset FIRST)``, raw bytes."""
    watch = Stopwatch()
    tally = await _rstream_read(url, stream, count, watch)
    tally.check()
    return sized_result(count, size, watch)


async def rstream_slow(url: str, stream: str, size: int, count: int, work_us: float) -> JsonDict:
    """The callback spends ``work_us`` on each message; RSS sampled meanwhile."""
    watch = Stopwatch()
    work_ns = int(work_us * 1000)
    with RssSampler() as rss:
        tally = await _rstream_read(url, stream, count, watch, lambda: busy(work_ns))
    tally.check()
    return sized_result(count, size, watch, **rss.summary())


async def rstream_fanout(
        url: str, streams: Sequence[str], per_stream: int, connections: str,
) -> JsonDict:
    """``Producer.send`` to each stream from one producer (one connection) or one each."""
    from rstream import Producer

    (host, port), kw = _rstream_args(url)
    n = len(streams) if connections == 'many' else 1
    producers: list[Any] = []
    watch = Stopwatch()
    try:
        for _ in range(n):
            producers.append(Producer(host, port, **kw))
            await producers[-1].start()
        # its publishers declared (and the streams located) before the timing
        for k, stream in enumerate(streams):
            await _rstream_warm_up(producers[k % n], stream)
        counter = _Counter(per_stream * len(streams))

        async def publish(producer: Any, stream: str) -> None:
            for i in range(per_stream):
                await producer.send(stream, amqp(b'%010d' % i), on_publish_confirm=counter)

        watch.start()
        await asyncio.gather(*(
            publish(producers[k % n], s) for k, s in enumerate(streams)
        ))
        await counter.done
        watch.stop()
    finally:
        for producer in producers:
            await producer.close()
    return sized_result(per_stream * len(streams), 10, watch, connections=n)


async def _rstream_warm_up(producer: Any, stream: str) -> int:
    """Send the warm-up message (the consumer is subscribed once it arrives); its id."""
    warm = _Counter(1)
    ids: list[int] = []

    def on_warm(status: Any) -> None:
        ids.append(status.message_id)
        warm(status)

    await producer.send(stream, amqp(b'w' * 10), on_publish_confirm=on_warm)
    await warm.done
    return ids[0]


async def rstream_latency(url: str, stream: str, rate: float, count: int) -> JsonDict:
    """``Producer.send`` with a confirmation callback at a fixed rate; a ``Consumer``."""
    from rstream import Consumer, ConsumerOffsetSpecification, OffsetType, Producer, amqp_decoder

    loop = OpenLoop(rate, count)
    clock = time.perf_counter_ns
    (host, port), kw = _rstream_args(url)
    subscribed = asyncio.get_running_loop().create_future()
    all_in = asyncio.get_running_loop().create_future()
    received = loop.received
    confirmed = loop.confirmed
    n = 0
    watch = Stopwatch()

    def on_message(message: Any, ctx: Any) -> None:
        nonlocal n
        msg = message.body
        if msg[:1] == b'w':
            if not subscribed.done():
                subscribed.set_result(None)
            return
        received[int(msg[:10])] = clock()
        n += 1
        if n == count and not all_in.done():
            all_in.set_result(None)

    base = -1
    confirms = 0
    all_confirmed = asyncio.get_running_loop().create_future()

    def on_confirm(status: Any) -> None:
        nonlocal confirms
        if base < 0 or not status.is_confirmed:   # a failure: never confirmed, the run fails
            return
        confirmed[status.message_id - base] = clock()
        confirms += 1
        if confirms == count and not all_confirmed.done():
            all_confirmed.set_result(None)

    consumer = Consumer(host, port, **kw)
    await consumer.start()
    try:
        await consumer.subscribe(
            stream, on_message, decoder=amqp_decoder,
            offset_specification=ConsumerOffsetSpecification(OffsetType.FIRST, None),
        )
        async with Producer(host, port, **kw) as producer:
            base = await _rstream_warm_up(producer, stream) + 1
            await asyncio.wait_for(subscribed, 30)
            watch.start()
            await loop.run(
                lambda i: producer.send(stream, amqp(b'%010d' % i), on_publish_confirm=on_confirm),
            )
            await asyncio.wait_for(all_confirmed, 60)
            await asyncio.wait_for(all_in, 60)
            watch.stop()
    finally:
        await consumer.close()
    return loop.result(watch)


async def rstream_compression(
        url: str, stream: str, bodies: Sequence[bytes], codec: str | None, batch: int,
) -> JsonDict:
    """``Producer.send`` each, or ``send_sub_entry`` batches with rstream's codec."""
    from rstream import CompressionType, Producer

    if codec not in (None, 'none', 'gzip'):
        # rstream declares these codecs but implements none of them
        raise SkipImplementation('rstream has no {} codec (only gzip)'.format(codec))
    count = len(bodies)
    (host, port), kw = _rstream_args(url)
    types = {
        'none': CompressionType.No, 'gzip': CompressionType.Gzip,
        'snappy': CompressionType.Snappy, 'lz4': CompressionType.Lz4,
        'zstd': CompressionType.Zstd,
    }
    watch = Stopwatch()
    async with Producer(host, port, **kw) as producer:
        await _rstream_warm_up(producer, stream)   # its publisher declared before the timing
        wrote = written_bytes()
        if codec is None:
            counter = _Counter(count)
            watch.start()
            for m in bodies:
                await producer.send(stream, amqp(m), on_publish_confirm=counter)
        else:
            # one confirmation per message of a sub-entry batch, or one per batch
            counter = _Counter(-(-count // batch))
            ctype = types[codec]
            watch.start()
            for start in range(0, count, batch):
                await producer.send_sub_entry(
                    stream, [amqp(m) for m in bodies[start:start + batch]], compression_type=ctype,
                    on_publish_confirm=counter,
                )
        await counter.done
        watch.stop()
        wrote = written_bytes() - wrote
    read = Stopwatch()
    tally = await _rstream_read(url, stream, count, read)
    tally.check()
    return _compression_result(count, bodies, watch, wrote, read)
