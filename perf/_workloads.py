"""
The workloads of ``bench_workloads.py``, one function per library and
workload: message sizes, many publishers and streams, latency under a
fixed offered load, a slow application, and sub-entry compression.

Each function does one run against a broker and returns its figures as a
JSON dict (``run_result`` of ``_streams`` plus what the workload adds).
The rbfly functions that RbFly 0.10 can run (sizes, slow) use only its
API, so the same code runs in its venv as a child process.

Messages carry their index in their first 10 bytes (``b'%010d'``), so a
consumer checks what it got and a latency is matched to its send.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from _common import JsonDict
from _publishers import kafka_pid
from _streams import (
    SkipImplementation,
    Stopwatch,
    VerificationError,
    endpoint,
    run_result,
)

MB = 1_000_000


def body(i: int, size: int, filler: bytes) -> bytes:
    """Message ``i`` of ``size`` bytes: its index, then ``filler``."""
    return b'%010d' % i + filler[:size - 10]


def filler_of(size: int) -> bytes:
    """Bytes that follow a message's index (incompressible enough: a counter's digits)."""
    text = ''.join(str(k) for k in range(size // 2 + 16)).encode()
    return text[:max(0, size - 10)]


def index_of(data: Any) -> int:
    """The index in a message's first 10 bytes (bytes, or str of RbFly 0.10)."""
    head = data[:10]
    return int(head)


def quantiles(values_ns: Sequence[int]) -> JsonDict | None:
    """p50, p99, p99.9 and max of latencies in nanoseconds, in microseconds."""
    if not values_ns:
        return None
    data = sorted(values_ns)
    n = len(data)

    def rank(p: float) -> float:
        return data[min(n - 1, max(0, int(p / 100 * n + 0.5) - 1))] / 1000

    return {
        'count': n, 'p50_us': rank(50), 'p99_us': rank(99), 'p999_us': rank(99.9),
        'max_us': data[-1] / 1000,
    }


def written_bytes() -> int:
    """
    Bytes this process passed to ``write`` calls (``/proc/self/io``:
    wchar). uvloop writes to sockets with ``write``/``writev``; asyncio's
    loop with ``send``, which wchar does not count (see :py:func:`wire`).
    """
    with open('/proc/self/io', encoding='ascii') as f:
        for line in f:
            key, _, value = line.partition(':')
            if key == 'wchar':
                return int(value)
    raise OSError('no wchar in /proc/self/io')


class RssSampler:
    """
    The resident memory of this process every ``interval`` seconds, from a
    thread (an application busy in its own code still gets sampled at the
    interpreter's switch interval).
    """

    def __init__(self, interval: float = 0.2) -> None:
        self.interval = interval
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._page = os.sysconf('SC_PAGE_SIZE')

    def rss(self) -> int:
        with open('/proc/self/statm', encoding='ascii') as f:
            return int(f.read().split()[1]) * self._page

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.samples.append(self.rss())

    def __enter__(self) -> RssSampler:
        self.samples.append(self.rss())
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append(self.rss())

    def summary(self) -> JsonDict:
        return {
            'rss_start_mb': self.samples[0] / MB,
            'rss_max_mb': max(self.samples) / MB,
            'rss_final_mb': self.samples[-1] / MB,
            # what the run added: the process ran other workloads before
            'rss_growth_mb': (max(self.samples) - self.samples[0]) / MB,
            'rss_samples': len(self.samples),
        }


def busy(work_ns: int, clock: Callable[[], int] = time.perf_counter_ns) -> None:
    """An application's processing of a message: ``work_ns`` of CPU."""
    end = clock() + work_ns
    while clock() < end:
        pass


def sized_result(count: int, size: int, watch: Stopwatch, **extra: Any) -> JsonDict:
    result = run_result(count, watch, **extra)
    result['size'] = size
    result['mb_per_s'] = count * size / watch.seconds / MB if watch.seconds > 0 else None
    return result


class Tally:
    """
    What a consumer received: the count, and the last message, whose index
    must be the last one sent (what the Java harness checks too: reading
    each message's index would cost the Python clients alone). A warm-up
    message (``b'w...'``, sent to declare a publisher before a timing) is
    not counted.
    """

    def __init__(self, impl: str, count: int) -> None:
        self.impl = impl
        self.count = count
        self.n = 0
        self.last: Any = None

    def add(self, data: Any) -> bool:
        """Count a message; ``True`` when all arrived."""
        if data[:1] == b'w':
            return False
        self.n += 1
        self.last = data
        return self.n >= self.count

    def check(self) -> None:
        last = None if self.last is None else index_of(self.last)
        if self.n != self.count or last != self.count - 1:
            raise VerificationError('{}: received {} of {} messages, the last {}'.format(
                self.impl, self.n, self.count, last,
            ))


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


