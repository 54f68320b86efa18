"""
Soak with faults: publish with every publisher class and consume with
``async for``, the chunk API and a super stream for a given time, while
connections are cut, the broker is restarted and, on the cluster, nodes
(stream leaders among them) are killed and revived. At the end, check that
every confirmed message was stored exactly once, in order per publisher,
that live consumers saw each message once, and that memory, tasks and file
descriptors stayed bounded.

Run it with ``scripts/soak.sh`` (it starts the brokers and the cluster);
``--minutes`` sets the length (30 by default), ``--ci`` makes it two
minutes. It prints a summary, writes the figures as JSON with ``--json``,
and exits with 1 when a message was lost or duplicated, a publisher had
fewer than ``CONFIRMED_FLOOR`` of a fault-free run's messages confirmed,
or a resource leaked.

Bookkeeping is a bitmap per publisher (a bit per sequence number), so the
soak's own memory does not hide the client's in the RSS figures.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import logging
import math
import os
import random
import sys
import tempfile
import time
import typing as tp
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rbfly.error import RbFlyError  # noqa: E402
from rbfly.streams import (  # noqa: E402
    Offset,
    Publisher,
    PublisherBatchFast,
    PublisherBatchLimit,
    PublisherBin,
    PublisherBinBatch,
    PublisherPipelined,
    StreamsClient,
    get_message_ctx,
    streams_client,
)
from soak.pace import Pace  # noqa: E402
from tests.integration.proxy import Proxy  # noqa: E402

logger = logging.getLogger('soak')

RATE = 400
"""Messages per second each publisher sends (bounded, so that the final read is quick)."""

BATCH = 40
"""Messages per batch or flush."""

CONFIRMED_FLOOR = 0.25
"""
The share of the messages it sent each publisher must have had confirmed:
below it the run fails. Without a floor, a run where every publish failed
reported "lost 0" and passed (nothing confirmed, so nothing lost). The
faults cost a share of the messages (calls failing while a connection or
a broker is down), never three quarters.
"""

SENT_FLOOR = 0.05
"""
The share of a fault-free run's messages (``RATE`` a second for the
phase's publishing time) each publisher must have sent at least: one
stuck from the start fails the run too. Not more: a publisher awaiting
each confirmation from a three-node cluster sends under a quarter of
``RATE`` (measured: 5,240 in a 60 s phase of node kills, 87 a second).
"""

class Bits:
    """A growable bitmap of sequence numbers."""
    def __init__(self) -> None:
        self.data = bytearray()

    def add(self, n: int) -> bool:
        """Set bit ``n``; ``False`` when it was set already."""
        i, b = divmod(n, 8)
        if i >= len(self.data):
            self.data.extend(bytes(i + 1 - len(self.data) + 4096))
        if self.data[i] >> b & 1:
            return False
        self.data[i] |= 1 << b
        return True

    def __contains__(self, n: int) -> bool:
        i, b = divmod(n, 8)
        return i < len(self.data) and bool(self.data[i] >> b & 1)

@dataclass
class Ledger:
    """What one publisher sent and what its broker confirmed."""
    key: str
    stream: str
    binary: bool = False
    sent: int = 0        # sequence numbers 0..sent-1 were handed to the publisher
    failed: Bits = field(default_factory=Bits)   # a send/flush raised: maybe stored
    failures: int = 0

    def confirmed(self, n: int) -> bool:
        return n < self.sent and n not in self.failed

@dataclass
class Seen:
    """What a consumer saw: per publisher a bitmap, and order per stream."""
    name: str
    bits: dict[str, Bits] = field(default_factory=lambda: collections.defaultdict(Bits))
    last: dict[str, int] = field(default_factory=dict)  # by stream
    messages: int = 0
    duplicates: int = 0
    out_of_order: int = 0

    def see(self, stream: str, body: object) -> None:
        text = body.decode() if isinstance(body, bytes | bytearray) else str(body)
        key, _, seq_text = text.partition(':')
        seq = int(seq_text)
        self.messages += 1
        if not self.bits[key].add(seq):
            self.duplicates += 1
            return
        order_key = stream + '/' + key
        if seq <= self.last.get(order_key, -1):
            self.out_of_order += 1
        self.last[order_key] = seq

@dataclass
class Stats:
    faults: collections.Counter[str] = field(default_factory=collections.Counter)
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    rss: list[int] = field(default_factory=list)

def rss_kib() -> int:
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return 0

def fds() -> dict[str, str]:
    """The process's open file descriptors and what each is."""
    found = {}
    for fd in os.listdir('/proc/self/fd'):
        with contextlib.suppress(OSError):
            found[fd] = os.readlink('/proc/self/fd/' + fd)
    return found

