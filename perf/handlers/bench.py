"""
Concurrent handlers: an application awaiting I/O per message (a handler
awaiting ``--latency`` seconds, 10 ms by default, as an HTTP call or a
database write would) reads at 1/latency with a plain ``async for``;
``client.process(..., concurrency=N)`` keeps N messages in flight with
exact commits (automatic tracking, ``store_every=100``). Both on the same
broker, in alternating rounds, 10-byte AMQP messages written before.

For each: msg/s, the share of the ideal rate (concurrency / latency; 1 /
latency for the plain loop), and the client's CPU per message, medians
of the rounds. The Java stream client has no concurrent handler API (its
``MessageHandler`` is called one message at a time per consumer), so no
Java figure stands beside these.

Examples::

    python -m perf.handlers
    python -m perf.handlers --concurrency 32 128 --rounds 5 --json /tmp/h.json
    python -m perf.handlers --quick
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

from perf.common import cli
from perf.common.errors import VerificationError
from perf.common.results import (
    JsonDict,
    env_metadata,
    format_rate,
    format_table,
    log,
    median,
)
from perf.common.streams import (
    Stopwatch,
    find_broker,
    loop_info,
    message,
    run_async,
    run_result,
    stream_name,
)

CONCURRENCY = (32,)
LATENCY = 0.01
SECONDS = 3.0
"""About how long a run lasts at its ideal rate (the count follows)."""
QUICK_SECONDS = 0.3


async def run_plain(url: str, stream: str, count: int, latency: float) -> JsonDict:
    """``async for`` over the messages, awaiting the handler's latency each."""
    from rbfly.streams import Offset, streams_client

    client = streams_client(url)
    watch = Stopwatch()
    n = 0
    try:
        messages = client.subscribe(
            stream, offset=Offset.FIRST, name='plain', store_every=100, stop_at_end=True,
        )
        watch.start()
        async for _ in messages:
            await asyncio.sleep(latency)
            n += 1
            if n == count:
                break
        await messages.aclose()
        watch.stop()
    finally:
        await client.disconnect()
    if n != count:
        raise VerificationError('plain: {} of {} messages'.format(n, count))
    return run_result(count, watch)


async def run_handlers(
        url: str, stream: str, count: int, latency: float, concurrency: int,
) -> JsonDict:
    """``client.process`` with ``concurrency`` handlers awaiting the latency each."""
    from rbfly.amqp import MessageCtx
    from rbfly.streams import Offset, streams_client

    async def handler(msg: MessageCtx) -> None:
        await asyncio.sleep(latency)

    client = streams_client(url)
    watch = Stopwatch()
    try:
        watch.start()
        n = await client.process(
            stream, handler, concurrency=concurrency, offset=Offset.FIRST, name='handlers',
            store_every=100, stop_at_end=True,
        )
        watch.stop()
    finally:
        await client.disconnect()
    if n != count:
        raise VerificationError('handlers: {} of {} messages'.format(n, count))
    return run_result(count, watch)


async def benchmark(args: argparse.Namespace) -> JsonDict:
    from rbfly.streams import streams_client

    ideal_plain = 1 / args.latency
    counts = {'plain': max(10, int(ideal_plain * args.seconds))}
    for c in args.concurrency:
        counts['handlers-{}'.format(c)] = max(10, int(c / args.latency * args.seconds))
    stream = stream_name('handlers')
    client = streams_client(args.url)
    runs: dict[str, list[JsonDict]] = {name: [] for name in counts}
    try:
        await client.create_stream(stream)
        async with client.publisher(stream) as publisher:
            await publisher.send_many([message(i) for i in range(max(counts.values()))])
        for r in range(1, args.rounds + 1):
            for name, count in counts.items():
                if name == 'plain':
                    result = await run_plain(args.url, stream, count, args.latency)
                else:
                    c = int(name.split('-')[1])
                    result = await run_handlers(args.url, stream, count, args.latency, c)
                runs[name].append(result)
                log('round {}/{} {:<14} {:>9} msg/s  CPU {:7.2f} us/msg'.format(
                    r, args.rounds, name, format_rate(result['rate']),
                    result['cpu_us_per_msg']))
    finally:
        await client.delete_stream(stream)
        await client.disconnect()
    results: JsonDict = {}
    for name, rs in runs.items():
        ideal = ideal_plain if name == 'plain' else int(name.split('-')[1]) / args.latency
        rate = median([x['rate'] for x in rs])
        results[name] = {
            'count': counts[name], 'rate': rate, 'ideal': ideal, 'of_ideal': rate / ideal,
            'cpu_us_per_msg': median([x['cpu_us_per_msg'] for x in rs]), 'rounds': rs,
        }
    return {'results': results}


def report(doc: JsonDict) -> str:
    plain_cpu = doc['results']['plain']['cpu_us_per_msg']
    rows = []
    for name, res in doc['results'].items():
        rows.append([
            name, '{:,}'.format(res['count']), format_rate(res['rate']),
            format_rate(res['ideal']), '{:.0%}'.format(res['of_ideal']),
            '{:.2f}'.format(res['cpu_us_per_msg']),
            '{:.2f}x'.format(res['cpu_us_per_msg'] / plain_cpu),
        ])
    return format_table(
        ['run', 'messages', 'msg/s', 'ideal', 'of ideal', 'CPU us/msg', 'CPU of plain'], rows,
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = cli.parser('handlers', __doc__.strip().splitlines()[0] if __doc__ else None)
    parser.add_argument('--concurrency', nargs='+', type=int, default=list(CONCURRENCY),
                        help='handlers in flight (default: 32)')
    parser.add_argument('--latency', type=float, default=LATENCY,
                        help='seconds a handler awaits (default: 0.01)')
    parser.add_argument('--seconds', type=float, default=None,
                        help='about how long a run lasts at its ideal rate (default: 3)')
    parser.add_argument('--rounds', type=int, default=3, help='rounds; medians reported')
    parser.add_argument('--quick', action='store_true',
                        help='short runs, one round: the script works (CI)')
    cli.add_loop(parser)
    cli.add_url(parser)
    cli.add_json(parser, 'write the results here')
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds = 1
        args.seconds = args.seconds or QUICK_SECONDS
    args.seconds = args.seconds or SECONDS
    if any(c < 1 for c in args.concurrency) or args.rounds < 1 or not args.latency > 0 \
            or not args.seconds > 0:
        parser.error('--concurrency, --rounds, --latency and --seconds must be positive')
    return args


def run(args: argparse.Namespace) -> cli.Outcome:
    env = env_metadata()
    env['loop'] = loop_info(args.loop)
    find_broker(args.url)
    doc = run_async(lambda: benchmark(args), args.loop)
    doc = {
        'benchmark': 'handlers',
        'params': {'concurrency': args.concurrency, 'latency': args.latency,
                   'seconds': args.seconds, 'rounds': args.rounds, 'quick': args.quick},
        'env': env, **doc,
    }
    text = '\n'.join([
        'Concurrent handlers: a handler awaiting {:g} ms a message, median of {}'
        ' rounds; ideal: concurrency / latency; CPU of plain: client CPU a message'
        ' against the plain async for'.format(args.latency * 1000, args.rounds),
        report(doc),
    ])
    return cli.Outcome(text, cli.json_documents(args.json, lambda: doc))


BENCHMARK = cli.Benchmark(parse_args, run)
