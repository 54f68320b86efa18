"""
The official Java RabbitMQ stream client (``com.rabbitmq:stream-client``)
on the workloads of ``perf.publish`` and ``perf.consume``, so its
rates can be compared with rbfly's on the same broker.

The measuring is done by rbfly's own harness, ``perf/java/StreamPerf.java``
(its header describes the runs in detail), which ``scripts/java-perf.sh``
builds (resolving the client with Maven into ``perf/.java/``, cached) and
runs in a JVM of its own per scenario.  This script runs it, reads its JSON
and writes results in the schemas of ``perf.publish --json``
(``single``, ``batch``, ``pipelined``: ``results['single/amqp']`` and so
on) and ``perf.consume --json`` (``consume``: ``results['pipelined']``),
with the implementation named ``java``, so ``perf.report.plot`` can merge them with
the Python clients' results.

Separate runs on a shared machine are hardly comparable, though: the
implementation ``java`` of ``perf.publish`` and ``perf.consume``
measures the Java client interleaved with the Python clients, round by
round, with the runners of ``perf/publish/java.py`` and
``perf/consume/java.py`` (``JavaPublishRunner``, ``JavaConsumeRunner``):
every round is a JVM of its own, running
the harness with ``--rounds 1 --stream NAME`` on the stream the benchmark
created (publishing) or published (consuming); the harness warms the JVM up
first (``WARMUP_PERCENT`` of the messages, untimed, publishing to a
fresh stream of its own, or reading the first messages of the stream).

Scenarios (``--scenarios``), messages ``'{:010d}'.format(i)`` as AMQP 1.0
messages (the client's codec, one data section) or binary (``--format
binary``: the 10 bytes as they are, publishing only):

``single``
    send one message, wait for its confirmation (50,000 messages); the
    latency of every message
``batch``
    send 100 messages, wait for their confirmations (1,000,000); the
    latency of every batch
``pipelined``
    send with at most ``--window`` unconfirmed messages (default: the
    client's maxUnconfirmedMessages, 10,000), wait for all confirmations
    at the end (1,000,000)
``consume``
    publish 1,000,000 messages (pipelined, untimed) to a fresh stream, then
    time reading them from the first offset until the last one is seen;
    the result is the ``pipelined`` variant of ``perf.consume`` (the
    stream is published by the Java client, so its chunks differ from
    rbfly's: their sizes are recorded)

Every round uses a fresh stream (created, measured, checked, deleted).
Before the rounds of a scenario the JVM is warmed up with unmeasured runs
of ``--warmup`` percent of the messages (default 10), one after the other
for ``--warmup-seconds`` (default 10; 0 with ``--quick``), so the JIT
compiler has compiled the hot paths.  The client's CPU time is the JVM's (all
threads: Netty, JIT compiler, garbage collector).

Examples::

    python -m perf.java_client --quick
    python -m perf.java_client --scenarios single --count 20000 --rounds 1
    python -m perf.java_client --json perf/results/java-publish.json
        # consume results to perf/results/java-publish-consume.json
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from perf.common import cli
from perf.common.errors import EXIT_USAGE, EXIT_VERIFY, SkipImplementation
from perf.common.java import (
    IMPL,
    SCRIPT,
    TIMEOUT,
    WARMUP_SECONDS,
    HarnessError,
    harness_args,
    java_uri,
)
from perf.common.results import (
    JsonDict,
    env_metadata,
    format_rate,
    format_table,
    log,
    median,
    read_json,
)
from perf.common.scenarios import (
    BATCH_SIZE,
    FORMATS,
    JAVA_SINGLE_RATE,
    PUBLISH_SCENARIOS,
    TITLES,
    all_counts,
)
from perf.common.streams import (
    LEGEND,
    broker_info,
    format_share,
    load_average,
    locate_broker,
    log_broker,
    redact_url,
    run_async,
    spread,
    summarise,
)

SCENARIOS = (*PUBLISH_SCENARIOS, 'consume')
CLIENT_WINDOW = 10_000   # the Java producer's maxUnconfirmedMessages default


def run_harness(
        args: argparse.Namespace, scenario: str, fmt: str, count: int,
        broker_pid: int | None,
) -> JsonDict:
    """Run the harness for one scenario, all rounds in one JVM; its JSON document."""
    with tempfile.TemporaryDirectory(prefix='rbfly-java-') as tmp:
        out = Path(tmp) / 'java.json'
        cmd = harness_args(
            args.url, scenario, fmt, count, rounds=args.rounds, warmup=args.warmup,
            warmup_seconds=args.warmup_seconds, window=args.window, broker_pid=broker_pid,
            json_out=out,
        )
        try:
            # the harness's progress lines and the client's warnings go to stderr
            p = subprocess.run(cmd, stdin=subprocess.DEVNULL, timeout=TIMEOUT, check=False)
        except (OSError, subprocess.TimeoutExpired) as ex:
            raise HarnessError(EXIT_USAGE, 'cannot run {}: {}'.format(SCRIPT, ex)) from ex
        if p.returncode != 0 or not out.exists():
            code = EXIT_VERIFY if p.returncode == EXIT_VERIFY else EXIT_USAGE
            raise HarnessError(code, '{} {} failed (exit {})'.format(
                SCRIPT.name, scenario, p.returncode,
            ))
        return read_json(out)


def implementation(doc: JsonDict) -> JsonDict:
    """The ``implementations['java']`` entry of a harness document."""
    runs: list[JsonDict] = doc['runs']
    return {
        'status': 'ok',
        'version': doc['version'],
        'process': 'jvm',
        'client': doc['client'],
        'api': doc['api'],
        'window': doc['window'],
        'java': doc['java'],
        **summarise(runs),
        'runs': runs,
        'warmup': doc.get('warmup'),
    }


def publish_result(doc: JsonDict, window: int | None) -> JsonDict:
    """A ``results`` entry of the publishing schema (``perf.publish``)."""
    return {
        'scenario': doc['scenario'], 'format': doc['format'], 'count': doc['count'],
        'batch': doc['batch'], 'window': window,
        'implementations': {IMPL: implementation(doc)},
    }


def consume_result(doc: JsonDict) -> JsonDict:
    """
    The ``results['pipelined']`` entry of the consuming schema
    (``perf.consume``).  Each round publishes its own stream, so the
    stream figures are medians of the rounds (``chunk_max`` the largest).
    """
    runs: list[JsonDict] = doc['runs']
    chunks = median([r['chunks'] for r in runs])
    return {
        'variant': 'pipelined',
        'count': doc['count'],
        'stream': runs[0]['stream'],
        'publisher': '{} {} (pipelined, window {:,})'.format(IMPL, doc['version'], doc['window']),
        'publish_rate': median([r['publish_rate'] for r in runs]),
        'chunks': chunks,
        'chunk_mean': doc['count'] / chunks,
        'chunk_max': max(r['chunk_max'] for r in runs),
        'implementations': {IMPL: implementation(doc)},
    }


#
# report
#

def _lat(entry: JsonDict, key: str) -> str:
    value = (entry.get('latency') or {}).get(key)
    return '-' if value is None else '{:,.0f}'.format(value)


def report(publish: JsonDict, consume: JsonDict, rounds: int) -> str:
    headers = [
        'scenario', 'count', 'msg/s', 'spread', 'CPU us/msg', 'sys', 'client', 'broker',
        'machine', 'p50 us', 'p95 us', 'p99 us',
    ]
    rows = []
    version = None
    for key, res in [*publish.items(), *(('consume', r) for r in consume.values())]:
        r = res['implementations'][IMPL]
        version = r['version']
        rows.append([
            key, '{:,}'.format(res['count']), format_rate(r['median_rate']), spread(r),
            '{:.2f}'.format(r['cpu_us_per_msg']), '{:.2f}'.format(r['sys_us_per_msg']),
            format_share(r['cpu_share']), format_share(r.get('broker_cpu_share')),
            format_share(r.get('machine_busy')),
            _lat(r, 'p50_us'), _lat(r, 'p95_us'), _lat(r, 'p99_us'),
        ])
    lines = ['Java stream client {}, median of {} rounds'.format(version, rounds)]
    lines.append(format_table(headers, rows))
    for key, res in publish.items():
        lines.append('  {}: {}'.format(key, TITLES[res['scenario']].format(batch=res['batch'])))
    for res in consume.values():
        lines.append(
            '  consume: from the first offset, stream published by the Java client'
            ' ({:,.0f} chunks, {:,.0f} messages per chunk, at most {:,})'.format(
                res['chunks'], res['chunk_mean'], res['chunk_max'],
            )
        )
    single = publish.get('single/amqp')
    if single:
        lines.append(
            '  single/amqp: {} msg/s; the rbfly target, {:,} msg/s, is the'
            ' stream-perf-test tool\'s figure'.format(
                format_rate(single['implementations'][IMPL]['median_rate']), JAVA_SINGLE_RATE,
            )
        )
    lines.append(LEGEND + '; latency of each message (single) or batch (batch)')
    return '\n'.join(lines)


#
# command line
#

def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    counts, quick_counts = all_counts(False), all_counts(True)
    parser = cli.parser(
        'java_client', 'The Java RabbitMQ stream client on the rbfly benchmark workloads',
        epilog='Progress goes to stderr, the result table to stdout.',
    )
    parser.add_argument(
        '--scenarios', '--scenario', nargs='+', choices=SCENARIOS, default=list(SCENARIOS),
        help='scenarios to run (default: all)',
    )
    parser.add_argument(
        '--format', nargs='+', choices=FORMATS, default=['amqp'],
        help='message formats of the publishing scenarios (default: amqp;'
             ' consume is always AMQP)',
    )
    parser.add_argument(
        '--count', type=int,
        help='messages per run, for every scenario (default: single {single:,},'
             ' batch {batch:,}, pipelined {pipelined:,}, consume {consume:,})'.format(**counts),
    )
    parser.add_argument(
        '--rounds', type=int, default=5,
        help='rounds; medians are reported (default: %(default)s)',
    )
    parser.add_argument(
        '--warmup', type=int, default=10, metavar='PERCENT',
        help='before the rounds of a scenario, an unmeasured run with PERCENT of the'
             ' messages warms the JVM up (default: %(default)s, --quick too)',
    )
    parser.add_argument(
        '--warmup-seconds', type=float, default=WARMUP_SECONDS, metavar='S',
        help='repeat the warm-up runs for S seconds (default: %(default)s; 0 with --quick)',
    )
    parser.add_argument(
        '--window', type=int,
        help='unconfirmed messages of pipelined publishing (default: the client\'s'
             ' maxUnconfirmedMessages, {:,})'.format(CLIENT_WINDOW),
    )
    parser.add_argument(
        '--quick', action='store_true',
        help='small counts ({single:,} / {batch:,} / {pipelined:,} / {consume:,}) and 1'
             ' round, to check that the script works'.format(**quick_counts),
    )
    cli.add_url(parser)
    cli.add_json(
        parser,
        'write the publishing results to PATH and the consuming results to'
        ' PATH-consume (PATH itself when consume is the only scenario)',
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds = 1
        args.warmup_seconds = 0.0
    if not args.warmup_seconds >= 0:
        parser.error('--warmup-seconds must not be negative')
    if args.rounds < 1 or (args.count is not None and args.count < 1):
        parser.error('--rounds and --count must be positive')
    if not 0 <= args.warmup <= 100:
        parser.error('--warmup must be 0..100')
    if args.window is not None and args.window < 1:
        parser.error('--window must be positive')
    args.scenarios = list(dict.fromkeys(args.scenarios))
    args.format = list(dict.fromkeys(args.format))
    return args


def consume_path(path: Path, only_consume: bool) -> Path:
    return path if only_consume else path.with_name(path.stem + '-consume' + path.suffix)


def run(args: argparse.Namespace) -> cli.Outcome:
    java_uri(args.url)
    try:
        broker = run_async(lambda: broker_info(args.url), 'asyncio')
    except OSError as ex:
        raise SkipImplementation('no broker at {}: {}'.format(redact_url(args.url), ex)) from ex
    log_broker(broker)
    broker_pid = locate_broker(args.url)

    env = env_metadata()
    env['broker'] = broker
    load_before = load_average()
    publish: dict[str, JsonDict] = {}
    consume: dict[str, JsonDict] = {}
    docs: list[JsonDict] = []
    for scenario in args.scenarios:
        count = args.count or all_counts(args.quick)[scenario]
        for fmt in ['amqp'] if scenario == 'consume' else args.format:
            log('java {}/{}: {:,} messages, {} round(s)'.format(
                scenario, fmt, count, args.rounds,
            ))
            doc = run_harness(args, scenario, fmt, count, broker_pid)
            docs.append(doc)
            if scenario == 'consume':
                consume['pipelined'] = consume_result(doc)
            else:
                window = args.window if scenario == 'pipelined' else None
                publish['{}/{}'.format(scenario, fmt)] = publish_result(doc, window)
    env['java'] = docs[0]['java']
    env['load_average'] = {'before': load_before, 'after': load_average()}

    text = '\n'.join([
        report(publish, consume, args.rounds),
        'load average (1, 5, 15 min) before: {}, after: {}'.format(
            env['load_average']['before'], env['load_average']['after'],
        ),
    ])
    documents: dict[Path, JsonDict] = {}
    if args.json:
        params: JsonDict = {
            'scenarios': args.scenarios, 'formats': args.format, 'rounds': args.rounds,
            'quick': args.quick, 'window': args.window, 'warmup_percent': args.warmup,
            'warmup_seconds': args.warmup_seconds,
            'batch': BATCH_SIZE, 'url': redact_url(args.url), 'impl': IMPL,
            'message': "i zero-padded to 10 ASCII digits (amqp: AMQP data section;"
                       " binary: the bytes)",
            'schedule': 'one JVM per scenario: a warm-up run, then the rounds;'
                        ' fresh stream per run, checked and deleted afterwards',
        }
        path = Path(args.json)
        if publish:
            documents[path] = {
                'benchmark': 'publish', 'params': params, 'env': env, 'results': publish,
            }
        if consume:
            documents[consume_path(path, not publish)] = {
                'benchmark': 'consume',
                'params': {**params, 'variants': ['pipelined']},
                'env': env, 'results': consume,
            }
    return cli.Outcome(text, documents)


BENCHMARK = cli.Benchmark(parse_args, run)