class OpenLoop:
    """
    Figures of a run at a fixed offered load: message ``i`` is due at
    ``t0 + i / rate``; its latencies count from then (a client that falls
    behind is charged for the wait, not only for its own round trips).
    """

    def __init__(self, rate: float, count: int) -> None:
        self.rate = rate
        self.count = count
        self.interval = 1e9 / rate
        self.t0 = 0
        self.confirmed = [0] * count
        self.received = [0] * count
        self.last_sent = 0

    def due(self, i: int) -> int:
        return self.t0 + int(i * self.interval)

    async def run(self, send: Callable[[int], Any]) -> None:
        """Call ``await send(i)`` for each message at its due time (or as soon as it can)."""
        clock = time.perf_counter_ns
        count = self.count
        self.t0 = clock()
        i = 0
        while i < count:
            now = clock()
            ready = min(count, int((now - self.t0) / self.interval) + 1)
            while i < ready:
                await send(i)
                i += 1
            if i < count:
                delay = (self.due(i) - clock()) / 1e9
                if delay > 0:
                    await asyncio.sleep(delay)
        self.last_sent = clock()

    def result(self, watch: Stopwatch, end_to_end: bool = True) -> JsonDict:
        missing = self.confirmed.count(0)
        lost = self.received.count(0) if end_to_end else 0
        if missing or lost:
            raise VerificationError('{} messages not confirmed, {} not received'.format(
                missing, lost,
            ))
        early = sum(1 for i, r in enumerate(self.received) if r < self.due(i))
        early += sum(1 for i, c in enumerate(self.confirmed) if c < self.due(i))
        if early:
            raise VerificationError('{} latencies before their message was due'.format(early))
        sent_for = (self.last_sent - self.t0) / 1e9
        return run_result(
            self.count, watch,
            offered=self.rate,
            achieved=self.count / sent_for if sent_for > 0 else None,
            confirm=quantiles([c - self.due(i) for i, c in enumerate(self.confirmed)]),
            end_to_end=quantiles([
                r - self.due(i) for i, r in enumerate(self.received)
            ]) if end_to_end else None,
        )


async def rbfly_latency(url: str, stream: str, rate: float, count: int) -> JsonDict:
    """
    ``PublisherPipelined`` at a fixed rate, a confirmation listener noting
    when each is confirmed, and an ``async for`` subscriber on another
    client (connection) of the same process noting when each arrives.
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
        async with pub_client.publisher(stream, cls=PublisherPipelined) as p:
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


def _compression_result(
        count: int, bodies: Sequence[bytes], watch: Stopwatch, wrote: int, read: Stopwatch,
) -> JsonDict:
    raw = sum(len(b) for b in bodies)
    if wrote < count:
        raise VerificationError(
            '{} bytes counted for {} messages: /proc/self/io counts write() calls, which'
            ' uvloop makes and asyncio does not (run with --loop uvloop)'.format(wrote, count),
        )
    return run_result(
        count, watch,
        body_bytes=raw / count,
        wire_bytes_per_msg=wrote / count,
        wire_ratio=wrote / raw,
        read_rate=count / read.seconds if read.seconds > 0 else None,
        read_cpu_us_per_msg=read.cpu_seconds / count * 1e6,
    )


def json_bodies(count: int) -> list[bytes]:
    """Compressible JSON events of about 230 bytes, each with its index first."""
    countries = ('PL', 'DE', 'FR', 'GB', 'US')
    out = []
    for i in range(count):
        event = {
            'type': 'order.created',
            'customer': 'customer-{:04d}'.format(i % 997),
            'country': countries[i % 5],
            'amount': round((i % 10_000) * 1.37, 2),
            'currency': 'EUR',
            'items': [
                {'sku': 'SKU-{:05d}'.format((i * 7 + k) % 50_000), 'qty': 1 + (i + k) % 3}
                for k in range(3)
            ],
            'created': '2026-11-25T{:02d}:{:02d}:{:02d}Z'.format(i // 3600 % 24, i // 60 % 60,
                                                                 i % 60),
        }
        out.append(b'%010d' % i + json.dumps(event, separators=(',', ':')).encode())
    return out


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


#
# aiokafka (Kafka's counterpart of each workload)
#

def _kafka_producer(bootstrap: str, **kw: Any) -> Any:
    from aiokafka import AIOKafkaProducer
    return AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks='all', enable_idempotence=False, **kw,
    )


async def _kafka_send_all(producer: Any, sends: Any) -> None:
    futures = [await s for s in sends]
    await producer.flush()
    failed = [f for f in futures if f.exception() is not None]
    if failed:
        raise VerificationError('aiokafka: {} sends failed: {!r}'.format(
            len(failed), failed[0].exception(),
        ))


async def aiokafka_publish_sized(bootstrap: str, topic: str, size: int, count: int) -> JsonDict:
    """``await send(topic, bytes)`` each (acks=all), then ``flush()``."""
    filler = filler_of(size)
    producer = _kafka_producer(bootstrap, max_request_size=max(1 << 20, 2 * size))
    await producer.start()
    watch = Stopwatch(kafka_pid(bootstrap))
    try:
        await producer.partitions_for(topic)
        watch.start()
        await _kafka_send_all(producer, (
            producer.send(topic, body(i, size, filler), partition=0) for i in range(count)
        ))
        watch.stop()
    finally:
        await producer.stop()
    return sized_result(count, size, watch)


async def _kafka_read(
        bootstrap: str, topic: str, count: int, watch: Stopwatch,
        on_each: Callable[[], None] | None = None,
) -> Tally:
    """Read ``count`` records; ``watch`` starts once connected (as rbfly's); its defaults."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    tally = Tally('aiokafka', count)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset='earliest',
    )
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        watch.start()
        while tally.n < count:
            batches = await consumer.getmany(timeout_ms=1000)
            for records in batches.values():
                for record in records:
                    if on_each is not None:
                        on_each()
                    tally.add(record.value)
        watch.stop()
    finally:
        await consumer.stop()
    return tally


