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

This module runs the phases (:py:func:`phase`) and the command line; the
soak's other modules are listed in :py:mod:`soak`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import sys
import time
import typing as tp
import uuid
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rbfly.streams import streams_client  # noqa: E402
from soak.faults import cut_connections, kill_nodes, restart_broker  # noqa: E402
from soak.ledger import Ledger, Seen, Stats, ledger_failed  # noqa: E402
from soak.resources import fds, rss_kib, sample  # noqa: E402
from soak.verdict import failures, report, summary_line  # noqa: E402
from soak.workers import (  # noqa: E402
    PUBLISHERS,
    consume,
    consume_chunks,
    consume_super,
    publish,
    publish_super,
    read_all,
)
from tests.integration.proxy import Proxy  # noqa: E402

logger = logging.getLogger('soak')

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
