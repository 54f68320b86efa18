"""
Concurrent senders: many tasks of one process publish on one publisher,
each awaiting the confirmation of its message before it sends the next,
as the request handlers of a web application do. rbfly against RbFly
0.10 (a child process in ``perf/.venv-rbfly010``, the same code) and
rstream (``Producer.send_wait`` from each task), on the same broker, in
alternating rounds; 10-byte AMQP messages.

For each number of tasks: msg/s, the client's CPU per message, each
peer's rate as a share of rbfly's, from the same rounds (medians), and
the messages the stream holds after the run (read back after each run;
rbfly and rstream must store every message once). RbFly 0.10 does not
store them all: its ``Publisher.send`` takes the publishing id before
taking its lock, so concurrent sends share an id and the broker drops
the repeats as duplicates (confirming them all the same).

Examples::

    python -m perf.concurrent
    python -m perf.concurrent --tasks 10 50 200 --rounds 5 --json /tmp/c.json
    python -m perf.concurrent --quick
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from typing import Any, cast

from perf.common import cli
from perf.common import streams as _streams
from perf.common.child import baseline_python, run_child
from perf.common.errors import SkipImplementation, VerificationError
from perf.common.results import (
    JsonDict,
    env_metadata,
    format_rate,
    format_ratio,
    format_table,
    log,
    median,
)
from perf.common.streams import (
    BASELINE,
    BASELINE_VERSION,
    Stopwatch,
    endpoint,
    find_broker,
    loop_info,
    message,
    run_async,
    run_result,
    stream_name,
)

MODULE = 'perf.concurrent'
"""What a child process runs (:py:func:`perf.common.child.run_child`)."""
IMPLEMENTATIONS = ('rbfly', BASELINE, 'rstream')
TASKS = (10, 50, 200)
COUNT = 50_000
QUICK_COUNT = 2_000


async def publish_rbfly(url: str, stream: str, count: int, tasks: int) -> JsonDict:
    """``tasks`` tasks awaiting ``Publisher.send`` of one message at a time (RbFly 0.10 too)."""
    from rbfly.streams import Publisher, streams_client

    values = [message(i) for i in range(count)]
    client = streams_client(url)
    watch = Stopwatch()
    try:
        async with client.publisher(stream, cls=Publisher) as publisher:
            send = publisher.send

            async def part(k: int) -> int:
                n = 0
                for v in values[k::tasks]:
                    await send(v)
                    n += 1
                return n

            watch.start()
            sent = await asyncio.gather(*(part(k) for k in range(tasks)))
            watch.stop()
    finally:
        await client.disconnect()
    if sum(sent) != count:
        raise VerificationError('rbfly: {} of {} messages confirmed'.format(sum(sent), count))
    return run_result(count, watch)


async def publish_rstream(url: str, stream: str, count: int, tasks: int) -> JsonDict:
    """``tasks`` tasks awaiting rstream's ``Producer.send_wait`` of one message at a time."""
    from rstream import AMQPMessage, Producer

    ep = endpoint(url)
    values = [AMQPMessage(value=message(i)) for i in range(count)]
    watch = Stopwatch()
    async with Producer(
            ep.host, ep.port, username=ep.username, password=ep.password, vhost=ep.vhost,
    ) as producer:
        async def part(k: int) -> int:
            n = 0
            for v in values[k::tasks]:
                await producer.send_wait(stream, v)
                n += 1
            return n

        watch.start()
        sent = await asyncio.gather(*(part(k) for k in range(tasks)))
        watch.stop()
    if sum(sent) != count:
        raise VerificationError('rstream: {} of {} messages confirmed'.format(sum(sent), count))
    return run_result(count, watch)


async def stored(client: Any, stream: str) -> int:
    """Messages the stream holds: read from the first until a second passes without one."""
    from rbfly.streams import Offset

    n = 0
    try:
        async for chunk in client.subscribe_chunks(stream, offset=Offset.FIRST, timeout=1):
            n += len(chunk)
    except TimeoutError:
        pass
    return n


async def one_run(args: argparse.Namespace, impl: str, tasks: int) -> JsonDict:
    """One run of an implementation, on a stream of its own, deleted after."""
    from rbfly.streams import streams_client

    stream = stream_name('concurrent', impl, str(tasks))
    client = streams_client(args.url)
    try:
        await client.create_stream(stream)
        result = await publish(args, impl, stream, tasks)
        result['stored'] = await stored(client, stream)
        if impl != BASELINE and result['stored'] != args.count:
            raise VerificationError('{}: the stream holds {} of {} messages'.format(
                impl, result['stored'], args.count,
            ))
        return result
    finally:
        await client.delete_stream(stream)
        await client.disconnect()


