"""
The Java stream client measured two ways on the same broker, one after
the other: by its own perf tool (``StreamPerfTest``, bundled with
``com.rabbitmq:stream-client`` 0.13.0; ``scripts/java-perf.sh --official``)
and by rbfly's harness (``perf/java/StreamPerf.java``, the client of
``scripts/java-perf.sh``), which the report's Java lines come from.

A harness figure more than 10% below the tool's on the same scenario is a
defect of the harness, not a property of the client: this benchmark is how
such a defect is found (it exits with 1 when a ratio falls below
``--tolerance``).

Scenarios the tool can run:

``pipelined``
    one producer, 10-byte messages, the tool's defaults (AMQP messages by
    its default codec, batches of 100, 10,000 unconfirmed); the harness's
    ``pipelined`` scenario, AMQP messages, the client's defaults
``single``
    one message at a time, each confirmed before the next (the tool with
    ``--confirms 1 --batch-size 1``); the harness's ``single``
``consume``
    a consumer from the first offset of a stream the tool filled first
    (for ``--fill-seconds``); the tool reads it in a few seconds, so its
    steady state starts at second 2 and ends before the last second of
    reading; the harness's ``consume`` (it publishes its own stream). The
    tool decodes every message (it reads a timestamp from each body for its
    latency figures), the harness counts them and checks the last one's
    body, so the two differ by that work

The tool runs for ``--seconds`` (default 25) and prints a line a second;
its figure is the steady state: the mean of seconds ``--from`` (default 6)
to the end, after the JIT has compiled the hot paths, as the client's
authors read it, next to the tool's own summary, which includes the
warm-up. Its client CPU per message is that of the JVM over the same
seconds (``/proc/PID/stat`` sampled at each line). The harness warms its
JVM up for ``--warmup-seconds`` (default 10), then times ``--rounds``
runs of ``--count`` messages; its figure is the median rate.

Examples::

    python -m perf.official
    python -m perf.official --scenarios pipelined --seconds 25
    python -m perf.official --quick      # a few seconds each, CI
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from perf.common import cli
from perf.common.errors import SkipImplementation
from perf.common.java import harness_args, java_missing, prepare
from perf.common.results import (
    JsonDict,
    env_metadata,
    format_table,
    log,
    median,
    read_json,
)
from perf.common.streams import broker_info, find_broker, log_broker, redact_url, run_async
from perf.common.tool import delete_stream, fill_stream, run_tool

SCENARIOS = ('pipelined', 'single', 'consume')
TOLERANCE = 0.9
COUNTS = {'pipelined': 5_000_000, 'single': 50_000, 'consume': 5_000_000}
QUICK_COUNTS = {'pipelined': 100_000, 'single': 2_000, 'consume': 100_000}
TOOL_ARGS = {
    'pipelined': ['--producers', '1', '--consumers', '0'],
    'single': ['--producers', '1', '--consumers', '0', '--confirms', '1', '--batch-size', '1'],
    'consume': ['--producers', '0', '--consumers', '1', '--offset', 'first'],
}


def run_harness(args: argparse.Namespace, scenario: str, broker_pid: int | None) -> JsonDict:
    """rbfly's harness on the scenario, all rounds in one warmed-up JVM."""
    count = (QUICK_COUNTS if args.quick else COUNTS)[scenario]
    with tempfile.TemporaryDirectory(prefix='rbfly-official-') as tmp:
        out = Path(tmp) / 'java.json'
        cmd = harness_args(
            args.url, scenario, 'amqp', count, rounds=args.rounds,
            warmup_seconds=args.warmup_seconds, broker_pid=broker_pid, json_out=out,
        )
        subprocess.run(cmd, stdin=subprocess.DEVNULL, check=True, timeout=3600)
        doc = read_json(out)
    runs = doc['runs']
    return {
        'rate': median([r['rate'] for r in runs]),
        'cpu_us_per_msg': median([r['cpu_us_per_msg'] for r in runs]),
        'rates': [r['rate'] for r in runs],
        'count': count,
        'version': doc['version'],
        'warmup': doc.get('warmup'),
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = cli.parser(
        'official', 'The Java stream client by its own perf tool and by rbfly\'s harness',
    )
    parser.add_argument('--scenarios', nargs='+', choices=SCENARIOS, default=list(SCENARIOS))
    parser.add_argument('--seconds', type=int, default=25, help='tool run time (default: 25)')
    parser.add_argument(
        '--from', dest='start', type=int, default=6,
        help='first second of the tool\'s steady state (default: 6)',
    )
    parser.add_argument(
        '--fill-seconds', type=int, default=20,
        help='consume: the tool publishes the stream it reads for this long first'
             ' (default: 20; much longer streams made its per-second lines read 0)',
    )
    parser.add_argument('--rounds', type=int, default=3, help='harness rounds (default: 3)')
    parser.add_argument(
        '--warmup-seconds', type=float, default=10.0,
        help='harness JVM warm-up (default: 10)',
    )
    parser.add_argument(
        '--tolerance', type=float, default=TOLERANCE,
        help='lowest harness/tool ratio accepted (default: %(default)s)',
    )
    parser.add_argument('--quick', action='store_true', help='seconds, not minutes (CI)')
    cli.add_url(parser)
    cli.add_json(parser, 'write the results to PATH')
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.start, args.rounds, args.warmup_seconds = 4, 2, 1, 1.0
        args.fill_seconds = 2
    if args.seconds < 1 or not 1 <= args.start <= args.seconds or args.rounds < 1:
        parser.error('--seconds and --rounds must be positive, --from within --seconds')
    return args


def run(args: argparse.Namespace) -> cli.Outcome:
    reason = java_missing()
    if reason is not None:
        raise SkipImplementation(reason)
    prepare()
    broker = run_async(lambda: broker_info(args.url), 'asyncio')
    broker_pid = find_broker(args.url)
    log_broker(broker)
    results: dict[str, JsonDict] = {}
    for scenario in args.scenarios:
        stream = 'rbfly-official-{}-{}'.format(scenario, uuid.uuid4().hex[:8])
        try:
            if scenario == 'consume':
                log('official: filling {} for {} s'.format(stream, args.fill_seconds))
                fill_stream(args.url, stream, args.fill_seconds, TOOL_ARGS['pipelined'])
            log('official {}: {} s'.format(scenario, args.seconds))
            # the tool reads a stream in a few seconds: from its second on
            start = min(args.start, 2) if scenario == 'consume' else args.start
            tool = run_tool(
                args.url, TOOL_ARGS[scenario], seconds=args.seconds, start=start,
                consuming=scenario == 'consume', streams=[stream],
            )
        finally:
            delete_stream(args.url, stream)
        log('harness {}: {} round(s) after {:g} s of warm-up'.format(
            scenario, args.rounds, args.warmup_seconds,
        ))
        time.sleep(1)
        harness = run_harness(args, scenario, broker_pid)
        results[scenario] = {
            'official': tool, 'harness': harness,
            'ratio': harness['rate'] / tool['rate'] if tool['rate'] else None,
        }

    def document() -> JsonDict:
        env = env_metadata()
        env['broker'] = broker
        return {
            'benchmark': 'java-official',
            'params': {
                'seconds': args.seconds, 'from': args.start, 'rounds': args.rounds,
                'warmup_seconds': args.warmup_seconds, 'quick': args.quick,
                'url': redact_url(args.url), 'tolerance': args.tolerance,
            },
            'env': env, 'results': results,
        }

    outcome = cli.Outcome(report(results, args), cli.json_documents(args.json, document))
    low = [s for s, r in results.items() if r['ratio'] is None or r['ratio'] < args.tolerance]
    if low and not args.quick:
        return replace(outcome, status=1, failure='harness below {:.0%} of the tool: {}'.format(
            args.tolerance, ', '.join(low),
        ))
    return outcome


def report(results: dict[str, JsonDict], args: argparse.Namespace) -> str:
    rows = []
    for scenario, r in results.items():
        tool, harness = r['official'], r['harness']
        rows.append([
            scenario, '{}-{}'.format(*tool['seconds']),
            '{:,.0f}'.format(tool['rate']), '{:,.0f}'.format(tool['summary_rate'] or 0),
            '-' if tool['cpu_us_per_msg'] is None else '{:.2f}'.format(tool['cpu_us_per_msg']),
            '{:,.0f}'.format(harness['rate']), '{:.2f}'.format(harness['cpu_us_per_msg']),
            '-' if r['ratio'] is None else '{:.2f}x'.format(r['ratio']),
        ])
    return '\n'.join([
        format_table(
            ['scenario', 'tool seconds', 'tool msg/s', 'tool summary', 'tool CPU us/msg',
             'harness msg/s', 'harness CPU us/msg', 'harness/tool'],
            rows,
        ),
        'tool: StreamPerfTest (stream-client 0.13.0), {} s runs, mean of the seconds'
        ' shown; summary: its own average, warm-up included'.format(args.seconds),
        'harness: perf/java/StreamPerf.java (stream-client {}), median of {} round(s)'
        ' after {:g} s of warm-up'.format(
            next(iter(results.values()))['harness']['version'] if results else '?',
            args.rounds, args.warmup_seconds),
    ])


BENCHMARK = cli.Benchmark(parse_args, run)