#
# publishers
#
PUBLISHERS: list[tuple[str, type, bool]] = [
    ('single', Publisher, False),
    ('batch', PublisherBatchFast, False),
    ('limit', PublisherBatchLimit, False),
    ('pipelined', PublisherPipelined, False),
    ('bin', PublisherBin, True),
    ('binbatch', PublisherBinBatch, True),
]

def body(ledger: Ledger, seq: int) -> tp.Any:
    text = '{}:{}'.format(ledger.key, seq)
    return text.encode() if ledger.binary else text

async def publish(
        client: StreamsClient, cls: type, ledger: Ledger, stop: asyncio.Event, stats: Stats,
) -> None:
    """Send ``RATE`` messages a second until ``stop``; a failed call marks its messages."""
    publisher: tp.Any = client.publisher(ledger.stream, cls=cls, name='soak-' + ledger.key)
    async with publisher as p:
        pace = Pace(BATCH / RATE)
        while not stop.is_set():
            first = ledger.sent
            seqs = range(first, first + BATCH)
            ledger.sent += BATCH
            try:
                if cls in (Publisher, PublisherBin):
                    for i, seq in enumerate(seqs):
                        try:
                            await p.send(body(ledger, seq))
                        except RbFlyError:
                            for s in seqs[i:]:
                                ledger.failed.add(s)
                            raise
                elif cls is PublisherBatchLimit:
                    for seq in seqs:
                        await p.batch(body(ledger, seq), max_len=BATCH * 2)
                    await p.flush()
                elif cls is PublisherPipelined:
                    for seq in seqs:
                        await p.send(body(ledger, seq))
                    await p.flush()
                else:
                    for seq in seqs:
                        p.batch(body(ledger, seq))
                    await p.flush()
            except RbFlyError as ex:
                ledger.failures += 1
                stats.errors['{}: {}'.format(ledger.key, type(ex).__name__)] += 1
                for seq in seqs:
                    ledger.failed.add(seq)
            await pace.wait()
        if cls is PublisherPipelined:
            with contextlib.suppress(RbFlyError):
                await p.flush()

async def publish_super(
        client: StreamsClient, super_stream: str, ledger: Ledger, stop: asyncio.Event,
        stats: Stats,
) -> None:
    """A deduplicating super stream publisher, routing by hash of the sequence number."""
    def key(msg: tp.Any) -> str:
        return str(msg).rsplit(':', 1)[1]

    async with client.super_stream_publisher(
            super_stream, key, name='soak-super', cls=Publisher) as pub:
        pace = Pace(BATCH / RATE)
        while not stop.is_set():
            first = ledger.sent
            ledger.sent += BATCH
            for seq in range(first, first + BATCH):
                try:
                    await pub.send(body(ledger, seq))
                except RbFlyError as ex:
                    ledger.failures += 1
                    ledger.failed.add(seq)
                    stats.errors['super: {}'.format(type(ex).__name__)] += 1
            await pace.wait()

#
# consumers
#
async def consume(client: StreamsClient, stream: str, seen: Seen, binary: bool) -> None:
    async for msg in client.subscribe(stream, offset=Offset.FIRST, amqp=not binary):
        seen.see(stream, msg)

async def consume_chunks(client: StreamsClient, stream: str, seen: Seen) -> None:
    async for chunk in client.subscribe_chunks(stream, offset=Offset.FIRST):
        for msg in chunk:
            seen.see(stream, msg.body)

async def consume_super(client: StreamsClient, super_stream: str, seen: Seen) -> None:
    async for msg in client.subscribe_super_stream(super_stream, offset=Offset.FIRST):
        seen.see(get_message_ctx().stream or '', msg)

