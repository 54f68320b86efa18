"""
How cost grows with the work: one process, one client, and at each point
of a dimension the same number of messages in all, so that a flat cost a
message means the client's cost does not grow with the streams,
subscriptions or partitions.

``streams``
    N streams, a publisher each (``send_many``, the messages spread
    evenly), then a subscription each reading them back (``stop_at_end``)
``subscriptions``
    N subscriptions reading one stream of ``--per-subscription`` messages
    at once (the messages read in all grow with N)
``partitions``
    a super stream of N partitions: a super stream publisher routing by
    hash of a key, then ``subscribe_super_stream`` reading them back

Measured at each point: messages a second and the client's CPU µs a
message (``time.process_time``, kernel included), publishing and reading;
the resident memory (``/proc/self/statm``) the publishers and the
subscriptions add, per publisher and per subscription (the peak while
they run, less the resident memory before; what the chunks they hold
take counts); the connections the client opened. Creating and deleting
the streams is not timed.

The goal (issue 40): a flat cost a message, memory linear with a small
constant, no step where a connection fills (a connection holds 256
publishers and 256 subscriptions, the protocol's one-byte ids).

Example::

    python -m perf.scale --json doc/perf/results/scale.json
    python -m perf.scale --quick
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from perf.common import cli
from perf.common.errors import VerificationError
from perf.common.results import JsonDict, env_metadata, format_table, log
from perf.common.streams import (
    broker_info,
    load_average,
    loop_info,
    message,
    redact_url,
    run_async,
    stream_name,
)

POINTS = {
    'streams': (1, 10, 100, 1_000),
    'subscriptions': (1, 10, 100, 1_000, 10_000),
    'partitions': (1, 10, 100),
}
QUICK_POINTS = {'streams': (1, 10), 'subscriptions': (1, 10, 100), 'partitions': (1, 3)}
PAGE = os.sysconf('SC_PAGE_SIZE')
BATCH = 1_000
"""Messages a ``send_many`` call at most."""


def rss() -> int:
    """Resident bytes of this process now."""
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * PAGE


class Peak:
    """The highest resident memory seen while it runs (sampled every 20 ms)."""

    def __init__(self) -> None:
        self.value = rss()
        self._task: asyncio.Task[None] | None = None

    async def _watch(self) -> None:
        while True:
            self.value = max(self.value, rss())
            await asyncio.sleep(0.02)

    async def __aenter__(self) -> Peak:
        self._task = asyncio.ensure_future(self._watch())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self.value = max(self.value, rss())


async def timed(body: Callable[[], Awaitable[Any]], count: int) -> JsonDict:
    """Messages a second and CPU µs a message of ``body()`` handling ``count`` messages."""
    c0, t0 = time.process_time(), time.perf_counter()
    await body()
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    return {'msg_per_s': count / wall, 'cpu_us_per_msg': cpu / count * 1e6, 'seconds': wall}


async def read_all(subs: Sequence[Any], expected: int) -> None:
    """Read every subscription to its end; the messages read in all must be ``expected``."""
    counts = await asyncio.gather(*(_count(s) for s in subs))
    if sum(counts) != expected:
        raise VerificationError('read {:,} messages, expected {:,}'.format(sum(counts), expected))


async def _count(sub: Any) -> int:
    n = 0
    async for chunk in sub:
        n += len(chunk)
    return n


async def publish_spread(publishers: Sequence[Any], total: int) -> None:
    """``total`` messages spread evenly over the publishers, ``send_many`` each."""
    share = total // len(publishers)

    async def one(p: Any) -> None:
        for start in range(0, share, BATCH):
            await p.send_many([message(i) for i in range(start, min(share, start + BATCH))])

    await asyncio.gather(*(one(p) for p in publishers))


async def point_streams(client: Any, n: int, total: int) -> JsonDict:
    names = [stream_name('scale', str(n), str(i)) for i in range(n)]
    for s in names:
        await client.create_stream(s)
    try:
        total -= total % n
        before = rss()
        async with contextlib.AsyncExitStack() as stack, Peak() as peak:
            publishers = [await stack.enter_async_context(client.publisher(s)) for s in names]
            publish = await timed(lambda: publish_spread(publishers, total), total)
        per_publisher = (peak.value - before) / n
        before = rss()
        subs = [client.subscribe_chunks(s, offset=_first(), stop_at_end=True) for s in names]
        async with Peak() as peak:
            read = await timed(lambda: read_all(subs, total), total)
        connections = client.metrics().connections_opened
    finally:
        for s in names:
            await client.delete_stream(s)
    return {
        'n': n, 'messages': total, 'publish': publish, 'read': read,
        'rss_per_publisher': per_publisher, 'rss_per_subscription': (peak.value - before) / n,
        'connections': connections,
    }


async def point_subscriptions(client: Any, n: int, per: int) -> JsonDict:
    stream = stream_name('scale-subs', str(n))
    await client.create_stream(stream)
    try:
        async with client.publisher(stream) as p:
            await publish_spread([p], per)
        before = rss()
        subs = [client.subscribe_chunks(stream, offset=_first(), stop_at_end=True)
                for _ in range(n)]
        async with Peak() as peak:
            read = await timed(lambda: read_all(subs, n * per), n * per)
        connections = client.metrics().connections_opened
    finally:
        await client.delete_stream(stream)
    return {
        'n': n, 'messages': n * per, 'read': read,
        'rss_per_subscription': (peak.value - before) / n, 'connections': connections,
    }


async def point_partitions(client: Any, n: int, total: int) -> JsonDict:
    name = stream_name('scale-super', str(n))
    await client.create_super_stream(name, n)
    try:
        async def publish() -> None:
            async with client.super_stream_publisher(name, str) as p:
                for start in range(0, total, BATCH):
                    await p.send_many([message(i) for i in range(start, start + BATCH)])

        total -= total % BATCH
        result = {'n': n, 'messages': total, 'publish': await timed(publish, total)}
        sub = client.subscribe_super_stream_chunks(name, offset=_first(), stop_at_end=True)
        result['read'] = await timed(lambda: read_all([sub], total), total)
        result['connections'] = client.metrics().connections_opened
    finally:
        await client.delete_super_stream(name)
    return result


def _first() -> Any:
    from rbfly.streams import Offset
    return Offset.FIRST


POINT = {
    'streams': point_streams,
    'subscriptions': point_subscriptions,
    'partitions': point_partitions,
}


async def measure(args: argparse.Namespace) -> dict[str, list[JsonDict]]:
    from rbfly.streams import streams_client
    from rbfly.streams.error import FeatureNotSupported

    results: dict[str, list[JsonDict]] = {}
    for dimension in args.dimensions:
        results[dimension] = []
        for n in args.points[dimension]:
            log('scale: {} {:,}'.format(dimension, n))
            # a client per point: the connections it opens are the point's
            client = streams_client(args.url)
            try:
                size = args.per_subscription if dimension == 'subscriptions' else args.messages
                results[dimension].append(await POINT[dimension](client, n, size))
            except FeatureNotSupported as ex:  # (super streams: RabbitMQ 3.13+)
                log('scale: {} skipped: {}'.format(dimension, ex))
                results[dimension] = []
                break
            finally:
                await client.disconnect()
    return results


def report(results: dict[str, list[JsonDict]]) -> str:
    def rate(r: JsonDict | None) -> tuple[str, str]:
        if r is None:
            return '-', '-'
        return '{:,.0f}'.format(r['msg_per_s']), '{:.2f}'.format(r['cpu_us_per_msg'])

    def kib(value: float | None) -> str:
        return '-' if value is None else '{:,.1f}'.format(value / 1024)

    parts = []
    for dimension, points in results.items():
        if not points:
            parts.append('{}: skipped (the broker has no super streams)'.format(dimension))
            continue
        rows = []
        for p in points:
            rows.append([
                '{:,}'.format(p['n']), '{:,}'.format(p['messages']), *rate(p.get('publish')),
                *rate(p.get('read')), kib(p.get('rss_per_publisher')),
                kib(p.get('rss_per_subscription')), str(p['connections']),
            ])
        parts.append('{} (one process, one client)\n{}'.format(dimension, format_table(
            ['N', 'messages', 'publish msg/s', 'CPU µs/msg', 'read msg/s', 'CPU µs/msg',
             'KiB/publisher', 'KiB/subscription', 'connections'], rows)))
        if len(points) > 1:
            first, last = points[0], points[-1]
            grow = [
                '{} CPU a message x{:.2f}'.format(kind, last[kind]['cpu_us_per_msg']
                                                  / first[kind]['cpu_us_per_msg'])
                for kind in ('publish', 'read') if kind in first
            ]
            parts.append('from N={:,} to {:,}: {}'.format(first['n'], last['n'], ', '.join(grow)))
    return '\n\n'.join(parts)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = cli.parser('scale', 'How cost grows with streams, subscriptions, partitions')
    cli.add_url(parser)
    cli.add_loop(parser)
    parser.add_argument('--dimensions', nargs='+', choices=tuple(POINTS), default=list(POINTS))
    parser.add_argument('--messages', type=int, default=None,
                        help='messages at each point of streams and partitions'
                             ' (default: 200,000; quick: 20,000)')
    parser.add_argument('--per-subscription', type=int, default=None,
                        help='messages each subscription reads (default: 100; quick: 50)')
    parser.add_argument('--quick', action='store_true',
                        help='the first points of each dimension, few messages: the script'
                             ' works (recorded)')
    cli.add_json(parser)
    args = parser.parse_args(argv)
    args.messages = args.messages or (20_000 if args.quick else 200_000)
    args.per_subscription = args.per_subscription or (50 if args.quick else 100)
    args.points = QUICK_POINTS if args.quick else POINTS
    if args.messages < BATCH:
        parser.error('--messages must be at least {:,}'.format(BATCH))
    return args


def run(args: argparse.Namespace) -> cli.Outcome:
    env = env_metadata()
    env['loop'] = loop_info(args.loop)
    env['broker'] = run_async(lambda: broker_info(args.url), args.loop)
    before = load_average()
    results = run_async(lambda: measure(args), args.loop)
    env['load_average'] = {'before': before, 'after': load_average()}
    return cli.Outcome(report(results), cli.json_documents(args.json, lambda: {
        'benchmark': 'scale',
        'params': {
            'messages': args.messages, 'per_subscription': args.per_subscription,
            'quick': args.quick, 'url': redact_url(args.url),
            'points': {d: list(args.points[d]) for d in args.dimensions},
        },
        'env': env, 'results': results,
    }))


BENCHMARK = cli.Benchmark(parse_args, run)
