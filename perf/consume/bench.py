"""
Consuming benchmark: read a stream of ``--count`` messages (default
1,000,000) from its first offset.

The stream is published once, before the rounds, with the rbfly importable
here; message ``i`` is the AMQP string ``'{:010d}'.format(i)``.  Variants
(``--variant``), which differ in the size of the stream's chunks (the unit
the broker delivers):

``batch``
    published in batches of 100, each awaited (``PublisherBatchFast``):
    chunks of about 100 messages
``pipelined``
    published with ``PublisherPipelined``: much bigger chunks

Implementations (``--impl``), each decoding the AMQP messages:

``rbfly``
    ``async for body in client.subscribe(stream, offset=Offset.FIRST)``
``rbfly-chunks``
    ``async for chunk in client.subscribe_chunks(stream, offset=Offset.FIRST)``
    (a list of decoded messages per chunk; the loop adds ``len(chunk)``)
``rbfly-windows``
    ``async for window in client.subscribe_windows(stream,
    offset=Offset.FIRST, max_messages=1000)`` (lists of at most 1,000
    decoded messages, chunks merged and split; the loop adds
    ``len(window)``)
``rbfly-spin``
    ``async for`` with ``streams_client(spin=0.0005)``: the subscription
    polls the event loop for up to 0.5 ms for the next chunk instead of
    sleeping (busy-waiting; rbfly's default is no spin). A separate line
    with its own CPU cost.
``rbfly-nopause``
    ``async for`` with ``streams_client(read_pause=0)``: the connection
    reads at once, rather than pausing its reads for 1 ms after a read
    that brought a chunk of history (rbfly's default): what the pause
    changes, in the same run.
``rbfly-0.10``
    RbFly 0.10.0's ``async for`` in ``perf/.venv-rbfly010``, this benchmark
    run there as a child process per round (``--impl rbfly --child``)
``rstream``
    rstream's ``Consumer.subscribe(stream, callback,
    decoder=amqp_decoder, offset_specification=FIRST)``
``java``
    the official Java stream client (``com.rabbitmq:stream-client``) in
    rbfly's harness ``perf/java/StreamPerf.java``: every round runs
    ``scripts/java-perf.sh --scenario consume --count N --rounds 1 --stream
    NAME`` as a child process (a JVM of its own, see ``perf.java_client``),
    which reads the same stream as the other implementations from its first
    offset (``consumerBuilder().offset(OffsetSpecification.first())``, a
    message handler counting the messages).  Each JVM starts cold, so the
    harness first reads the first 10% of the messages, untimed, then times
    reading all of them; its CPU time is the JVM's (all threads).  Part of
    the default implementations only when java, javac and mvn are installed;
    skipped when the harness cannot be built (``scripts/java-perf.sh
    --prepare``).
``ceiling``
    not a client: the broker's ceiling. A minimal consumer written from the
    protocol specification (``perf/consume/consumers.py``) that decodes nothing,
    reads only frame lengths and record counts, returns a credit per chunk
    and sleeps while it waits, its reads paused for 1 ms after each (as
    rbfly's ``read_pause`` does with chunks of history).
``ceiling-polling``
    the same consumer keeping the event loop polling (a busy core) and
    reading at once.  The better of the two is the fastest the broker
    delivers the stream to one connection on this machine.  On streams of
    small chunks the broker, not the client, sets the pace; the report
    gives every implementation's share of this ceiling, and says when a
    target asks for more than it.

A run is timed from the subscription request to the last message (the
connection is opened before); the client's CPU time and how busy the
machine was are recorded too.  Every run must see exactly ``--count``
messages, the last one being message ``count - 1`` (at offset ``count -
1`` where the API tells the offset).  Rounds are interleaved across
implementations, starting with a different one each round.

Examples::

    python -m perf.consume --quick
    python -m perf.consume --rounds 5 --json perf/results/consume.json
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from perf.common import cli
from perf.common.errors import SkipImplementation, VerificationError
from perf.common.java import default_implementations
from perf.common.results import (
    JsonDict,
    best_ceiling,
    format_rate,
    format_ratio,
    format_table,
    log,
    ok_rate,
    ratio,
)
from perf.common.scenarios import BATCH_SIZE, CONSUME_COUNT, CONSUME_QUICK_COUNT, CONSUME_VARIANTS
from perf.common.streams import (
    BASELINE,
    LEGEND,
    Stopwatch,
    Target,
    broker_info,
    format_share,
    load_average,
    log_broker,
    message,
    redact_url,
    rotated,
    run_line,
    spread,
    stream_name,
    summarise,
)
from perf.consume.consumers import consume_rbfly
from perf.consume.runners import API, CEILING, CEILING_POLLING, Runner, make_runner

KIND = 'consume'
IMPLEMENTATIONS = (
    'rbfly', 'rbfly-chunks', 'rbfly-windows', 'rbfly-spin', 'rbfly-nopause', BASELINE,
    'rstream', 'java', CEILING,
    CEILING_POLLING,
)
VARIANTS = CONSUME_VARIANTS
COUNT = CONSUME_COUNT
QUICK_COUNT = CONSUME_QUICK_COUNT

# targets of the project, vs RbFly 0.10 in the same run
SUBSCRIBE_RATIO = 2.0   # async for with AMQP decoding (0.10: 507k msg/s measured here)
CHUNKS_RATIO = 4.0

#
# the streams
#

async def publish(url: str, stream: str, variant: str, count: int) -> JsonDict:
    """Create a stream and publish the messages; return chunk statistics."""
    from rbfly.streams import Offset, PublisherBatchFast, PublisherPipelined, streams_client

    client = streams_client(url)
    async with client:
        await client.create_stream(stream, exist_ok=False)
        watch = Stopwatch()
        watch.start()
        if variant == 'batch':
            async with client.publisher(stream, cls=PublisherBatchFast) as p:
                for start in range(0, count, BATCH_SIZE):
                    for i in range(start, min(start + BATCH_SIZE, count)):
                        p.batch(message(i))
                    await p.flush()
        else:
            async with client.publisher(stream, cls=PublisherPipelined) as pp:
                for i in range(count):
                    await pp.send(message(i))
                await pp.flush()
        watch.stop()

        sizes = []
        n = 0
        async for chunk in client.subscribe_chunks(
                stream, offset=Offset.FIRST, amqp=False, timeout=30):
            sizes.append(len(chunk))
            n += len(chunk)
            if n >= count:
                break
    if n != count:
        raise VerificationError('stream {}: {} messages, expected {}'.format(stream, n, count))
    return {
        'stream': stream,
        'publish_rate': count / watch.seconds,
        'chunks': len(sizes),
        'chunk_mean': count / len(sizes),
        'chunk_max': max(sizes),
    }


async def delete_streams(url: str, streams: Sequence[str]) -> None:
    from rbfly.streams import streams_client

    client = streams_client(url)
    async with client:
        for stream in streams:
            await client.delete_stream(stream)


async def benchmark(args: argparse.Namespace) -> JsonDict:
    broker = await broker_info(args.url)
    log_broker(broker)
    runners: list[Runner] = []
    skipped: dict[str, str] = {}
    for name in args.impl:
        try:
            runners.append(make_runner(name, args))
        except SkipImplementation as ex:
            log('{}: skipped: {}'.format(name, ex))
            skipped[name] = str(ex)

    count = args.count or (QUICK_COUNT if args.quick else COUNT)
    streams: dict[str, JsonDict] = {}
    runs: dict[str, dict[str, list[JsonDict]]] = {v: {} for v in args.variant}
    load_before = load_average()
    try:
        for variant in args.variant:
            stream = stream_name('consume', variant)
            streams[variant] = {'stream': stream}
            log('publishing {:,} messages to {} ({})'.format(count, stream, variant))
            streams[variant] = await publish(args.url, stream, variant, count)
            log('  {chunks:,} chunks, {chunk_mean:,.0f} messages per chunk on average,'
                ' at most {chunk_max:,}'.format(**streams[variant]))
        for variant in args.variant if args.warmup else []:
            for runner in runners:
                result = await runner.run(streams[variant]['stream'], count)
                log('warm-up {:<10} {:<13} {}'.format(variant, runner.name, run_line(result)))
        for i in range(args.rounds):
            for variant in args.variant:
                for runner in rotated(runners, i):
                    result = await runner.run(streams[variant]['stream'], count)
                    runs[variant].setdefault(runner.name, []).append(result)
                    log('round {}/{} {:<10} {:<13} {}'.format(
                        i + 1, args.rounds, variant, runner.name, run_line(result),
                    ))
    finally:
        if not args.keep:
            await delete_streams(args.url, [s['stream'] for s in streams.values()])

    results: dict[str, JsonDict] = {}
    for variant in args.variant:
        per_impl: JsonDict = {}
        for name in args.impl:
            found = next((r for r in runners if r.name == name), None)
            if found is None:
                per_impl[name] = {'status': 'skipped', 'reason': skipped.get(name, '')}
                continue
            per_impl[name] = {
                'status': 'ok', **found.info(), 'api': API[name],
                **summarise(runs[variant][name]), 'runs': runs[variant][name],
            }
        results[variant] = {
            'variant': variant, 'count': count, **streams[variant],
            'implementations': per_impl,
        }
    return {
        'broker': broker, 'results': results,
        'load_average': {'before': load_before, 'after': load_average()},
    }


#
# report
#

def report(doc: JsonDict, rounds: int) -> str:
    lines = []
    for variant, res in doc['results'].items():
        impls = res['implementations']
        lines.append(
            'consume {:,} AMQP messages from the first offset; stream published {}'
            ' ({:,} chunks, {:,.0f} messages per chunk); median of {} rounds'.format(
                res['count'],
                'in batches of 100' if variant == 'batch' else 'pipelined',
                res['chunks'], res['chunk_mean'], rounds,
            )
        )
        base = ok_rate(impls.get(BASELINE))
        peer = ok_rate(impls.get('rstream'))
        ceiling = best_ceiling(impls)
        headers = [
            'implementation', 'version', 'msg/s', 'spread', 'CPU us/msg', 'sys', 'client',
            'broker', 'machine', 'vs ' + BASELINE, 'vs rstream', 'of ceiling',
        ]
        rows = []
        for name, r in impls.items():
            if r['status'] != 'ok':
                continue
            rows.append([
                name, str(r['version']), format_rate(r['median_rate']), spread(r),
                '{:.2f}'.format(r['cpu_us_per_msg']), '{:.2f}'.format(r['sys_us_per_msg']),
                format_share(r['cpu_share']),
                format_share(r.get('broker_cpu_share')), format_share(r.get('machine_busy')),
                format_ratio(ratio(r['median_rate'], base)) if name != BASELINE else '',
                format_ratio(ratio(r['median_rate'], peer)) if name != 'rstream' else '',
                format_share(ratio(r['median_rate'], ceiling)),
            ])
        if rows:
            lines.append(format_table(headers, rows))
        for name, r in impls.items():
            if r['status'] != 'ok':
                lines.append('{}: skipped: {}'.format(name, r['reason']))
        lines.append('')
    lines.append(LEGEND)
    return '\n'.join(lines)


def targets(doc: JsonDict) -> list[Target]:
    result = []
    for variant, res in doc['results'].items():
        impls = res['implementations']
        base = ok_rate(impls.get(BASELINE))
        ceiling = best_ceiling(impls)
        note = 'same run; stream published {}'.format(
            'in batches of 100' if variant == 'batch' else 'pipelined',
        )
        for what, impl, goal in (
                ('consume async for', 'rbfly', SUBSCRIBE_RATIO),
                ('consume chunks', 'rbfly-chunks', CHUNKS_RATIO)):
            value = ratio(ok_rate(impls.get(impl)), base)
            result.append(Target(
                '{} ({}), {} / {}'.format(what, variant, impl, BASELINE), goal, 'x', value,
                note + ceiling_note(goal, value, base, ok_rate(impls.get(impl)), ceiling),
            ))
    return result


def ceiling_note(
        goal: float, value: float | None, base: float | None, rate: float | None,
        ceiling: float | None,
) -> str:
    """
    When a ratio target is not met and the rate it asks for is above what
    the broker delivered to the ceiling consumer in the same run, say so.
    """
    if value is None or value >= goal or base is None or rate is None or not ceiling:
        return ''
    if goal * base <= ceiling:
        return ''
    return '; the goal asks for {} msg/s, above the broker\'s ceiling of {} msg/s;' \
        ' measured {} of the ceiling'.format(
            format_rate(goal * base), format_rate(ceiling), format_share(rate / ceiling),
        )


#
# command line
#

def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = cli.parser(
        'consume',
        'Consuming benchmark: RbFly, RbFly chunk API, RbFly 0.10, rstream,'
        ' the Java stream client',
        epilog='Progress goes to stderr, the result table to stdout.',
    )
    parser.add_argument(
        '--count', type=int,
        help='messages in the stream (default: {:,})'.format(COUNT),
    )
    parser.add_argument(
        '--variant', nargs='+', choices=VARIANTS, default=list(VARIANTS),
        help='how the stream is published: in batches of 100 (small chunks) or'
             ' pipelined (big chunks) (default: both)',
    )
    parser.add_argument(
        '--impl', nargs='+', choices=IMPLEMENTATIONS, metavar='NAME',
        help='implementations, of {} (default: all; java only when java, javac and mvn'
             ' are installed)'.format(', '.join(IMPLEMENTATIONS)),
    )
    parser.add_argument(
        '--rounds', type=int, default=5,
        help='rounds; medians are reported (default: %(default)s)',
    )
    parser.add_argument(
        '--no-warmup', dest='warmup', action='store_false',
        help='no untimed run of every implementation before the rounds (always with --quick)',
    )
    parser.add_argument(
        '--quick', action='store_true',
        help='{:,} messages and 1 round, to check that the script works (CI)'.format(
            QUICK_COUNT,
        ),
    )
    cli.add_loop(parser)
    cli.add_url(parser)
    parser.add_argument(
        '--isolate', action='store_true',
        help='run rbfly in a child process per round too, as rbfly-0.10 is',
    )
    parser.add_argument(
        '--keep', action='store_true', help='do not delete the published streams',
    )
    parser.add_argument(
        '--profile', type=Path, metavar='DIR',
        help='profile the in-process runs with cProfile, writing DIR/*.pstats'
             ' (timings are distorted)',
    )
    cli.add_json(parser)
    cli.add_child(parser)

    args = parser.parse_args(argv)
    if args.quick:
        args.rounds = 1
        args.warmup = False
    if args.rounds < 1 or (args.count is not None and args.count < 1):
        parser.error('--rounds and --count must be positive')
    args.impl = list(dict.fromkeys(args.impl or default_implementations(IMPLEMENTATIONS)))
    if args.child and (args.impl not in (['rbfly'], ['rbfly-chunks']) or not args.stream
                       or not args.json or args.count is None):
        parser.error('--child needs --impl rbfly or rbfly-chunks, --count, --stream, --json')
    return args


def child(args: argparse.Namespace) -> cli.ChildRun:
    """One run of the importable rbfly; the parent reads the JSON."""
    chunks = args.impl == ['rbfly-chunks']
    return lambda: consume_rbfly(args.url, args.stream, args.count, chunks)


def run(args: argparse.Namespace) -> cli.Outcome:
    return cli.run_rounds(args, KIND, benchmark, report, targets, {
        'variants': args.variant, 'rounds': args.rounds, 'quick': args.quick,
        'warmup': args.warmup,
        'isolate': args.isolate, 'loop': args.loop, 'url': redact_url(args.url),
        'message': "'{:010d}'.format(i) as an AMQP string",
        'schedule': 'streams published once; rounds interleaved across'
                    ' implementations, rotating the start',
    })


BENCHMARK = cli.Benchmark(parse_args, run, child, ('rbfly', 'uvloop', 'Cython'))