async def read_all(client: StreamsClient, stream: str, seen: Seen, binary: bool) -> None:
    """Read a stream from its start to its last committed chunk (RabbitMQ 3.11+)."""
    last = (await client.stream_stats(stream))['committed_chunk_id']
    if last < 0:
        return
    async with asyncio.timeout(120):
        async for chunk in client.subscribe_chunks(stream, offset=Offset.FIRST, amqp=not binary):
            for msg in chunk:
                seen.see(stream, msg.body)
            if chunk.first_offset >= last:
                break

def check(ledger: Ledger, seen: Seen) -> tuple[int, int]:
    """Confirmed messages missing from what was seen; messages never sent that were seen."""
    bits = seen.bits[ledger.key]
    lost = sum(1 for n in range(ledger.sent) if ledger.confirmed(n) and n not in bits)
    unknown = sum(1 for n in range(ledger.sent, ledger.sent + 10 * BATCH) if n in bits)
    return lost, unknown

#
# faults
#
async def run(cmd: list[str]) -> str:
    """
    Run a broker script; its output. The output goes to a file, not a pipe:
    a broker it starts inherits the descriptors, and a pipe would never
    reach its end.
    """
    with tempfile.TemporaryFile() as out:
        proc = await asyncio.create_subprocess_exec(
            *cmd, stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=out,
        )
        code = await proc.wait()
        out.seek(0)
        text = out.read().decode(errors='replace')
    if code:
        raise RuntimeError('{} failed: {}'.format(' '.join(cmd), text[-500:]))
    return text

async def cut_connections(
        proxy: Proxy, stop: asyncio.Event, stats: Stats, rng: random.Random,
        gap: tuple[float, float],
) -> None:
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), rng.uniform(*gap))
        if not stop.is_set():
            stats.faults['connection cuts'] += 1
            stats.faults['connections cut'] += proxy.cut()

async def restart_broker(
        script: str, broker: str, stop: asyncio.Event, stats: Stats, every: float,
) -> None:
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)
        if not stop.is_set():
            logger.info('restarting broker %s', broker)
            await run([script, 'restart', broker])
            stats.faults['broker restarts'] += 1

async def kill_nodes(
        script: str, stop: asyncio.Event, stats: Stats, rng: random.Random,
        every: float, down: float, streams: list[str],
) -> None:
    nodes = ['r1', 'r2', 'r3']
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)
        if stop.is_set():
            break
        # a leader of one of the soak's streams, so that its publisher moves
        out = await run([script, 'leader', rng.choice(streams)])
        leader = out.strip().split('@')[0]
        node = leader if leader in nodes else rng.choice(nodes)
        logger.info('killing %s (leader of a soak stream: %s)', node, leader == node)
        await run([script, 'kill', node])
        stats.faults['node kills'] += 1
        stats.faults['leader kills'] += leader == node
        await asyncio.sleep(down)
        await run([script, 'revive', node])

async def sample(stop: asyncio.Event, stats: Stats) -> None:
    while not stop.is_set():
        stats.rss.append(rss_kib())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 2)