async def publish(args: argparse.Namespace, impl: str, stream: str, tasks: int) -> JsonDict:
    if impl == 'rbfly':
        return await publish_rbfly(args.url, stream, args.count, tasks)
    if impl == 'rstream':
        return await publish_rstream(args.url, stream, args.count, tasks)
    doc = await run_child(
        baseline_python(), MODULE, [
            '--url', args.url, '--stream', stream, '--count', str(args.count),
            '--tasks', str(tasks), '--loop', args.loop,
            '--broker-pid', str(_streams.BROKER_PID or 0),
        ], timeout=1800, expect_version=BASELINE_VERSION,
    )
    return cast(JsonDict, doc['result'])


async def benchmark(args: argparse.Namespace) -> JsonDict:
    runs: dict[str, dict[str, list[JsonDict]]] = {
        str(t): {impl: [] for impl in args.impl} for t in args.tasks
    }
    skipped: dict[str, str] = {}
    for r in range(1, args.rounds + 1):
        for tasks in args.tasks:
            for impl in args.impl:
                if impl in skipped:
                    continue
                try:
                    result = await one_run(args, impl, tasks)
                except SkipImplementation as ex:
                    skipped[impl] = str(ex)
                    log('{}: skipped: {}'.format(impl, ex))
                    continue
                runs[str(tasks)][impl].append(result)
                log('round {}/{} {:>4} tasks  {:<11} {:>9} msg/s  CPU {:7.2f} us/msg'
                    '  stored {:,}'.format(
                        r, args.rounds, tasks, impl, format_rate(result['rate']),
                        result['cpu_us_per_msg'], result['stored'],
                    ))
    results: JsonDict = {}
    for tasks, by_impl in runs.items():
        results[tasks] = {
            impl: {
                'rate': median([x['rate'] for x in rs]),
                'cpu_us_per_msg': median([x['cpu_us_per_msg'] for x in rs]),
                'stored': min(x['stored'] for x in rs),
                'rounds': rs,
            } for impl, rs in by_impl.items() if rs
        }
    return {'results': results, 'skipped': skipped}


def report(doc: JsonDict) -> str:
    rows = []
    for tasks, by_impl in doc['results'].items():
        ours = by_impl.get('rbfly', {}).get('rate')
        for impl, res in by_impl.items():
            rows.append([
                tasks, impl, format_rate(res['rate']), '{:.2f}'.format(res['cpu_us_per_msg']),
                format_ratio(res['rate'] / ours if ours and impl != 'rbfly' else None),
                '{:,}'.format(res['stored']),
            ])
    return format_table(
        ['tasks', 'client', 'msg/s', 'CPU us/msg', 'of rbfly', 'stored (fewest)'], rows,
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = cli.parser('concurrent', __doc__.strip().splitlines()[0] if __doc__ else None)
    parser.add_argument('--impl', nargs='+', default=list(IMPLEMENTATIONS),
                        choices=IMPLEMENTATIONS, help='implementations (default: all)')
    parser.add_argument('--tasks', nargs='+', type=int, default=list(TASKS),
                        help='concurrent tasks (default: 10 50 200)')
    parser.add_argument('--count', type=int, default=None,
                        help='messages per run (default: {:,})'.format(COUNT))
    parser.add_argument('--rounds', type=int, default=3, help='rounds; medians reported')
    parser.add_argument('--quick', action='store_true',
                        help='{:,} messages, one round: the script works (CI)'.format(QUICK_COUNT))
    cli.add_loop(parser)
    cli.add_url(parser)
    cli.add_json(parser, 'write the results here')
    parser.add_argument('--strict', action='store_true',
                        help='an implementation that cannot run fails the benchmark (CI)')
    cli.add_child(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds = 1
        args.count = args.count or QUICK_COUNT
    args.count = args.count or COUNT
    if any(t < 1 for t in args.tasks) or args.count < 1 or args.rounds < 1:
        parser.error('--tasks, --count and --rounds must be positive')
    if args.child and (not args.stream or not args.json or len(args.tasks) != 1):
        parser.error('--child needs --stream, --json and one --tasks')
    return args


def child(args: argparse.Namespace) -> cli.ChildRun:
    """One run of the importable rbfly (RbFly 0.10's venv); the parent reads the JSON."""
    return lambda: publish_rbfly(args.url, args.stream, args.count, args.tasks[0])


def run(args: argparse.Namespace) -> cli.Outcome:
    env = env_metadata()
    env['loop'] = loop_info(args.loop)
    find_broker(args.url)
    doc = run_async(lambda: benchmark(args), args.loop)
    if args.strict and doc['skipped']:
        raise SkipImplementation('skipped: {}'.format(doc['skipped']))
    doc = {
        'benchmark': 'concurrent',
        'params': {'count': args.count, 'rounds': args.rounds, 'tasks': args.tasks,
                   'quick': args.quick},
        'env': env, **doc,
    }
    text = '\n'.join([
        'Concurrent senders: tasks each awaiting the confirmation of one message'
        ' at a time, {:,} messages a run, median of {} rounds; stored: the fewest'
        ' messages the stream held after a run'.format(args.count, args.rounds),
        report(doc),
    ])
    return cli.Outcome(text, cli.json_documents(args.json, lambda: doc))


BENCHMARK = cli.Benchmark(parse_args, run, child)
