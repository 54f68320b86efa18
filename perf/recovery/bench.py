"""
Recovery under repeated faults: rbfly publishing and consuming through a
TCP proxy (``tests/integration/proxy.py``, in a process of its own) that
cuts every connection at a fixed interval, in front of a real broker
(issue 31).

Workloads, each run for ``--seconds`` at each cut interval (``never``
first, the uncut rate of the same run):

- ``awaited``: a named ``Publisher``, one ``await publisher.send()`` at a
  time;
- ``pipelined``: ``PublisherPipelined``, its window full, flushed at the
  end;
- ``consume``: ``async for`` over a subscription from the first offset of
  a stream filled beforehand (every message checked: in order, none
  missed, none repeated).

Each rate is reported as a share of the uncut rate, with the cuts, the
reconnections (the proxy's connections after the first) and the client's
CPU time per message (this process only; the proxy runs in another).

Then the no-progress case: the proxy drops every connection as the client
declares its publisher again (``Proxy.drop_on``), as a broker that accepts
connections and drops each one before any progress: the reconnections per
minute, whether each came at least the backoff's delay after the one
before (at most one reconnection per delay), and whether the publisher
ended with :py:class:`~rbfly.streams.error.RecoveryStalled` after the
backoff's stalls.

Goals: one cut a second, at least 70% of the uncut rate for publishing and
consuming; one cut every 0.3 s, at least 50%; no progress, at most one
reconnection per backoff delay.

Examples::

    python -m perf.recovery
    python -m perf.recovery --seconds 20 --json /tmp/recovery.json
    python -m perf.recovery --quick
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from perf.common import ROOT, cli
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
    Target,
    endpoint,
    find_broker,
    format_targets,
    loop_info,
    message,
    redact_url,
    run_async,
    stream_name,
)

WORKLOADS = ('awaited', 'pipelined', 'consume')
CUTS = (0.0, 5.0, 2.0, 1.0, 0.3)
"""Seconds between cuts (0: never)."""
QUICK_CUTS = (0.0, 1.0, 0.3)
SECONDS = 10.0
ROUNDS = 2
QUICK_SECONDS = 2.0
CONSUME_COUNT = 4_000_000
QUICK_CONSUME_COUNT = 300_000
STALLS = 8
QUICK_STALLS = 4
GOALS = {1.0: 0.7, 0.3: 0.5}
"""The share of the uncut rate each cut interval is to keep."""
DECLARE_PUBLISHER = 0x0001

#
# the proxy, in a process of its own (its CPU is not the client's)
#

async def serve_proxy(target: str, every: float) -> None:
    """
    The proxy process: forward to ``target`` (``host:port``), cut every
    ``every`` seconds (0: never); print the port, then answer commands
    read from stdin, a line each: ``cut``, ``drop KEY``, ``stats`` (a JSON
    line); end at the end of stdin.
    """
    sys.path.insert(0, str(ROOT))
    from tests.integration.proxy import Proxy

    host, _, port = target.rpartition(':')
    proxy = Proxy(host, int(port))
    await proxy.start()
    cuts = 0

    async def cutter() -> None:
        nonlocal cuts
        while True:
            await asyncio.sleep(every)
            cuts += proxy.cut() > 0

    task = asyncio.create_task(cutter()) if every > 0 else None
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    print(json.dumps({'port': proxy.port}), flush=True)
    while line := await reader.readline():
        command, *rest = line.decode().split()
        if command == 'cut':
            cuts += proxy.cut() > 0
        elif command == 'drop':
            proxy.drop_on(int(rest[0]))
        elif command == 'stats':
            first = proxy.accepted[0] if proxy.accepted else 0.0
            print(json.dumps({
                'connections': proxy.connections, 'cuts': cuts,
                'accepted': [t - first for t in proxy.accepted],
            }), flush=True)
    if task is not None:
        task.cancel()
    await proxy.close()

class ProxyProcess:
    """The parent's end of a proxy process."""
    def __init__(self, process: asyncio.subprocess.Process, port: int) -> None:
        self.process = process
        self.port = port

    @classmethod
    async def start(cls, url: str, every: float) -> ProxyProcess:
        ep = endpoint(url)
        process = await asyncio.create_subprocess_exec(
            sys.executable, '-m', 'perf.recovery', '--proxy', '{}:{}'.format(ep.host, ep.port),
            '--cut-every', str(every), '--loop', 'asyncio',
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=str(ROOT),
        )
        assert process.stdout is not None
        line = await process.stdout.readline()
        if not line:
            raise VerificationError('the proxy process did not start')
        return cls(process, json.loads(line)['port'])

    def url(self, url: str) -> str:
        """The broker's URL, to the proxy."""
        parts = urlsplit(url)
        user, at, _ = parts.netloc.rpartition('@')
        return urlunsplit(parts._replace(netloc='{}{}127.0.0.1:{}'.format(user, at, self.port)))

    def send(self, command: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(command.encode() + b'\n')

    async def stats(self) -> JsonDict:
        self.send('stats')
        assert self.process.stdout is not None
        stats: JsonDict = json.loads(await self.process.stdout.readline())
        return stats

    async def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        await self.process.wait()

#
# the workloads
#

Workload = Callable[[Any, str, float, int], Awaitable[int]]
"""``(client, stream, seconds, count)``: the messages handled."""

async def awaited(client: Any, stream: str, seconds: float, count: int) -> int:
    """One awaited send at a time, for ``seconds``."""
    n = 0
    deadline = time.perf_counter() + seconds
    async with client.publisher(stream, name='recovery-bench') as publisher:
        while time.perf_counter() < deadline:
            await publisher.send(message(n))
            n += 1
    return n

async def pipelined(client: Any, stream: str, seconds: float, count: int) -> int:
    """The pipelined publisher, for ``seconds``, then flushed."""
    from rbfly.streams import PublisherPipelined

    n = 0
    deadline = time.perf_counter() + seconds
    async with client.publisher(stream, cls=PublisherPipelined) as publisher:
        while time.perf_counter() < deadline:
            for _ in range(100):
                await publisher.send(message(n))
                n += 1
        await publisher.flush()
    return n

async def consume(client: Any, stream: str, seconds: float, count: int) -> int:
    """
    ``async for`` from the first offset, for ``seconds`` or ``count``
    messages; each message checked.
    """
    from rbfly.streams import Offset

    n = 0
    deadline = time.perf_counter() + seconds
    async for body in client.subscribe(stream, offset=Offset.FIRST, timeout=60):
        if body != message(n):
            raise VerificationError('consume: message {} is {!r}'.format(n, body))
        n += 1
        if n == count or (n % 1000 == 0 and time.perf_counter() > deadline):
            break
    return n

RUNS: dict[str, Workload] = {'awaited': awaited, 'pipelined': pipelined, 'consume': consume}

async def fill(client: Any, stream: str, count: int) -> None:
    from rbfly.streams import PublisherBatchFast

    async with client.publisher(stream, cls=PublisherBatchFast) as publisher:
        for i in range(count):
            publisher.batch(message(i))
            if i % 10_000 == 9_999:
                await publisher.flush()
        await publisher.flush()

async def one_run(
        url: str, workload: str, every: float, seconds: float, count: int, stream: str,
) -> JsonDict:
    """One workload through a proxy cutting every ``every`` seconds."""
    from rbfly.streams import streams_client
    from rbfly.streams.backoff import Backoff

    proxy = await ProxyProcess.start(url, every)
    events: list[tuple[float, str]] = []
    # the default delays, without chance, so that runs compare
    client = streams_client(
        proxy.url(url), reconnect=Backoff(jitter=0),
        on_connection=lambda e: events.append((time.perf_counter(), e.state.value)),
    )
    try:
        cpu = time.process_time()
        start = time.perf_counter()
        n = await RUNS[workload](client, stream, seconds, count)
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu
        stats = await proxy.stats()
    finally:
        await client.disconnect()
        await proxy.close()
    result = {
        'workload': workload, 'cut_every': every, 'messages': n, 'seconds': elapsed,
        'recoveries_ms': recoveries(events),
        'rate': n / elapsed, 'cpu_us_per_msg': cpu / n * 1e6 if n else None,
        'cuts': stats['cuts'], 'reconnections': stats['connections'] - 1,
    }
    log('{workload} cut every {every}: {rate:,.0f} msg/s, {cuts} cuts, {rec} reconnections'.format(
        workload=workload, every=every or 'never', rate=result['rate'], cuts=stats['cuts'],
        rec=result['reconnections'],
    ))
    return result

def recoveries(events: list[tuple[float, str]]) -> list[float]:
    """Milliseconds from each lost connection to its recovery (the client's events)."""
    found = []
    lost = None
    for when, state in events:
        if state == 'lost' and lost is None:
            lost = when
        elif state == 'recovered' and lost is not None:
            found.append((when - lost) * 1000)
            lost = None
    return found

async def no_progress(url: str, stalls: int, stream: str) -> JsonDict:
    """
    A publisher whose every connection is dropped as it is declared again
    after a cut: the pace of the reconnections and how it ends.
    """
    from rbfly.streams import RecoveryStalled, streams_client
    from rbfly.streams.backoff import Backoff

    backoff = Backoff(initial=0.1, maximum=2.0, multiplier=2, jitter=0, stalls=stalls, stall_time=0)
    delays = list(itertools.islice(backoff.delays(), stalls))
    proxy = await ProxyProcess.start(url, 0)
    client = streams_client(proxy.url(url), reconnect=backoff)
    ended = None
    try:
        async with client.publisher(stream, name='recovery-stalled') as publisher:
            await publisher.send(message(0))
            proxy.send('drop {}'.format(DECLARE_PUBLISHER))
            proxy.send('cut')
            start = time.perf_counter()
            try:
                async with asyncio.timeout(sum(delays) + 60):
                    await publisher.send(message(1))
            except RecoveryStalled as ex:
                ended = type(ex).__name__
            elapsed = time.perf_counter() - start
        stats = await proxy.stats()
    finally:
        await client.disconnect()
        await proxy.close()
    accepted = stats['accepted'][1:]  # after the cut
    gaps = [b - a for a, b in itertools.pairwise(accepted)]
    ratios = [gap / delay for gap, delay in zip(gaps, delays, strict=False)]
    result = {
        'backoff': {'initial': backoff.initial, 'maximum': backoff.maximum,
                    'multiplier': backoff.multiplier, 'stalls': stalls},
        'reconnections': len(accepted), 'seconds': elapsed,
        'per_minute': len(accepted) / elapsed * 60,
        'delays': delays, 'gaps': gaps,
        'least_gap_of_delay': min(ratios) if ratios else None,
        'ended': ended,
    }
    log('no progress: {} reconnections in {:.1f}s, ended with {}'.format(
        len(accepted), elapsed, ended))
    return result

async def measure(
        direct: Any, args: argparse.Namespace, workload: str, every: float, filled: str,
) -> JsonDict:
    """One run: the publishers' on a stream of their own, the consumer's on ``filled``."""
    if workload == 'consume':
        return await one_run(args.url, workload, every, args.seconds, args.count, filled)
    stream = stream_name('recovery', workload)
    await direct.create_stream(stream)
    try:
        return await one_run(args.url, workload, every, args.seconds, args.count, stream)
    finally:
        await direct.delete_stream(stream)

async def benchmark(args: argparse.Namespace) -> JsonDict:
    from rbfly.streams import streams_client

    results: list[JsonDict] = []
    async with streams_client(args.url) as direct:
        filled = stream_name('recovery', 'consume')
        await direct.create_stream(filled)
        try:
            if 'consume' in args.workload:
                log('filling {} with {:,} messages'.format(filled, args.count))
                await fill(direct, filled, args.count)
            for workload in args.workload:
                # each round's cut intervals in turn, then one uncut run more
                for n, every in [*itertools.product(range(args.rounds), args.cuts),
                                 (args.rounds, 0.0)]:
                    result = await measure(direct, args, workload, every, filled)
                    results.append({'round': n, **result})
            stream = stream_name('recovery', 'stalled')
            await direct.create_stream(stream)
            try:
                stalled = await no_progress(args.url, args.stalls, stream)
            finally:
                await direct.delete_stream(stream)
        finally:
            await direct.delete_stream(filled)
    return {'results': results, 'summary': summarise(results), 'no_progress': stalled}

def summarise(results: list[JsonDict]) -> list[JsonDict]:
    """
    Medians of the rounds of each workload and cut interval, in the order
    run; a run's share of the uncut rate is of the mean of the uncut runs
    before and after its round's (the load of the machine changes from
    minute to minute; the runs of a round are close in time).
    """
    first = {(r['workload'], r['round']): r['rate'] for r in results if r['cut_every'] == 0}
    uncut = {
        (workload, n): (rate + first.get((workload, n + 1), rate)) / 2
        for (workload, n), rate in first.items()
    }
    keys = list(dict.fromkeys((r['workload'], r['cut_every']) for r in results))
    summary = []
    for workload, every in keys:
        runs = [r for r in results if (r['workload'], r['cut_every']) == (workload, every)]
        if every == 0:  # the share of each uncut run is of the mean around it
            runs = [r for r in runs if (workload, r['round'] + 1) in first]
        cpu = [r['cpu_us_per_msg'] for r in runs if r['cpu_us_per_msg'] is not None]
        recovered = [t for r in runs for t in r['recoveries_ms']]
        shares = [r['rate'] / uncut[workload, r['round']] for r in runs
                  if uncut.get((workload, r['round']))]
        summary.append({
            'workload': workload, 'cut_every': every, 'rounds': len(runs),
            'messages': sum(r['messages'] for r in runs),
            'rate': median([r['rate'] for r in runs]),
            'share': median(shares) if shares else None,
            'cpu_us_per_msg': median(cpu) if cpu else None,
            'cuts': sum(r['cuts'] for r in runs),
            'reconnections': sum(r['reconnections'] for r in runs),
            'recovery_ms': median(recovered) if recovered else None,
            'recovery_ms_max': max(recovered) if recovered else None,
        })
    return summary

#
# the report
#

def report(doc: JsonDict) -> str:
    rows = []
    for r in doc['summary']:
        s = r['share']
        rows.append([
            r['workload'], 'never' if r['cut_every'] == 0 else '{:g} s'.format(r['cut_every']),
            '{:,}'.format(r['messages']), format_rate(r['rate']),
            '-' if s is None else '{:.0%}'.format(s), str(r['cuts']), str(r['reconnections']),
            '-' if r['cpu_us_per_msg'] is None else '{:.1f}'.format(r['cpu_us_per_msg']),
            '-' if r['recovery_ms'] is None else '{:.0f} / {:.0f}'.format(
                r['recovery_ms'], r['recovery_ms_max']),
        ])
    table = format_table(
        ['workload', 'cut every', 'messages', 'msg/s', 'of uncut', 'cuts', 'reconnections',
         'CPU us/msg', 'recovery ms (median / max)'], rows,
    )
    p = doc['no_progress']
    least = p['least_gap_of_delay']
    lines = [
        table, '',
        'no progress (each connection dropped as the publisher is declared again;'
        ' backoff {initial:g}-{maximum:g} s, x{multiplier:g}, no jitter,'
        ' stalls={stalls}):'.format(**p['backoff']),
        '  {} reconnections in {:.1f} s ({:.0f} a minute); least gap / delay: {};'
        ' ended with {}'.format(
            p['reconnections'], p['seconds'], p['per_minute'],
            '-' if least is None else '{:.2f}'.format(least),
            p['ended'] or 'nothing (still retrying)',
        ),
    ]
    return '\n'.join(lines)

def targets(doc: JsonDict) -> list[Target]:
    checks = []
    for workload in WORKLOADS:
        for every, goal in GOALS.items():
            found = [r for r in doc['summary']
                     if r['workload'] == workload and r['cut_every'] == every]
            checks.append(Target(
                '{}, cut every {:g} s, of uncut'.format(workload, every), goal, 'x',
                found[0]['share'] if found else None, 'issue 31',
            ))
    p = doc['no_progress']
    checks.append(Target(
        'no progress: least reconnection gap / backoff delay', 1.0, 'x',
        p['least_gap_of_delay'], 'at most one reconnection per delay',
    ))
    return checks

#
# the command line
#

def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = cli.parser('recovery', __doc__.strip().splitlines()[0] if __doc__ else None)
    parser.add_argument('--workload', nargs='+', default=list(WORKLOADS), choices=WORKLOADS)
    parser.add_argument('--cuts', nargs='+', type=float, default=None,
                        help='seconds between cuts, 0: never (default: 0 5 2 1 0.3)')
    parser.add_argument('--seconds', type=float, default=None,
                        help='seconds of each run (default: {:g})'.format(SECONDS))
    parser.add_argument('--count', type=int, default=None,
                        help='messages the consumed stream holds (default: {:,})'.format(
                            CONSUME_COUNT))
    parser.add_argument('--rounds', type=int, default=None,
                        help='rounds, each cut interval in turn; medians reported'
                        ' (default: {}; 1 with --quick)'.format(ROUNDS))
    parser.add_argument('--stalls', type=int, default=None,
                        help='stalls of the no-progress case (default: {})'.format(STALLS))
    parser.add_argument(
        '--quick', action='store_true',
        help='cuts 0 1 0.3, {:g} s a run, {:,} messages: well under a minute (CI)'.format(
            QUICK_SECONDS, QUICK_CONSUME_COUNT))
    parser.add_argument(
        '--strict', action='store_true',
        help='fail when the no-progress case reconnects faster than its delays or never'
        ' gives up (CI); the rate goals are reported, not enforced: they depend on the'
        " machine's load")
    parser.add_argument('--proxy', help=argparse.SUPPRESS)
    parser.add_argument('--cut-every', type=float, default=0.0, help=argparse.SUPPRESS)
    cli.add_loop(parser)
    cli.add_url(parser)
    cli.add_json(parser, 'write the results here')
    args = parser.parse_args(argv)
    args.cuts = args.cuts or list(QUICK_CUTS if args.quick else CUTS)
    if 0 not in args.cuts:
        args.cuts.insert(0, 0.0)  # the uncut rate, first
    args.seconds = args.seconds or (QUICK_SECONDS if args.quick else SECONDS)
    args.count = args.count or (QUICK_CONSUME_COUNT if args.quick else CONSUME_COUNT)
    args.rounds = args.rounds or (1 if args.quick else ROUNDS)
    args.stalls = args.stalls or (QUICK_STALLS if args.quick else STALLS)
    if args.seconds <= 0 or args.count < 1 or any(c < 0 for c in args.cuts):
        parser.error('--seconds and --count must be positive, --cuts not negative')
    return args

def run(args: argparse.Namespace) -> cli.Outcome:
    if args.proxy:
        run_async(lambda: serve_proxy(args.proxy, args.cut_every), 'asyncio')
        return cli.Outcome('')
    env = env_metadata()
    env['loop'] = loop_info(args.loop)
    env['broker_url'] = redact_url(args.url)
    find_broker(args.url)
    doc = run_async(lambda: benchmark(args), args.loop)
    checks = targets(doc)
    text = '\n'.join([
        'Through a proxy cutting every connection at an interval: {:g} s a run,'
        ' medians of {} rounds, {:,} messages in the consumed stream'.format(
            args.seconds, args.rounds, args.count),
        report(doc), '', format_targets(checks),
    ])
    documents = cli.json_documents(args.json, lambda: {
        'benchmark': 'recovery',
        'params': {'seconds': args.seconds, 'rounds': args.rounds, 'count': args.count,
                   'quick': args.quick,
                   'cuts': args.cuts, 'workloads': args.workload, 'stalls': args.stalls},
        'env': env, **doc, 'targets': [t.as_json() for t in checks],
    })
    # --strict: the no-progress pace and its end, which do not depend on the
    # machine's load; the shares of 2-second runs do (--quick once measured
    # 48% at one cut a second, 118% in a longer run just after): reported
    pace = checks[-1]
    failed = args.strict and (pace.met is False or doc['no_progress']['ended'] is None)
    return cli.Outcome(
        text, documents, status=2 if failed else 0,
        failure='no progress: reconnections not paced, or not given up' if failed else None,
    )

BENCHMARK = cli.Benchmark(parse_args, run)