async def aiokafka_consume_sized(bootstrap: str, topic: str, size: int, count: int) -> JsonDict:
    """``getmany()`` from the beginning of the partition."""
    watch = Stopwatch(kafka_pid(bootstrap))
    tally = await _kafka_read(bootstrap, topic, count, watch)
    tally.check()
    return sized_result(count, size, watch)


async def aiokafka_slow(
        bootstrap: str, topic: str, size: int, count: int, work_us: float,
) -> JsonDict:
    """``getmany()``, ``work_us`` of CPU on each record; RSS sampled meanwhile."""
    watch = Stopwatch(kafka_pid(bootstrap))
    work_ns = int(work_us * 1000)
    with RssSampler() as rss:
        tally = await _kafka_read(bootstrap, topic, count, watch, lambda: busy(work_ns))
    tally.check()
    return sized_result(count, size, watch, **rss.summary())


async def aiokafka_fanout(bootstrap: str, topics: Sequence[str], per_topic: int) -> JsonDict:
    """One producer (its connection to the broker) sending to every topic at once."""
    producer = _kafka_producer(bootstrap)
    await producer.start()
    watch = Stopwatch(kafka_pid(bootstrap))
    try:
        for topic in topics:
            await producer.partitions_for(topic)

        async def publish(topic: str) -> None:
            await _kafka_send_all(producer, (
                producer.send(topic, b'%010d' % i, partition=0) for i in range(per_topic)
            ))

        watch.start()
        await asyncio.gather(*(publish(t) for t in topics))
        watch.stop()
    finally:
        await producer.stop()
    return sized_result(per_topic * len(topics), 10, watch, connections=1)


async def aiokafka_latency(bootstrap: str, topic: str, rate: float, count: int) -> JsonDict:
    """``send`` at a fixed rate, each future's completion noted; a consumer's ``getmany``."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    loop = OpenLoop(rate, count)
    clock = time.perf_counter_ns
    received = loop.received
    confirmed = loop.confirmed
    producer = _kafka_producer(bootstrap)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset='earliest',
    )
    watch = Stopwatch(kafka_pid(bootstrap))
    task: asyncio.Task[None] | None = None
    await producer.start()
    await consumer.start()
    try:
        await producer.partitions_for(topic)
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)

        subscribed = asyncio.get_running_loop().create_future()

        async def consume() -> None:
            n = 0
            while n < count:
                batches = await consumer.getmany(timeout_ms=100)
                now = clock()
                for records in batches.values():
                    for record in records:
                        if record.value[:1] == b'w':   # the warm-up: fetching
                            subscribed.set_result(None)
                            continue
                        received[int(record.value[:10])] = now
                        n += 1

        def noted(i: int) -> Callable[[Any], None]:
            def done(future: Any) -> None:
                if not future.cancelled() and future.exception() is None:
                    confirmed[i] = clock()   # a failure stays 0: the run fails
            return done

        async def send(i: int) -> None:
            future = await producer.send(topic, b'%010d' % i, partition=0)
            future.add_done_callback(noted(i))

        task = asyncio.create_task(consume())
        await producer.send_and_wait(topic, b'w' * 10, partition=0)
        await asyncio.wait_for(subscribed, 30)
        watch.start()
        await loop.run(send)
        await producer.flush()
        await asyncio.wait_for(task, 60)
        watch.stop()
    finally:
        if task is not None:
            task.cancel()
        await consumer.stop()
        await producer.stop()
    return loop.result(watch)


async def aiokafka_compression(
        bootstrap: str, topic: str, bodies: Sequence[bytes], codec: str | None, batch: int,
) -> JsonDict:
    """
    ``send`` each with the producer's ``compression_type`` (Kafka compresses
    its record batches, whatever accumulates while the previous request is
    in flight; ``batch`` is not Kafka's knob), then read back.
    """
    count = len(bodies)
    producer = _kafka_producer(bootstrap, compression_type=codec)
    await producer.start()
    watch = Stopwatch(kafka_pid(bootstrap))
    try:
        await producer.partitions_for(topic)
        wrote = written_bytes()
        watch.start()
        await _kafka_send_all(producer, (
            producer.send(topic, m, partition=0) for m in bodies
        ))
        watch.stop()
        wrote = written_bytes() - wrote
    finally:
        await producer.stop()
    read = Stopwatch(kafka_pid(bootstrap))
    tally = await _kafka_read(bootstrap, topic, count, read)
    tally.check()
    return _compression_result(count, bodies, watch, wrote, read)
