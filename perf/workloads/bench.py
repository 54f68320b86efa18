"""
The workloads users run, each against rbfly's peers on the same broker
(a Kafka broker for aiokafka), one after the other:

``sizes``
    publish, then read back from the first offset, messages of 10 B,
    1 KiB, 16 KiB and 512 KiB (msg/s and MB/s); each client's own way of
    publishing without waiting for each confirmation (rbfly
    ``PublisherPipelined``; RbFly 0.10, which has none, batches of 100
    awaited; rstream ``send`` with a callback; aiokafka ``send`` then
    ``flush``; Java: its perf tool with ``--size``). Every client reads
    the stream rbfly published (the chunks, the unit the broker delivers,
    are the same for all; the Java client by rbfly's harness, which reads
    a given stream and times it from the subscription to the last message,
    as the Python clients are timed); aiokafka its own topic
``fanout``
    1, 10 and 100 publishers on as many streams at once, 10-byte messages,
    on one connection and on a connection each (aiokafka: one producer)
``latency``
    an open loop: messages offered at 1k, 10k and 50k msg/s, and at 50%
    and 80% of the client's own maximum (its 10-byte ``sizes`` rate, when
    run), sent in ticks of 1 ms, what is due each tick (as a rate
    limiter does; the loop wakes at most 1,000 times a second):
    p50/p99/p99.9 from the moment a message was due to its
    confirmation and to its delivery to a live consumer in the same
    process (end to end). A client that falls behind is charged for it
    (no coordinated omission). The Java figures are its tool's (``--rate``;
    end to end only, in milliseconds). ``null``: the harness alone, no
    client (its CPU a message is in every Python client's figure)
``slow``
    read 1 KiB messages with an application spending 50 µs of CPU on each:
    the rate should be the application's pace (just under 20,000 msg/s)
    and the memory flat (RSS sampled every 0.2 s: start, max, final)
``compression``
    compressible JSON events (about 230 bytes) published one by one and
    as sub-entry batches of 100 with each codec, then read back: rate,
    client CPU, bytes written per message (``/proc/self/io``: what the
    process handed to the kernel, TCP/IP headers aside). Kafka compresses
    its own record batches (``compression_type``)

Implementations: ``rbfly``, ``rbfly-0.10`` (a child process in
``perf/.venv-rbfly010``, sizes and slow: the same code, its API), ``rstream``,
``java`` (the Java client's own perf tool, StreamPerfTest, stream-client
0.13.0, steady state from second 6 of its 20 s run; sizes, fanout,
latency; reading in sizes, rbfly's harness, ``perf/java/StreamPerf.java``,
warmed up for 10 s),
``aiokafka`` (when a Kafka broker answers at ``--kafka``), ``null`` (latency:
the harness with no client).

One run per case (each on streams of its own); the client's CPU per
message is this process's (or the JVM's) over the run. A run that fails
(or takes more than 15 minutes) is recorded as an error with its cause.

Examples::

    python -m perf.workloads --json doc/perf/results/workloads.json
    python -m perf.workloads --workloads latency --impl rbfly java
    python -m perf.workloads --quick
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from perf.common import cli
from perf.common.errors import EXIT_USAGE, EXIT_VERIFY
from perf.common.results import JsonDict, env_metadata, log
from perf.common.streams import (
    BASELINE,
    broker_info,
    find_broker,
    log_broker,
    loop_info,
    redact_url,
    run_async,
)
from perf.workloads import aiokafka_runs as wk
from perf.workloads import parts as w
from perf.workloads import rbfly_runs as wr
from perf.workloads import rstream_runs as ws
from perf.workloads.runs import TOOL_SECONDS, WORK_US, Bench, tables

WORKLOADS = ('sizes', 'fanout', 'latency', 'slow', 'compression')
NULL = 'null'
"""No client: the harness's own cost at a fixed rate (``latency``), printed beside the clients."""
IMPLS = ('rbfly', BASELINE, 'rstream', 'java', 'aiokafka', NULL)
SUPPORTED = {
    'sizes': ('rbfly', BASELINE, 'rstream', 'java', 'aiokafka'),
    'fanout': ('rbfly', 'rstream', 'java', 'aiokafka'),
    'latency': ('rbfly', 'rstream', 'java', 'aiokafka', NULL),
    'slow': ('rbfly', BASELINE, 'rstream', 'aiokafka'),
    'compression': ('rbfly', 'rstream', 'aiokafka'),
}
SIZES = (10, 1024, 16 * 1024, 512 * 1024)
SIZE_COUNTS = {10: 1_000_000, 1024: 300_000, 16 * 1024: 20_000, 512 * 1024: 600}
FANOUT = (1, 10, 100)
FANOUT_TOTAL = 1_000_000
RATES = (1_000, 10_000, 50_000)
SHARES = (0.5, 0.8)
LATENCY_SECONDS = 10
SLOW_COUNT = 100_000
SLOW_SIZE = 1024
JSON_COUNT = 200_000
SUB_ENTRY = 100
CODECS = (None, 'none', 'gzip', 'zstd', 'lz4', 'snappy')
KAFKA_CODECS = (None, 'gzip', 'snappy', 'lz4', 'zstd')
JAVA_RETENTION = 2_000_000_000
"""Bytes kept of a stream the Java tool publishes to for its 20 s (of big messages: GBs)."""


