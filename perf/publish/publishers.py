"""
The publishers measured by perf.publish: one function per library
(rbfly, rstream, aiokafka) that publishes a scenario's messages to a fresh
stream or topic and returns the run's figures.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from perf.common.errors import SkipImplementation, VerificationError
from perf.common.kafka import kafka_pid
from perf.common.raw import Sender, amqp_string, connect, poll, publish_frames
from perf.common.results import JsonDict
from perf.common.scenarios import Case
from perf.common.streams import Stopwatch, endpoint, message, percentiles, run_result, stream_name

def make_message(fmt: str) -> Callable[[int], Any]:
    """Message ``i`` as an rbfly message (str for AMQP, bytes for binary)."""
    if fmt == 'binary':
        return lambda i: message(i).encode()
    return message


def expected_body(case: Case) -> str | bytes:
    last = message(case.count - 1)
    return last.encode() if case.fmt == 'binary' else last


#
# rbfly (this version or 0.10; the same code runs in the child process)
#

def rbfly_class(case: Case) -> Any:
    """rbfly publisher class of a case; works with RbFly 0.10 too."""
    import rbfly.streams as rs

    if case.scenario == 'pipelined':
        if case.fmt == 'binary':
            raise SkipImplementation('rbfly has no binary pipelined publisher')
        cls = getattr(rs, 'PublisherPipelined', None)
        if cls is None:
            raise SkipImplementation('this rbfly has no pipelined publisher')
        return cls
    if case.fmt == 'amqp':
        return rs.Publisher if case.scenario == 'single' else rs.PublisherBatchFast
    name = 'PublisherBin' if case.scenario == 'single' else 'PublisherBinBatch'
    cls = getattr(rs, name, None)
    if cls is None:   # RbFly 0.10 does not export the binary publishers
        from rbfly.streams import _client
        cls = getattr(_client, name)
    return cls


async def publish_rbfly(
        url: str, stream: str, case: Case, sub_entry: bool = False, anonymous: bool = False,
        spin: float | None = None, many: bool = False,
) -> JsonDict:
    """
    Publish a case with rbfly; with ``sub_entry``, as sub-entry batches of
    ``case.batch`` messages (batch: ``sub_entry_size`` of the batch
    publisher; pipelined: a :py:class:`SubEntryBatch` per send, the window
    counting batches); with ``anonymous``, declared without a name
    (``dedup=False``); with ``spin``, the client polls for a confirmation
    that far (``streams_client(spin=...)``; rbfly's default is no spin);
    with ``many``, the messages go in lists to ``send_many`` (see
    :py:func:`_publish_many`).
    """
    from rbfly.streams import streams_client

    cls = rbfly_class(case)
    watch = Stopwatch()
    lat: list[int] = []
    kw: dict[str, Any] = {'cls': cls}
    if anonymous:
        kw['dedup'] = False
    if case.window is not None:
        kw['window'] = case.window
    if sub_entry and case.scenario == 'batch':
        kw['sub_entry_size'] = case.batch
    elif sub_entry and case.scenario == 'pipelined':
        kw['window'] = max(1, (case.window or 10_000) // case.batch)
    # RbFly 0.10 clients are no context managers; it has no spin option
    client = streams_client(url) if spin is None else streams_client(url, spin=spin)
    try:
        async with client.publisher(stream, **kw) as p:
            if sub_entry and case.scenario == 'pipelined':
                await _publish_sub_entries(p, case, watch)
            elif many:
                await _publish_many(p, case, watch, lat)
            else:
                await _publish_rbfly(p, case, watch, lat)
    finally:
        await client.disconnect()
    return run_result(case.count, watch, latency_of(lat, case))


async def _publish_rbfly(p: Any, case: Case, watch: Stopwatch, lat: list[int]) -> None:
    make = make_message(case.fmt)
    clock = time.perf_counter_ns
    count = case.count
    if case.scenario == 'single':
        send = p.send
        append = lat.append
        watch.start()
        for i in range(count):
            t0 = clock()
            await send(make(i))
            append(clock() - t0)
        watch.stop()
    elif case.scenario == 'batch':
        batch = p.batch
        flush = p.flush
        size = case.batch
        watch.start()
        for start in range(0, count, size):
            t0 = clock()
            for i in range(start, min(start + size, count)):
                batch(make(i))
            await flush()
            lat.append(clock() - t0)
        watch.stop()
    else:
        send = p.send
        watch.start()
        for i in range(count):
            await send(make(i))
        await p.flush()
        watch.stop()


MANY = 1_000
"""Messages per ``send_many`` call of the pipelined publisher (``rbfly-many``)."""

async def _publish_many(p: Any, case: Case, watch: Stopwatch, lat: list[int]) -> None:
    """
    ``send_many``: the batch scenario's batches, each confirmed before the
    next (``Publisher.send_many``, whose latency is the batch's); the
    pipelined one's lists of :py:data:`MANY` messages, made in the timing
    as the other publishers' messages are.
    """
    make = make_message(case.fmt)
    clock = time.perf_counter_ns
    count = case.count
    size = case.batch if case.scenario == 'batch' else MANY
    send_many = p.send_many
    watch.start()
    for start in range(0, count, size):
        t0 = clock()
        await send_many([make(i) for i in range(start, min(start + size, count))])
        if case.scenario == 'batch':
            lat.append(clock() - t0)
    if case.scenario == 'pipelined':
        await p.flush()
    watch.stop()


async def _publish_sub_entries(p: Any, case: Case, watch: Stopwatch) -> None:
    from rbfly.streams import SubEntryBatch

    make = make_message(case.fmt)
    send = p.send
    size = case.batch
    count = case.count
    watch.start()
    for start in range(0, count, size):
        await send(SubEntryBatch([make(i) for i in range(start, min(start + size, count))]))
    await p.flush()
    watch.stop()


def latency_of(lat: Sequence[int], case: Case) -> JsonDict | None:
    result = percentiles(lat)
    if result is not None:
        result['unit'] = 'message' if case.scenario == 'single' else 'batch'
    return result


#
# the broker's ceiling: a publisher whose frames are ready before the timing
#

PIPELINED_FRAME = 1_000
"""Messages per Publish frame of the pipelined ceiling (rbfly's ``batch_size``)."""

PIPELINED_WINDOW = 10_000
"""Unconfirmed messages of the pipelined ceiling (rbfly's default ``window``)."""

async def publish_ceiling(
        url: str, stream: str, case: Case, polling: bool = False,
) -> JsonDict:
    """
    Publish a case with :py:class:`perf.common.raw.Sender`: all Publish frames built
    before the timing (one message per frame for ``single``, ``case.batch``
    for ``batch``), each awaited as the others' are. ``pipelined``: rbfly's
    shape, frames of :py:data:`PIPELINED_FRAME` messages sent while at most
    ``case.window`` (default :py:data:`PIPELINED_WINDOW`) messages wait for
    confirmation.

    The publisher sleeps while it waits for a confirmation; with
    ``polling``, it keeps the event loop polling instead (a busy core).
    Neither is a ceiling alone: on a machine of two cores a polling client
    takes the core the broker needs when the broker is busy, and a sleeping
    one is woken later when it is not; the report takes the best of both.
    """
    if not url.startswith('rabbitmq-stream:'):
        raise SkipImplementation('the ceiling publisher has no TLS')
    encode = amqp_string if case.fmt == 'amqp' else str.encode
    messages = [encode(message(i)) for i in range(case.count)]
    if case.scenario == 'pipelined':
        per_frame = PIPELINED_FRAME
    else:
        per_frame = 1 if case.scenario == 'single' else case.batch
    frames = publish_frames(messages, 1, per_frame)
    del messages
    wait = poll if polling else _wait
    ep = endpoint(url)
    sender = Sender(ep)
    await connect(ep, sender)
    watch = Stopwatch()
    lat: list[int] = []
    clock = time.perf_counter_ns
    try:
        await sender.declare(stream)
        assert sender.transport is not None
        write = sender.transport.write
        sent = 0
        if case.scenario == 'pipelined':
            window = case.window or PIPELINED_WINDOW
            watch.start()
            for frame in frames:
                if sent + per_frame - sender.confirmed > window:
                    await wait(sender.expect(sent + per_frame - window))
                write(frame)
                sent = min(sent + per_frame, case.count)
            await wait(sender.expect(case.count))
            watch.stop()
            return run_result(case.count, watch, None)
        watch.start()
        for frame in frames:
            t0 = clock()
            sent = min(sent + per_frame, case.count)
            confirmed = sender.expect(sent)
            write(frame)
            await wait(confirmed)
            lat.append(clock() - t0)
        watch.stop()
    finally:
        sender.close()
    return run_result(case.count, watch, latency_of(lat, case))


async def _wait(fut: asyncio.Future[None]) -> None:
    """Wait for ``fut`` asleep: the event loop blocks until the socket is readable."""
    await fut


#
# rstream
#

class _Confirmations:
    """Counts rstream's confirmation callbacks; a future waits for a number."""

    def __init__(self) -> None:
        self.confirmed = 0
        self.failed = 0
        self._goal = 0
        self._future: asyncio.Future[None] | None = None

    def wait_for(self, goal: int) -> asyncio.Future[None]:
        self._goal = goal
        self._future = asyncio.get_running_loop().create_future()
        self._check()
        return self._future

    def __call__(self, status: Any) -> None:
        if status.is_confirmed:
            self.confirmed += 1
        else:
            self.failed += 1
        self._check()

    def _check(self) -> None:
        f = self._future
        if f is not None and not f.done() and self.confirmed + self.failed >= self._goal:
            if self.failed:
                f.set_exception(VerificationError(
                    'rstream: {} messages rejected'.format(self.failed)
                ))
            else:
                f.set_result(None)


def rstream_message(fmt: str) -> Callable[[int], Any]:
    if fmt == 'binary':
        return lambda i: message(i).encode()
    from rstream import AMQPMessage
    return lambda i: AMQPMessage(value=message(i))


async def publish_rstream(url: str, stream: str, case: Case) -> JsonDict:
    from rstream import Producer

    ep = endpoint(url)
    make = rstream_message(case.fmt)
    watch = Stopwatch()
    lat: list[int] = []
    clock = time.perf_counter_ns
    count = case.count
    async with Producer(
            ep.host, ep.port, username=ep.username, password=ep.password, vhost=ep.vhost,
    ) as producer:
        if case.scenario == 'single':
            send_wait = functools.partial(producer.send_wait, stream)
            append = lat.append
            watch.start()
            for i in range(count):
                t0 = clock()
                await send_wait(make(i))
                append(clock() - t0)
            watch.stop()
        elif case.scenario == 'batch':
            confirmations = _Confirmations()
            size = case.batch
            watch.start()
            for start in range(0, count, size):
                t0 = clock()
                msgs = [make(i) for i in range(start, min(start + size, count))]
                await producer.send_batch(stream, msgs, on_publish_confirm=confirmations)
                await confirmations.wait_for(start + len(msgs))
                lat.append(clock() - t0)
            watch.stop()
        else:
            confirmations = _Confirmations()
            send = functools.partial(producer.send, stream, on_publish_confirm=confirmations)
            watch.start()
            for i in range(count):
                await send(make(i))
            await confirmations.wait_for(count)
            watch.stop()
    return run_result(count, watch, latency_of(lat, case))


#
# aiokafka
#

async def publish_aiokafka(bootstrap: str, topic: str, case: Case) -> JsonDict:
    import msgpack
    from aiokafka import AIOKafkaProducer

    watch = Stopwatch(kafka_pid(bootstrap))
    lat: list[int] = []
    clock = time.perf_counter_ns
    count = case.count
    pack = msgpack.packb
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks='all', linger_ms=0, enable_idempotence=False,
    )
    await producer.start()
    try:
        await producer.partitions_for(topic)   # metadata, not timed
        if case.scenario == 'single':
            send_and_wait = functools.partial(producer.send_and_wait, topic, partition=0)
            append = lat.append
            watch.start()
            for i in range(count):
                t0 = clock()
                await send_and_wait(pack(message(i)))
                append(clock() - t0)
            watch.stop()
        elif case.scenario == 'batch':
            size = case.batch
            watch.start()
            for start in range(0, count, size):
                t0 = clock()
                batch = producer.create_batch()
                for i in range(start, min(start + size, count)):
                    if batch.append(key=None, value=pack(message(i)), timestamp=None) is None:
                        raise VerificationError('aiokafka: batch of {} is full'.format(size))
                future = await producer.send_batch(batch, topic, partition=0)
                await future
                lat.append(clock() - t0)
            watch.stop()
        else:
            send = functools.partial(producer.send, topic, partition=0)
            futures = []
            watch.start()
            for i in range(count):
                futures.append(await send(pack(message(i))))
            await producer.flush()
            watch.stop()
            failed = [f for f in futures if f.exception() is not None]
            if failed:
                raise VerificationError('aiokafka: {} sends failed: {!r}'.format(
                    len(failed), failed[0].exception(),
                ))
    finally:
        await producer.stop()
    return run_result(count, watch, latency_of(lat, case))

#
# targets of a run: RabbitMQ streams and Kafka topics
#

SEGMENT_CHUNKS = 256_000  # the broker's default max_segment_size_chunks

class StreamAdmin:
    """Creates, checks and deletes the streams of the runs (current rbfly)."""

    def __init__(self, url: str) -> None:
        from rbfly.streams import streams_client
        self.url = url
        self.client = streams_client(url)

    async def create(self, case: Case, impl: str) -> str:
        stream = stream_name(case.scenario, case.fmt, impl)
        await self.client.create_stream(stream, exist_ok=False)
        return stream

    async def check(
            self, stream: str, case: Case, impl: str, expected: str | bytes | None = None,
    ) -> None:
        """
        The last message of the stream is the last one published: its body
        is ``expected`` (default: :py:func:`expected_body` of the case), at
        offset ``count - 1``. The broker starts a segment file every
        256,000 chunks with a record of its publishers' ids (not a message,
        but it takes an offset), so a run of more chunks ends one offset
        later per segment started.
        """
        from rbfly.streams import Offset

        last = None
        async for chunk in self.client.subscribe_chunks(
                stream, offset=Offset.LAST, amqp=case.fmt == 'amqp', timeout=30):
            last = chunk[-1]
            break
        if expected is None:
            expected = expected_body(case)
        extra = -1 if last is None else last.stream_offset - (case.count - 1)
        if last is None or not 0 <= extra <= case.count // SEGMENT_CHUNKS or last.body != expected:
            found = None if last is None else (last.stream_offset, last.body)
            raise VerificationError(
                '{} {}: stream {} ends with {!r}, expected offset {} with {!r}'.format(
                    impl, case.key, stream, found, case.count - 1, expected,
                )
            )

    async def delete(self, stream: str) -> None:
        await self.client.delete_stream(stream)

    async def close(self) -> None:
        await self.client.disconnect()


class TopicAdmin:
    """Creates, checks and deletes the Kafka topics of the runs."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    async def create(self, case: Case, impl: str) -> str:
        from aiokafka.admin import AIOKafkaAdminClient, NewTopic

        topic = stream_name(case.scenario, case.fmt, impl)
        admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
        finally:
            await admin.close()
        return topic

    async def check(self, topic: str, case: Case, impl: str) -> None:
        import msgpack
        from aiokafka import AIOKafkaConsumer, TopicPartition

        tp = TopicPartition(topic, 0)
        consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            consumer.assign([tp])
            end = (await consumer.end_offsets([tp]))[tp]
            consumer.seek(tp, max(0, end - 1))
            record = await asyncio.wait_for(consumer.getone(), 30)
        finally:
            await consumer.stop()
        body = msgpack.unpackb(record.value)
        if end != case.count or record.offset != case.count - 1 or body != message(case.count - 1):
            raise VerificationError(
                '{} {}: topic {} has {} records ending with {!r} at {}'.format(
                    impl, case.key, topic, end, body, record.offset,
                )
            )

    async def delete(self, topic: str) -> None:
        from aiokafka.admin import AIOKafkaAdminClient

        admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap)
        await admin.start()
        try:
            await admin.delete_topics([topic])
        finally:
            await admin.close()

    async def close(self) -> None:
        pass


class Admin(Protocol):
    async def create(self, case: Case, impl: str) -> str: ...
    async def check(self, target: str, case: Case, impl: str) -> None: ...
    async def delete(self, target: str) -> None: ...
    async def close(self) -> None: ...

__all__ = [
    'Admin',
    'Case',
    'StreamAdmin',
    'TopicAdmin',
    '_Confirmations',
    '_publish_rbfly',
    'expected_body',
    'latency_of',
    'make_message',
    'publish_aiokafka',
    'publish_rbfly',
    'publish_rstream',
    'rbfly_class',
    'rstream_message',
]
