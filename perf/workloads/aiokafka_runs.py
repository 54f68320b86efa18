"""
The workloads of ``perf.workloads`` with aiokafka, on Kafka (each
workload's counterpart).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from perf.common.errors import VerificationError
from perf.common.kafka import kafka_pid
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