#
# the workloads
#

def count_of(bench: Bench, full: int) -> int:
    return max(10, full // 100) if bench.quick else full


async def run_sizes(bench: Bench, impls: Sequence[str]) -> None:
    """
    Per size, rbfly publishes the stream every client then reads (chunks
    are the unit of delivery, and each publisher makes its own: reading one
    stream compares the readers alone); each other client publishes to a
    stream of its own. Kafka's client works on its own topic.
    """
    for size in SIZES:
        count = count_of(bench, SIZE_COUNTS[size])
        publish = '{}/publish'.format(size)
        shared = await bench.stream('sizes', size)
        try:
            await bench.attempt('sizes', publish, 'rbfly', wr.rbfly_publish_sized,
                                bench.url, shared, size, count)
            if bench.results['sizes'][publish]['rbfly']['status'] != 'ok':
                continue
            for impl in impls:
                if impl == 'aiokafka':
                    await kafka_sizes(bench, size, count)
                elif impl == 'java':
                    await java_sizes(bench, size, count, shared)
                else:
                    await sizes_of(bench, impl, size, count, shared)
        finally:
            await bench.delete(shared)


async def sizes_of(bench: Bench, impl: str, size: int, count: int, shared: str) -> None:
    """rbfly, RbFly 0.10 or rstream: publish to a stream of its own, read the shared one."""
    publish, consume = '{}/publish'.format(size), '{}/consume'.format(size)
    funcs: dict[str, tuple[Callable[..., Awaitable[JsonDict]], ...]] = {
        'rbfly': (wr.rbfly_publish_sized, wr.rbfly_consume_sized),
        'rstream': (ws.rstream_publish_sized, ws.rstream_consume_sized),
    }
    if impl != 'rbfly':
        own = await bench.stream('sizes', size, impl)
        try:
            if impl == BASELINE:
                await bench.attempt('sizes', publish, impl, bench.child,
                                    'publish', own, size, count)
            else:
                await bench.attempt('sizes', publish, impl, funcs[impl][0],
                                    bench.url, own, size, count)
        finally:
            await bench.delete(own)
    if impl == BASELINE:
        await bench.attempt('sizes', consume, impl, bench.child, 'consume', shared, size, count)
    else:
        await bench.attempt('sizes', consume, impl, funcs[impl][1],
                            bench.url, shared, size, count)


async def kafka_sizes(bench: Bench, size: int, count: int) -> None:
    topic = await bench.topic('sizes', size)
    try:
        await bench.attempt('sizes', '{}/publish'.format(size), 'aiokafka',
                            wk.aiokafka_publish_sized, bench.kafka, topic, size, count)
        await bench.attempt('sizes', '{}/consume'.format(size), 'aiokafka',
                            wk.aiokafka_consume_sized, bench.kafka, topic, size, count)
    finally:
        await bench.delete_topics(topic)


async def java_sizes(bench: Bench, size: int, count: int, shared: str) -> None:
    """
    The tool publishes a stream of its own with ``--size`` (its steady
    state); the harness reads the shared stream from the first offset, as
    the Python clients do, timed from the subscription to the last message
    (the tool reads by time: the shared stream is read before its steady
    state begins).
    """
    from perf.common import tool as _tool
    stream = await bench.stream('sizes', size, 'java', max_length_bytes=JAVA_RETENTION)

    async def sized(args: list[str], streams: list[str]) -> JsonDict:
        result = await bench.java(args, streams)
        result['size'] = size
        result['mb_per_s'] = result['rate'] * size / w.MB
        return result

    try:
        await bench.attempt('sizes', '{}/publish'.format(size), 'java', sized,
                            ['--producers', '1', '--consumers', '0', '--size', str(size)],
                            [stream])
    finally:
        await asyncio.to_thread(_tool.delete_streams, bench.url, [stream])
    await bench.attempt('sizes', '{}/consume'.format(size), 'java', bench.harness_consume,
                        shared, size, count)


async def run_fanout(bench: Bench, impls: Sequence[str]) -> None:
    total = count_of(bench, FANOUT_TOTAL)
    # --quick (CI) runs 1 and 10 publishers: 100 run the same code, and
    # rstream took 2 of CI's minutes to declare and close 100 producers
    for n in FANOUT[:2] if bench.quick else FANOUT:
        per = max(1, total // n)
        for connections in ('one', 'many'):
            case = '{}/{}'.format(n, connections)
            for impl in impls:
                if impl == 'aiokafka':
                    if connections == 'one':   # a producer multiplexes its topics
                        await kafka_fanout(bench, case, n, per)
                    continue
                streams: list[str] = []
                try:
                    for k in range(n):
                        streams.append(await bench.stream('fan', n, k))
                    if impl == 'rbfly':
                        await bench.attempt('fanout', case, impl, wr.rbfly_fanout,
                                            bench.url, streams, per, connections)
                    elif impl == 'rstream':
                        await bench.attempt('fanout', case, impl, ws.rstream_fanout,
                                            bench.url, streams, per, connections)
                    else:
                        by = str(n) if connections == 'one' else '1'
                        await bench.attempt('fanout', case, impl, bench.java,
                                            ['--producers', str(n), '--consumers', '0',
                                             '--producers-by-connection', by], streams)
                finally:
                    await bench.delete(*streams)


async def kafka_fanout(bench: Bench, case: str, n: int, per: int) -> None:
    topics: list[str] = []
    try:
        for k in range(n):
            topics.append(await bench.topic('fan', n, k))
        await bench.attempt('fanout', case, 'aiokafka', wk.aiokafka_fanout,
                            bench.kafka, topics, per)
    finally:
        await bench.delete_topics(*topics)


def latency_rates(bench: Bench, impl: str) -> list[tuple[str, float]]:
    rates = [(str(r), float(r)) for r in RATES]
    top = bench.results.get('sizes', {}).get('10/publish', {}).get(impl, {})
    if top.get('status') == 'ok' and top.get('rate'):
        rates.extend(('{:.0%} of max'.format(s), s * top['rate']) for s in SHARES)
    return rates


async def run_latency(bench: Bench, impls: Sequence[str]) -> None:
    seconds = 1 if bench.quick else LATENCY_SECONDS
    for impl in impls:
        for case, rate in latency_rates(bench, impl):
            count = int(rate * seconds)
            if impl == NULL:
                await bench.attempt('latency', case, impl, w.null_latency, rate, count)
                continue
            if impl == 'aiokafka':
                topic = await bench.topic('lat', int(rate))
                try:
                    await bench.attempt('latency', case, impl, wk.aiokafka_latency,
                                        bench.kafka, topic, rate, count)
                finally:
                    await bench.delete_topics(topic)
                continue
            stream = await bench.stream('lat', int(rate), impl)
            try:
                if impl == 'rbfly':
                    await bench.attempt('latency', case, impl, wr.rbfly_latency,
                                        bench.url, stream, rate, count)
                    await rbfly_lingering(bench, case, rate, count)
                elif impl == 'rstream':
                    await bench.attempt('latency', case, impl, ws.rstream_latency,
                                        bench.url, stream, rate, count)
                else:
                    await java_latency(bench, case, rate, stream)
            finally:
                await bench.delete(stream)


RBFLY_LINGER = 'rbfly-linger1'
"""rbfly's pipelined publisher with a linger of 1 ms, beside the Java client's 1 ms batches."""


async def rbfly_lingering(bench: Bench, case: str, rate: float, count: int) -> None:
    stream = await bench.stream('lat', int(rate), 'linger')
    try:
        await bench.attempt('latency', case, RBFLY_LINGER, wr.rbfly_latency,
                            bench.url, stream, rate, count, 0.001)
    finally:
        await bench.delete(stream)


JAVA_LOW_DELAY = 'java-bpd1'
"""The Java client with a batch publishing delay of 1 ms instead of its 100 ms."""


async def java_latency(bench: Bench, case: str, rate: float, stream: str) -> None:
    """
    The tool at a fixed rate with a consumer: its defaults (a batch goes
    out when full, 100 messages, or after 100 ms), and a line with 1 ms
    between batches, what a Java user tuning for latency sets.
    """
    from perf.common import tool as _tool
    args = ['--producers', '1', '--consumers', '1', '--rate', str(int(rate)),
            '--confirm-latency']
    await bench.attempt('latency', case, 'java', bench.java, args, [stream])
    other = await bench.stream('lat', int(rate), 'java', 'bpd1')
    try:
        await bench.attempt('latency', case, JAVA_LOW_DELAY, bench.java,
                            [*args, '--batch-publishing-delay', '1'], [other])
    finally:
        await asyncio.to_thread(_tool.delete_streams, bench.url, [other])


async def run_slow(bench: Bench, impls: Sequence[str]) -> None:
    count = count_of(bench, SLOW_COUNT)
    stream = await bench.stream('slow')
    try:
        filled = await wr.rbfly_publish_sized(bench.url, stream, SLOW_SIZE, count)
        log('slow: {} filled ({:,.0f} msg/s)'.format(stream, filled['rate']))
        case = '{}us'.format(int(WORK_US))
        for impl in impls:
            if impl == 'rbfly':
                await bench.attempt('slow', case, impl, wr.rbfly_slow,
                                    bench.url, stream, SLOW_SIZE, count, WORK_US)
            elif impl == BASELINE:
                await bench.attempt('slow', case, impl, bench.child,
                                    'slow', stream, SLOW_SIZE, count)
            elif impl == 'rstream':
                await bench.attempt('slow', case, impl, ws.rstream_slow,
                                    bench.url, stream, SLOW_SIZE, count, WORK_US)
            else:
                topic = await bench.topic('slow')
                try:
                    await wk.aiokafka_publish_sized(bench.kafka, topic, SLOW_SIZE, count)
                    await bench.attempt('slow', case, impl, wk.aiokafka_slow,
                                        bench.kafka, topic, SLOW_SIZE, count, WORK_US)
                finally:
                    await bench.delete_topics(topic)
    finally:
        await bench.delete(stream)


async def run_compression(bench: Bench, impls: Sequence[str]) -> None:
    bodies = w.json_bodies(count_of(bench, JSON_COUNT))
    for impl in impls:
        if impl == 'aiokafka':
            # Kafka compresses its own record batches: its cases are its codecs
            for codec in KAFKA_CODECS:
                topic = await bench.topic('zip', codec or 'plain')
                try:
                    await bench.attempt('compression', codec or 'plain', impl,
                                        wk.aiokafka_compression, bench.kafka, topic, bodies,
                                        codec, SUB_ENTRY)
                finally:
                    await bench.delete_topics(topic)
            continue
        fn = wr.rbfly_compression if impl == 'rbfly' else ws.rstream_compression
        for codec in CODECS:
            case = 'plain' if codec is None else 'batches' if codec == 'none' else codec
            stream = await bench.stream('zip', codec or 'plain', impl)
            try:
                await bench.attempt('compression', case, impl, fn,
                                    bench.url, stream, bodies, codec, SUB_ENTRY)
            finally:
                await bench.delete(stream)


RUNNERS: dict[str, Callable[[Bench, Sequence[str]], Awaitable[None]]] = {
    'sizes': run_sizes, 'fanout': run_fanout, 'latency': run_latency,
    'slow': run_slow, 'compression': run_compression,
}


#
# command line
#

def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = cli.parser('workloads', 'The workloads users run, against the peers')
    parser.add_argument('--workloads', nargs='+', choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument('--impl', nargs='+', choices=IMPLS, default=list(IMPLS))
    parser.add_argument(
        '--quick', action='store_true', help='small counts, fanout of 1 and 10 publishers (CI)',
    )
    cli.add_url(parser)
    parser.add_argument('--kafka', default='127.0.0.1:9092')
    cli.add_loop(parser)
    cli.add_json(parser)
    parser.add_argument(
        '--strict', action='store_true',
        help='exit 2 when any client fails a run (default: only when rbfly does)',
    )
    # a child run of RbFly 0.10 (run_child)
    cli.add_child(parser)
    parser.add_argument('--child-op', choices=('publish', 'consume', 'slow'),
                        help=argparse.SUPPRESS)
    parser.add_argument('--size', type=int, help=argparse.SUPPRESS)
    parser.add_argument('--count', type=int, help=argparse.SUPPRESS)
    parser.add_argument('--work-us', type=float, default=WORK_US, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child and not (args.child_op and args.stream and args.size and args.count
                           and args.json):
        parser.error('--child needs --child-op, --stream, --size, --count and --json')
    return args


def child(args: argparse.Namespace) -> cli.ChildRun:
    """One run of the importable rbfly (RbFly 0.10's venv); the parent reads the JSON."""
    ops: dict[str, cli.ChildRun] = {
        'publish': lambda: wr.rbfly_publish_sized(args.url, args.stream, args.size, args.count),
        'consume': lambda: wr.rbfly_consume_sized(args.url, args.stream, args.size, args.count),
        'slow': lambda: wr.rbfly_slow(args.url, args.stream, args.size, args.count, args.work_us),
    }
    return ops[args.child_op]


async def kafka_reason(bootstrap: str) -> str | None:
    from perf.common.kafka import kafka_available
    reason: str | None = await kafka_available(bootstrap)
    return reason


async def run(bench: Bench) -> None:
    args = bench.args
    impls = list(args.impl)
    if 'aiokafka' in impls:
        reason = await kafka_reason(bench.kafka)
        if reason is not None:
            log('aiokafka: skipped: {}'.format(reason))
            impls.remove('aiokafka')
    for workload in args.workloads:
        chosen = [i for i in impls if i in SUPPORTED[workload]]
        log('== {}: {}'.format(workload, ', '.join(chosen)))
        try:
            await RUNNERS[workload](bench, chosen)
        except Exception as ex:   # noqa: BLE001 (the other workloads still run, the JSON is written)
            bench.record(workload, 'set-up', 'rbfly', {
                'status': 'error', 'error': '{}: {}'.format(type(ex).__name__, ex)[:500],
            })


def run_workloads(args: argparse.Namespace) -> cli.Outcome:
    bench = Bench(args)
    broker = run_async(lambda: broker_info(args.url), 'asyncio')
    find_broker(args.url)
    log_broker(broker)
    try:
        run_async(lambda: run(bench), args.loop)
    except KeyboardInterrupt:
        log('interrupted: the results so far follow')

    def document() -> JsonDict:
        env = env_metadata()
        env['broker'] = broker
        env['loop'] = loop_info(args.loop)
        return {
            'benchmark': 'workloads',
            'params': {
                'quick': args.quick, 'rounds': 1, 'url': redact_url(args.url),
                'kafka': args.kafka, 'workloads': args.workloads, 'impl': args.impl,
                'work_us': WORK_US, 'sub_entry': SUB_ENTRY,
                'tool_seconds': 4 if args.quick else TOOL_SECONDS,
            },
            'env': env, 'results': bench.results,
        }

    outcome = cli.Outcome(tables(bench.results), cli.json_documents(args.json, document))
    errors = [
        (wl, case, impl) for wl, cases in bench.results.items()
        for case, impls in cases.items() for impl, r in impls.items()
        if r.get('status') == 'error' or (impl == 'rbfly' and r.get('status') != 'ok')
    ]
    if not args.strict:
        errors = [e for e in errors if e[2] == 'rbfly']
    if errors:
        return replace(outcome, status=EXIT_VERIFY, failure='failed: {}'.format(errors))
    return outcome if bench.results else replace(outcome, status=EXIT_USAGE)


BENCHMARK = cli.Benchmark(parse_args, run_workloads, child)
