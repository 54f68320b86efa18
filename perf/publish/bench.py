"""
Publishing benchmark (sections 1 and 2 of the RbFly 0.10 performance
report, and pipelined publishing).

Scenarios (``--scenario``):

``single``
    Publish 50,000 messages one at a time, awaiting the broker's
    confirmation of each (rbfly ``Publisher.send``, rstream
    ``Producer.send_wait``, aiokafka ``send_and_wait``).  The latency of
    every ``send`` is recorded (p50, p95, p99).
``batch``
    Publish 1,000,000 messages in batches of 100, awaiting the confirmation
    of each batch (rbfly ``PublisherBatchFast``: ``batch`` x 100, ``await
    flush()``; rstream ``send_batch`` with a confirmation callback, the
    batch awaited until all its messages are confirmed; aiokafka
    ``send_batch`` of a ``create_batch()`` batch).  The latency of every
    batch is recorded.
``pipelined``
    Publish 1,000,000 messages without waiting for each confirmation, then
    wait for all of them (rbfly ``PublisherPipelined``: ``await send(m)``
    for each, ``await flush()``, at most ``--window`` unconfirmed; rstream
    ``send`` with a confirmation callback; aiokafka ``send``, then
    ``flush``).

Messages (``--format``): message ``i`` is the string ``'{:010d}'.format(i)``
sent as an AMQP 1.0 message (``amqp``: an amqp-value string section,
rstream ``AMQPMessage(value=...)``, the same bytes) or as the 10 byte
binary string ``'{:010d}'.format(i).encode()`` (``binary``: rbfly
``PublisherBin``/``PublisherBinBatch``, rstream raw ``bytes``).  aiokafka
sends ``msgpack.packb('{:010d}'.format(i))`` and runs with ``--format amqp``
only, as in section 1 of the report.

Implementations (``--impl``):

``rbfly``
    The rbfly importable by this interpreter (the work tree, once installed
    with ``pip install -e .``); runs in this process, or in a child process
    per round with ``--isolate``.
``rbfly-0.10``
    RbFly 0.10.0 in ``perf/.venv-rbfly010`` (created on first use, with
    uvloop); every round runs this benchmark there as a child process with
    ``--impl rbfly --child``.  RbFly 0.10 has no pipelined publisher.
``rstream``
    rstream's ``Producer`` (connects before the timing; the publisher is
    declared by its first send, which is timed).
``rbfly-subentry``
    rbfly sending each batch of 100 as one sub-entry batch (batch:
    ``PublisherBatchFast(sub_entry_size=100)``; pipelined: a
    ``SubEntryBatch`` of 100 per ``send``): one entry and one publishing id
    per 100 messages, consumers read them one by one. Not run for single
    messages. A separate line, never counted as plain ``rbfly``.
``rbfly-anonymous``
    rbfly with ``dedup=False``: the publisher is declared without a name,
    so the broker keeps no publishing id sequence for it (plain ``rbfly``
    gets a generated name and deduplicates, as RbFly 0.10's default name
    does; the ceiling and the other clients' publishers are anonymous).
    Batches and pipelined only. A separate line.
``rbfly-spin``
    rbfly with ``streams_client(spin=0.0005)``: while it awaits a
    confirmation right after the last one, the client polls the event loop
    for up to 0.5 ms instead of sleeping (busy-waiting). Single messages
    only; a separate line with its own CPU cost, never the headline
    (rbfly's default is no spin).
``rbfly-many``
    rbfly's bulk API: the batch scenario's batches of 100 through
    ``Publisher.send_many`` (one await, confirmed; ``PublisherBin`` for
    binary), the pipelined scenario's messages through
    ``PublisherPipelined.send_many`` in lists of 1,000 (made in the
    timing), then ``flush()``. Not run for single messages. A separate
    line; ``rbfly-many-anonymous`` the same with ``dedup=False`` (as the
    Java client's publishers, anonymous).
``aiokafka``
    ``AIOKafkaProducer`` with ``acks='all'`` (see ``scripts/kafka.sh``),
    one topic with one partition per round; skipped when no Kafka broker
    answers at ``--kafka``.
``java``
    The official Java stream client (``com.rabbitmq:stream-client``) in
    rbfly's harness ``perf/java/StreamPerf.java``: every round runs
    ``scripts/java-perf.sh --scenario S --format F --count N --rounds 1
    --stream NAME`` as a child process (a JVM of its own, see
    ``perf.java_client``), which publishes to the stream created here, checked
    and deleted here as every other one (the Java client sends an AMQP
    message as a data section: the last body is checked as bytes).  Each
    JVM starts cold, so the harness first runs an untimed warm-up of 10% of
    the messages to one stream of its own, then the timed run; its CPU
    time is the JVM's (all threads).  Part of the default implementations
    only when java, javac and mvn are installed; skipped when the harness
    cannot be built (``scripts/java-perf.sh --prepare``).
``java-named``
    ``java`` with named producers (``ProducerBuilder.name``): the broker
    deduplicates their messages by publishing id, as it does for plain
    ``rbfly`` (named by default); ``java``, as the Java client's producers by
    default, and ``rbfly-anonymous`` are not. A named publisher costs the
    broker's stream writer a check and a tracking update a message.
``ceiling``
    not a client: the broker's ceiling. A minimal publisher written from the
    protocol specification (``perf/common/raw.py``) whose Publish frames are all
    built before the timing (one message each for ``single``, 100 for
    ``batch``, the same AMQP bytes as rbfly's), each confirmation awaited
    asleep (the event loop blocks until the socket is readable): the
    broker's pace for a client that costs it next to no CPU.  For pipelined
    publishing, in rbfly's shape: frames of 1,000 messages sent while at
    most ``--window`` (10,000) messages wait for confirmation.
``ceiling-polling``
    the same publisher polling the event loop while it waits (a busy
    core): it sees a confirmation as soon as it comes, but on a machine
    of two cores it takes CPU the broker needs.  The report gives every
    implementation's share of the better of the two ceilings in the run
    (``of ceiling``).

Every round of every implementation publishes to a fresh stream (topic),
which is checked afterwards (its last message must be message ``count -
1`` at offset ``count - 1``, so nothing is missing or repeated) and
deleted.  Rounds are interleaved: round ``i`` runs every implementation
once, starting with a different one each round, so slow and fast periods of
a shared machine hit all implementations alike.  The time of a run is from
the first message to the last confirmation; connecting and declaring the
publisher are not timed.  For every run the client's CPU time
(``time.process_time`` of its process) and the CPU use of the whole machine
(``/proc/stat``) are recorded too: a client using far less CPU than the wall
time waits on the broker.

Examples::

    python -m perf.publish --quick
    python -m perf.publish --scenario batch --rounds 5 --json perf/results/publish.json
    python -m perf.publish --format amqp binary --impl rbfly rbfly-0.10   # section 2
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from perf.common import cli
from perf.common.errors import SkipImplementation
from perf.common.java import default_implementations
from perf.common.kafka import kafka_available
from perf.common.results import (
    CEILINGS,
    JsonDict,
    log,
)
from perf.common.scenarios import (
    BATCH_SIZE,
    FORMATS,
    PUBLISH_COUNTS,
    PUBLISH_QUICK_COUNTS,
    PUBLISH_SCENARIOS,
    Case,
)
from perf.common.streams import (
    BASELINE,
    broker_info,
    endpoint,
    load_average,
    log_broker,
    redact_url,
    rotated,
    run_line,
    summarise,
)
from perf.common.wire import FrameCounter
from perf.publish.java import JavaStreamAdmin
from perf.publish.publishers import (
    StreamAdmin,
    publish_rbfly,
)
from perf.publish.report import report, targets
from perf.publish.runners import Runner, make_runner

KIND = 'publish'
IMPLEMENTATIONS = (
    'rbfly', BASELINE, 'rstream', 'aiokafka', 'rbfly-subentry', 'rbfly-anonymous', 'rbfly-spin',
    'rbfly-many', 'rbfly-many-anonymous', 'java', 'java-named',
    *CEILINGS,
)
SCENARIOS = PUBLISH_SCENARIOS
COUNTS = PUBLISH_COUNTS
QUICK_COUNTS = PUBLISH_QUICK_COUNTS
DEFAULT_KAFKA = '127.0.0.1:9092'


#
# the benchmark
#

def cases(args: argparse.Namespace) -> list[Case]:
    result = []
    for scenario in args.scenario:
        count = args.count or (QUICK_COUNTS if args.quick else COUNTS)[scenario]
        window = args.window if scenario == 'pipelined' else None
        for fmt in args.format:
            result.append(Case(scenario, fmt, count, window=window))
    return result


async def run_one(
        runner: Runner, case: Case, frames: FrameCounter | None = None, chunks: bool = False,
) -> JsonDict:
    """
    One run to a fresh stream (topic), checked and deleted; with
    ``frames``, the run went through that proxy, and its counts of the
    stream's publishing frames are added (``frames``, ``msg_per_frame``);
    with ``chunks``, the stream is read back and its chunks counted
    (``chunks``, ``msg_per_chunk``; streams only).
    """
    target = await runner.admin.create(case, runner.name)
    try:
        result = await runner.run(case, target)
        await runner.admin.check(target, case, runner.name)
        if frames is not None:
            counts = frames.take(target).as_json()
            if counts['publish_frames']:
                result['frames'] = counts
                result['msg_per_frame'] = counts['msg_per_frame']
            else:  # its connections did not go through the proxy (aiokafka, rstream's leader)
                log('{}: no frames through the proxy, not counted'.format(runner.name))
        if chunks and isinstance(runner.admin, StreamAdmin | JavaStreamAdmin):
            n, messages = await stream_chunks(args_url(runner.admin), target)
            result['chunks'] = n
            result['msg_per_chunk'] = messages / n if n else 0
    finally:
        await runner.admin.delete(target)
    return result


def args_url(admin: StreamAdmin | JavaStreamAdmin) -> str:
    return admin.admin.url if isinstance(admin, JavaStreamAdmin) else admin.url


async def stream_chunks(url: str, stream: str) -> tuple[int, int]:
    """
    Chunks and messages of a stream, read from its first offset (the
    broker's chunks as they were written: a chunk per batch of the
    stream's writer).
    """
    from rbfly.streams import Offset, streams_client

    client = streams_client(url)
    chunks = messages = 0
    try:
        async for chunk in client.subscribe_chunks(
                stream, offset=Offset.FIRST, amqp=False, timeout=30, stop_at_end=True):
            chunks += 1
            messages += len(chunk)
    finally:
        await client.disconnect()
    return chunks, messages


def collect(
        args: argparse.Namespace, all_cases: list[Case], runners: list[Runner],
        skipped: dict[str, str], runs: dict[str, dict[str, list[JsonDict]]],
) -> dict[str, JsonDict]:
    """The results of every case: per implementation, its medians and runs (or why skipped)."""
    results: dict[str, JsonDict] = {}
    for case in all_cases:
        per_impl: JsonDict = {}
        for name in args.impl:
            runner_obj = next((r for r in runners if r.name == name), None)
            if name in skipped or runner_obj is None:
                per_impl[name] = {'status': 'skipped', 'reason': skipped.get(name, '')}
                continue
            reason = runner_obj.unsupported(case)
            if reason is not None:
                per_impl[name] = {'status': 'skipped', 'reason': reason}
                continue
            per_impl[name] = {
                'status': 'ok',
                **runner_obj.info(),
                **summarise(runs[case.key][name]),
                'runs': runs[case.key][name],
            }
        results[case.key] = {
            'scenario': case.scenario, 'format': case.fmt, 'count': case.count,
            'batch': case.batch if case.scenario == 'batch' else None,
            'window': case.window, 'implementations': per_impl,
        }
    return results


async def frame_proxy(
        args: argparse.Namespace,
) -> tuple[FrameCounter | None, argparse.Namespace]:
    """
    With ``--frames``, a proxy counting frames, started, and the arguments
    of the runners: the broker URL through it, and ``via``, its address
    (for the Java harness, whose connections would go past it to the
    broker's advertised address); else none, and the arguments as they are.
    """
    if not args.frames:
        return None, args
    ep = endpoint(args.url)
    frames = FrameCounter(ep.host, ep.port)
    await frames.start()
    via = '127.0.0.1:{}'.format(frames.port)
    parts = urlsplit(args.url)
    netloc = parts.netloc.rsplit('@', 1)
    netloc[-1] = via
    run_args = argparse.Namespace(**vars(args))
    run_args.url = urlunsplit(parts._replace(netloc='@'.join(netloc)))
    run_args.via = via
    log('frames counted through a proxy at {} (rates are lower through it)'.format(via))
    return frames, run_args


async def benchmark(args: argparse.Namespace) -> JsonDict:
    admin = StreamAdmin(args.url)
    broker = await broker_info(args.url)
    log_broker(broker)
    runners: list[Runner] = []
    skipped: dict[str, str] = {}
    frames, run_args = await frame_proxy(args)
    for name in args.impl:
        try:
            if name == 'aiokafka':
                reason = await kafka_available(args.kafka)
                if reason is not None:
                    raise SkipImplementation(reason)
            runners.append(make_runner(name, run_args, admin))
        except SkipImplementation as ex:
            log('{}: skipped: {}'.format(name, ex))
            skipped[name] = str(ex)

    all_cases = cases(args)
    runs: dict[str, dict[str, list[JsonDict]]] = {c.key: {} for c in all_cases}
    load_before = load_average()
    try:
        for case in all_cases if args.warmup else []:
            for runner in runners:
                if runner.unsupported(case) is None:
                    warm = replace(case, count=max(1, case.count * args.warmup // 100))
                    result = await run_one(runner, warm, frames, args.chunks)
                    log('warm-up {:<15} {:<10} {}'.format(case.key, runner.name, run_line(result)))
        for i in range(args.rounds):
            for case in all_cases:
                for runner in rotated(runners, i):
                    if runner.unsupported(case) is not None:
                        continue
                    result = await run_one(runner, case, frames, args.chunks)
                    runs[case.key].setdefault(runner.name, []).append(result)
                    log('round {}/{} {:<15} {:<10} {}'.format(
                        i + 1, args.rounds, case.key, runner.name, run_line(result),
                    ))
    finally:
        await admin.close()
        if frames is not None:
            await frames.close()

    results = collect(args, all_cases, runners, skipped, runs)
    return {
        'broker': broker,
        'results': results,
        'load_average': {'before': load_before, 'after': load_average()},
    }


#
# report
#

def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = cli.parser(
        'publish',
        'Publishing benchmark: RbFly, RbFly 0.10, rstream, aiokafka, the Java stream client',
        epilog='Progress goes to stderr, the result table to stdout.',
    )
    parser.add_argument(
        '--scenario', nargs='+', choices=SCENARIOS, default=list(SCENARIOS),
        help='scenarios to run (default: all)',
    )
    parser.add_argument(
        '--format', nargs='+', choices=FORMATS, default=['amqp'],
        help='message formats (default: amqp; "amqp binary" compares them, report section 2)',
    )
    parser.add_argument(
        '--impl', nargs='+', choices=IMPLEMENTATIONS, metavar='NAME',
        help='implementations, of {} (default: all; java only when java, javac and mvn'
             ' are installed)'.format(', '.join(IMPLEMENTATIONS)),
    )
    parser.add_argument(
        '--count', type=int,
        help='messages per run, for every scenario (default: single {single:,},'
             ' batch {batch:,}, pipelined {pipelined:,})'.format(**COUNTS),
    )
    parser.add_argument(
        '--rounds', type=int, default=5,
        help='rounds; medians are reported (default: %(default)s; the 0.10 report used 100)',
    )
    parser.add_argument(
        '--warmup', type=int, default=10, metavar='PERCENT',
        help='before the rounds, an untimed run of every implementation and case with'
             ' PERCENT of the messages (default: %(default)s; 0 with --quick)',
    )
    parser.add_argument(
        '--window', type=int,
        help='unconfirmed messages a pipelined publisher allows (default: the library default)',
    )
    parser.add_argument(
        '--quick', action='store_true',
        help='small counts ({single:,} / {batch:,} / {pipelined:,}) and 1 round,'
             ' to check that the script works (CI)'.format(**QUICK_COUNTS),
    )
    cli.add_loop(parser)
    cli.add_url(parser)
    parser.add_argument(
        '--kafka', default=os.environ.get('RBFLY_KAFKA') or DEFAULT_KAFKA,
        help='Kafka bootstrap server for aiokafka (default: $RBFLY_KAFKA or'
             ' {}; scripts/kafka.sh start runs one)'.format(DEFAULT_KAFKA),
    )
    parser.add_argument(
        '--isolate', action='store_true',
        help='run rbfly in a child process per round too, as rbfly-0.10 is',
    )
    parser.add_argument(
        '--profile', type=Path, metavar='DIR',
        help='profile the in-process runs with cProfile, writing DIR/*.pstats'
             ' (timings are distorted)',
    )
    parser.add_argument(
        '--frames', action='store_true',
        help='run every client through a proxy counting its Publish and PublishConfirm'
             ' frames (messages a frame; rates are lower through the proxy)',
    )
    parser.add_argument(
        '--chunks', action='store_true',
        help='after each run, read the stream back and count its chunks (messages a'
             ' chunk, as the broker\'s writer batched them; not timed)',
    )
    cli.add_json(parser)
    # child mode: one run of --impl rbfly to --stream, result as JSON
    cli.add_child(parser)

    args = parser.parse_args(argv)
    if args.quick:
        args.rounds = 1
        args.warmup = 0
    if args.rounds < 1 or (args.count is not None and args.count < 1):
        parser.error('--rounds and --count must be positive')
    if not 0 <= args.warmup <= 100:
        parser.error('--warmup must be 0..100')
    if args.window is not None and args.window < 1:
        parser.error('--window must be positive')
    args.impl = list(dict.fromkeys(args.impl or default_implementations(IMPLEMENTATIONS)))
    if args.child and (args.impl != ['rbfly'] or not args.stream or not args.json
                       or len(args.scenario) != 1 or len(args.format) != 1
                       or args.count is None):
        parser.error('--child needs --impl rbfly, one --scenario and --format,'
                     ' --count, --stream and --json')
    return args


def child(args: argparse.Namespace) -> cli.ChildRun:
    """One run of the importable rbfly; the parent reads the JSON."""
    case = Case(args.scenario[0], args.format[0], args.count, window=args.window)
    return lambda: publish_rbfly(args.url, args.stream, case)


def run(args: argparse.Namespace) -> cli.Outcome:
    return cli.run_rounds(args, KIND, benchmark, report, targets, {
        'scenarios': args.scenario, 'formats': args.format,
        'rounds': args.rounds, 'quick': args.quick, 'window': args.window,
        'warmup_percent': args.warmup,
        'batch': BATCH_SIZE, 'isolate': args.isolate, 'loop': args.loop,
        'url': redact_url(args.url), 'kafka': args.kafka,
        'frames': args.frames, 'chunks': args.chunks,
        'message': "'{:010d}'.format(i) (amqp: AMQP string; binary: .encode())",
        'schedule': 'rounds interleaved across implementations, rotating the start;'
                    ' fresh stream per run, checked and deleted afterwards',
    })


BENCHMARK = cli.Benchmark(parse_args, run, child, ('rbfly', 'uvloop', 'Cython'))