#
# a phase: one broker behind a proxy, or the cluster
#
async def phase(
        name: str, urls: list[str], seconds: float, faults: tp.Callable[
            [asyncio.Event, Stats, list[str]], list[tp.Coroutine[tp.Any, tp.Any, None]]],
        stats: Stats, verify_urls: list[str],
) -> dict[str, tp.Any]:
    tag = uuid.uuid4().hex[:6]
    client = streams_client(urls[0]) if len(urls) == 1 else streams_client(urls)
    ledgers = [
        Ledger(key, 'soak-{}-{}-{}'.format(name, key, tag), binary)
        for key, _, binary in PUBLISHERS
    ]
    super_stream = 'soak-{}-super-{}'.format(name, tag)
    super_ledger = Ledger('super', super_stream)
    for ledger in ledgers:
        await client.create_stream(ledger.stream)
    partitions = await client.create_super_stream(super_stream, 3)
    live = Seen('async for')
    chunks = Seen('chunk API')
    live_super = Seen('super stream')
    stop = asyncio.Event()
    stop_faults = asyncio.Event()
    tasks = [
        asyncio.create_task(publish(client, cls, ledger, stop, stats))
        for (_, cls, _), ledger in zip(PUBLISHERS, ledgers, strict=True)
    ]
    tasks.append(asyncio.create_task(
        publish_super(client, super_stream, super_ledger, stop, stats),
    ))
    consumers = [
        asyncio.create_task(consume(client, ledger.stream, live, ledger.binary))
        for ledger in ledgers
    ]
    consumers.append(asyncio.create_task(consume_chunks(client, ledgers[3].stream, chunks)))
    consumers.append(asyncio.create_task(consume_super(client, super_stream, live_super)))
    fault_tasks = [asyncio.create_task(c) for c in faults(
        stop_faults, stats, [ledger.stream for ledger in ledgers] + partitions,
    )]
    started = time.monotonic()
    await asyncio.sleep(seconds)
    logger.info('%s: stopping the faults', name)
    stop_faults.set()
    await asyncio.gather(*fault_tasks)
    logger.info('%s: stopping the publishers', name)
    stop.set()
    async with asyncio.timeout(300):
        await asyncio.gather(*tasks)
    logger.info('%s: waiting for the live consumers', name)
    # the live consumers catch up with what was stored
    sent = sum(ledger.sent for ledger in ledgers)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if live.messages >= sent - sum(ledger_failed(lg) for lg in ledgers) \
                and live_super.messages >= super_ledger.sent - super_ledger.failures:
            break
        await asyncio.sleep(1)
    await asyncio.sleep(2)
    for t in consumers:
        t.cancel()
    await asyncio.gather(*consumers, return_exceptions=True)
    elapsed = time.monotonic() - started
    await client.disconnect()

    # read everything back, with a client of its own and no faults
    logger.info('%s: reading back', name)
    stored = Seen('stored')
    reader = streams_client(verify_urls[0]) if len(verify_urls) == 1 \
        else streams_client(verify_urls)
    try:
        for ledger in ledgers:
            await read_all(reader, ledger.stream, stored, ledger.binary)
        for p in partitions:
            await read_all(reader, p, stored, False)
        for ledger in ledgers:
            await reader.delete_stream(ledger.stream)
        await reader.delete_super_stream(super_stream)
    finally:
        await reader.disconnect()

    return report(name, elapsed, ledgers, super_ledger, stored, live, chunks, live_super,
                  seconds)

def report(
        name: str, elapsed: float, ledgers: list[Ledger], super_ledger: Ledger, stored: Seen,
        live: Seen, chunks: Seen, live_super: Seen, publishing: float,
) -> dict[str, tp.Any]:
    """
    The figures of a phase: what was sent, confirmed, stored and seen.

    :param publishing: Seconds the publishers ran (``elapsed`` adds the
        time the live consumers took to catch up).
    """
    result: dict[str, tp.Any] = {
        'phase': name, 'seconds': round(elapsed), 'publishing seconds': publishing,
        'publishers': {},
    }
    lost = dup = unknown = live_missing = 0
    for ledger in [*ledgers, super_ledger]:
        lost_n, unknown_n = check(ledger, stored)
        confirmed = ledger.sent - ledger_failed(ledger)
        watcher = live_super if ledger is super_ledger else live
        missing_live, _ = check(ledger, watcher)
        result['publishers'][ledger.key] = {
            'sent': ledger.sent, 'confirmed': confirmed, 'failed calls': ledger.failures,
            'lost': lost_n, 'missing at live consumer': missing_live,
        }
        lost += lost_n
        unknown += unknown_n
        live_missing += missing_live
    chunk_missing, _ = check(ledgers[3], chunks)
    dup = stored.duplicates
    result.update({
        'messages sent': sum(lg.sent for lg in [*ledgers, super_ledger]),
        'messages stored': stored.messages,
        'lost (confirmed, not stored)': lost,
        'duplicated (stored twice)': dup,
        'out of order (stored)': stored.out_of_order,
        'live consumers: duplicates': live.duplicates + chunks.duplicates + live_super.duplicates,
        'live consumers: out of order': live.out_of_order + chunks.out_of_order
        + live_super.out_of_order,
        'live consumers: confirmed messages not seen': live_missing + chunk_missing,
        'never sent, yet stored': unknown,
    })
    return result

def ledger_failed(ledger: Ledger) -> int:
    return sum(bin(b).count('1') for b in ledger.failed.data)

def too_few_confirmed(results: list[dict[str, tp.Any]]) -> list[str]:
    """
    The publishers of each phase that had under ``CONFIRMED_FLOOR`` of
    what they sent confirmed, or sent under ``SENT_FLOOR`` of a
    fault-free run's messages, each with its figures.
    """
    short = []
    for r in results:
        least = round(SENT_FLOOR * RATE * r['publishing seconds'])
        for key, p in r['publishers'].items():
            floor = math.ceil(CONFIRMED_FLOOR * p['sent'])
            if p['confirmed'] < max(floor, least):
                short.append('{}/{}: {:,} confirmed of {:,} sent ({:,} failed calls),'
                             ' under the floor of {:,}'.format(
                                 r['phase'], key, p['confirmed'], p['sent'], p['failed calls'],
                                 max(floor, least)))
    return short

def failed_calls(results: list[dict[str, tp.Any]]) -> dict[str, int]:
    """Failed publishing calls by publisher, over the phases."""
    calls: collections.Counter[str] = collections.Counter()
    for r in results:
        for key, p in r['publishers'].items():
            calls[key] += p['failed calls']
    return dict(calls)

def failures(results: list[dict[str, tp.Any]], leaked: bool) -> list[str]:
    """What failed the run: messages lost, too few confirmed, resources left over."""
    problems = []
    bad = [
        r['phase'] for r in results
        if r['lost (confirmed, not stored)'] or r['duplicated (stored twice)']
        or r['out of order (stored)'] or r['live consumers: duplicates']
        or r['live consumers: out of order']
        or r['live consumers: confirmed messages not seen'] or r['never sent, yet stored']
    ]
    if bad:
        problems.append('messages lost, duplicated or out of order in {}'.format(bad))
    if short := too_few_confirmed(results):
        problems.append('too few messages confirmed: {}'.format('; '.join(short)))
    if leaked:
        problems.append('tasks or file descriptors left over')
    return problems

def summary_line(
        minutes: float, results: list[dict[str, tp.Any]], faults: collections.Counter[str],
) -> str:
    """The run in one line (what CI prints): messages, faults, failed calls, losses."""
    calls = failed_calls(results)
    return ('soak: {:g} min, {:,} messages sent, {:,} confirmed, {} faults ({}),'
            ' failed calls {:,} ({}), lost {}, duplicated {}'.format(
                minutes, sum(r['messages sent'] for r in results),
                sum(p['confirmed'] for r in results for p in r['publishers'].values()),
                sum(v for k, v in faults.items()
                    if k not in ('connections cut', 'leader kills')),  # parts of others
                ', '.join('{} {}'.format(v, k) for k, v in faults.items()),
                sum(calls.values()), ', '.join('{} {}'.format(k, v) for k, v in calls.items()),
                sum(r['lost (confirmed, not stored)'] for r in results),
                sum(r['duplicated (stored twice)'] for r in results)))

async def main(args: argparse.Namespace) -> int:
    import signal
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR2, dump_tasks)
    rng = random.Random(args.seed)
    stats = Stats()
    # one connection before counting: uvloop opens /dev/null once per loop
    # on the first connection, and keeps it until the loop closes
    warm = streams_client(args.url)
    await warm.stream_exists('soak-warm-up')
    await warm.disconnect()
    await asyncio.sleep(0)
    tasks_before = len(asyncio.all_tasks())
    fds_before = fds()
    rss_before = rss_kib()
    stop_sampling = asyncio.Event()
    sampler = asyncio.create_task(sample(stop_sampling, stats))
    total = args.minutes * 60
    cluster = args.cluster.replace(',', ' ').split()
    single_seconds = total / 2 if cluster else total
    quick = args.minutes <= 2
    results = []

    # one broker behind a proxy: connections cut, the broker restarted
    p = urlsplit(args.url)
    proxy = Proxy(p.hostname or 'localhost', p.port or 5552)
    await proxy.start()
    url = '{}://{}@127.0.0.1:{}/'.format(p.scheme, p.netloc.split('@')[0], proxy.port)

    def single_faults(
            stop: asyncio.Event, stats: Stats, streams: list[str],
    ) -> list[tp.Coroutine[tp.Any, tp.Any, None]]:
        gap = (3.0, 8.0) if quick else (5.0, 20.0)
        restart_every = single_seconds / 2 if quick else 120.0
        return [
            cut_connections(proxy, stop, stats, rng, gap),
            restart_broker(args.brokers_script, args.broker, stop, stats, restart_every),
        ]

    try:
        results.append(await phase('single', [url], single_seconds, single_faults, stats,
                                   [args.url]))
    finally:
        await proxy.close()

    if cluster:
        def cluster_faults(
                stop: asyncio.Event, stats: Stats, streams: list[str],
        ) -> list[tp.Coroutine[tp.Any, tp.Any, None]]:
            every, down = (15.0, 5.0) if quick else (50.0, 15.0)
            return [kill_nodes(args.cluster_script, stop, stats, rng, every, down, streams)]
        results.append(await phase('cluster', cluster, total - single_seconds,
                                   cluster_faults, stats, cluster))

    stop_sampling.set()
    await sampler
    await asyncio.sleep(1)
    leftover = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    fds_after = fds()
    summary: dict[str, tp.Any] = {
        'minutes': args.minutes, 'seed': args.seed, 'phases': results,
        'faults': dict(stats.faults), 'errors raised by publishing calls': dict(stats.errors),
        'rss KiB': {'start': rss_before, 'max': max(stats.rss, default=0),
                    'final': rss_kib(), 'samples': len(stats.rss),
                    'per minute': stats.rss[::30]},
        'tasks': {'before': tasks_before, 'after': len(leftover) + 1,
                  'left over': [repr(t.get_coro()) for t in leftover]},
        'file descriptors': {
            'before': len(fds_before), 'after': len(fds_after),
            'new': sorted(v for k, v in fds_after.items() if fds_before.get(k) != v),
        },
    }
    print(json.dumps(summary, indent=2))
    if args.json:
        await asyncio.to_thread(
            Path(args.json).write_text, json.dumps(summary, indent=2) + '\n',
        )
    leaked = summary['tasks']['after'] > tasks_before \
        or len(fds_after) > len(fds_before)
    print('{}, max RSS {:.1f} MiB (start {:.1f}, final {:.1f}), tasks {} -> {},'
          ' fds {} -> {}'.format(
              summary_line(args.minutes, results, stats.faults),
              summary['rss KiB']['max'] / 1024, rss_before / 1024,
              summary['rss KiB']['final'] / 1024, tasks_before, summary['tasks']['after'],
              len(fds_before), len(fds_after)))
    problems = failures(results, leaked)
    for problem in problems:
        print('FAILED: {}'.format(problem))
    return 1 if problems else 0

def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--minutes', type=float, default=30, help='length of the run (30)')
    parser.add_argument('--ci', action='store_true', help='a two-minute run')
    parser.add_argument('--url', default=os.environ.get(
        'RBFLY_URL4', 'rabbitmq-stream://guest:guest@localhost:5553/'),
        help='the single broker (default: $RBFLY_URL4)')
    parser.add_argument('--broker', default='4', help='its name for scripts/brokers.sh (4)')
    parser.add_argument('--brokers-script', default=str(ROOT / 'scripts' / 'brokers.sh'))
    parser.add_argument('--cluster', default=os.environ.get('RBFLY_CLUSTER_URLS', ''),
                        help='cluster node URLs, separated by spaces or commas'
                             ' ($RBFLY_CLUSTER_URLS); empty: no cluster phase')
    parser.add_argument('--cluster-script', default=str(ROOT / 'scripts' / 'cluster.sh'))
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--json', help='write the figures to this file')
    args = parser.parse_args()
    if args.ci:
        args.minutes = 2
    return args

def dump_tasks() -> None:
    for task in asyncio.all_tasks():
        task.print_stack(limit=8, file=sys.stderr)

if __name__ == '__main__':
    import faulthandler
    import signal
    faulthandler.register(signal.SIGUSR1)
    logging.basicConfig(level=logging.WARNING, format='%(asctime)s %(name)s %(message)s')
    logging.getLogger('soak').setLevel(logging.INFO)
    args = parse_args()
    try:
        import uvloop
        runner: tp.Any = uvloop.run
    except ImportError:
        runner = asyncio.run
    sys.exit(runner(main(args)))
