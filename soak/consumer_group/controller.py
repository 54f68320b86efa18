"""
A consumer group through rolling deploys and crashes: worker processes,
single active consumers of one name of every partition of a super
stream, restarted one at a time with SIGTERM, then killed one at a time
with SIGKILL, while a producer publishes; then a check that each message
was processed once (rbfly issue 30)::

    python -m soak.consumer_group [--url URL] [--partitions 6] [--workers 3] ...

The run:

1. creates a super stream of ``--partitions`` partitions with a unique
   name (deleted at the end);
2. starts ``--workers`` workers (:py:mod:`soak.consumer_group.worker`,
   each a process with its own client: ``subscribe_super_stream(name=...,
   single_active=True, offset=Offset.FIRST, store_every=100,
   store_interval=1)``) and waits until each has subscribed to every
   partition;
3. starts the producer (:py:mod:`soak.consumer_group.producer`, a process):
   ``--messages`` messages at ``--rate`` a second, each with its sequence
   number, routed by hash;
4. after ``--warmup`` seconds, a rolling deploy: ``--restarts`` times, the
   oldest worker gets SIGTERM, the controller waits for its exit, starts a
   replacement, waits until it has subscribed, then ``--interval``
   seconds; then ``--kills`` times, the worker owning the most partitions
   gets SIGKILL and is replaced the same way;
5. waits until the producer is done and every confirmed message was
   processed (or ``--drain-timeout`` passes), then stops the workers with
   SIGTERM;
6. reads the logs (:py:mod:`soak.consumer_group.analysis`) and prints the
   figures: messages lost, duplicates of graceful hand-offs (the goal is
   none) and after each kill (within the bound automatic offset tracking
   allows), the pauses of the hand-offs, the workers' exits.

On the three-node cluster of ``scripts/cluster.sh`` (``--cluster``), the
workers connect to different nodes (worker i to node i first), the
partitions have a member on every node (``initial-cluster-size`` 3), and
``--kill-leader N`` kills the node of partition N's leader (SIGKILL of
its broker) after the warm-up, brings it back ``--revive-after`` seconds
later, and lists, before the workers stop, the members the broker keeps
in each partition's group (:py:mod:`soak.consumer_group.cluster`): a
member more than the workers running is a ghost, and a partition without
an active member processes nothing (rbfly issue 30). ``--verbose`` puts
rbfly's INFO log of each worker in ``worker-N.err``.

It exits with 0 when the goals are met, 1 when not, 3 when it could not
run (no broker). Every wait has a deadline; the child processes are
killed at the end whatever happens (an error, Ctrl-C); the logs are in a
temporary directory, removed after a run that met its goals and kept
otherwise (its path is printed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rbfly.error import RbFlyError
from rbfly.streams import streams_client
from soak.consumer_group.analysis import Figures, analyse_directory
from soak.consumer_group.cluster import (
    Cluster,
    cluster_script,
    cluster_urls,
)
from soak.consumer_group.config import GROUP, Config
from soak.consumer_group.logs import read_producer_log
from soak.consumer_group.processes import Group
from soak.consumer_group.report import as_json, table
from soak.consumer_group.run import Scenario, save_run

@dataclass
class Result:
    """A run's figures, and where its logs are."""
    figures: Figures
    log_dir: Path

    @property
    def ok(self) -> bool:
        return self.figures.ok

    def text(self) -> str:
        return table(self.figures) + ('\nlogs: {}'.format(self.log_dir))

class HarnessError(Exception):
    """The run could not be made: the super stream could not be created (no broker)."""

def _client_url(urls: list[str]) -> str | list[str]:
    return urls if len(urls) > 1 else urls[0]

async def _create(urls: list[str], super_stream: str, partitions: int) -> list[str]:
    """
    Create the super stream; on a cluster, with a member of each partition
    on every node, and wait until each has its leader and replicas.
    """
    cluster = len(urls) > 1
    arguments = {'initial-cluster-size': str(len(urls))} if cluster else None
    async with asyncio.timeout(60), streams_client(_client_url(urls)) as client:
        names = await client.create_super_stream(
            super_stream, partitions, arguments=arguments, exist_ok=False,
        )
        for name in names if cluster else ():
            while True:  # the replicas start after the leader
                info = await client.stream_metadata(name)
                if info.leader is not None and len(info.replicas) == len(urls) - 1:
                    break
                await asyncio.sleep(0.1)
        return names

async def _delete(urls: list[str], super_stream: str) -> None:
    async with asyncio.timeout(30), streams_client(_client_url(urls)) as client:
        await client.delete_super_stream(super_stream)

def _scenario(group: Group) -> None:
    """The steps of the run, on a group whose super stream exists."""
    c = group.config
    for _ in range(c.workers):
        group.start_ready()
    group.start_producer()
    group.note('producer started: {:,} messages at {:g}/s'.format(c.messages, c.rate))
    # warm-up: publishing, and every worker processing
    group.wait_until(lambda: all(group.processed[r.index] for r in group.running()),
                     c.ready_timeout)
    group.sleep(c.warmup)

    cluster = group.cluster
    if cluster is not None and c.kill_leader is not None:
        group.kill_leader(cluster, c.kill_leader)
        group.sleep(c.revive_after)
        group.revive(cluster)

    for n in range(c.restarts):
        if not group.running():
            group.problem('no worker left to restart')
            break
        old = min(group.running(), key=lambda r: r.started)
        group.stop(old, 'term')
        group.note('restart {}: worker {} got SIGTERM, exit {} after {:.2f} s'.format(
            n + 1, old.index, old.exit_code, (old.exit_time or 0) - (old.stop_time or 0)))
        group.start_ready()
        group.sleep(c.interval)

    for n in range(c.kills):
        if not group.running():
            group.problem('no worker left to kill')
            break
        # the worker owning most partitions, so that the kill takes some;
        # the oldest of those
        victim = max(group.running(), key=lambda r: (group.owned(r), -r.started))
        owned = group.owned(victim)
        group.stop(victim, 'kill')
        group.note('kill {}: worker {} (owning {} partitions) got SIGKILL'.format(
            n + 1, victim.index, owned))
        group.start_ready()
        group.sleep(c.interval)

    producer = group.producer
    assert producer is not None
    publishing = c.messages / c.rate
    if not group.wait_until(lambda: producer.poll() is not None,
                            group.t0 + 2 * publishing + 30 - time.monotonic()):
        group.problem('the producer did not finish in time')
        producer.kill()
        producer.wait(10)
    if producer.returncode:
        group.problem('the producer failed with {} (see {})'.format(
            producer.returncode, group.directory / 'producer.err'))
    confirmed = read_producer_log(group.directory / 'producer.log').confirmed
    group.note('producer done: {:,} confirmed'.format(len(confirmed)))
    if group.wait_until(lambda: confirmed <= group.seen, c.drain_timeout):
        group.note('every confirmed message processed')
    else:
        group.problem('{:,} confirmed messages not processed after {:g} s'.format(
            len(confirmed - group.seen), c.drain_timeout))
    group.sleep(min(c.store_interval, 2))  # the last offsets stored: nothing comes again
    if cluster is not None:
        group.list_members(cluster)
    group.stop_all()
    group.note('workers stopped')

def run(config: Config, echo: Callable[[str], None] | None = None) -> Result:
    """
    Run the scenario against ``config.url``; the figures and the goals.

    :raises HarnessError: When the super stream cannot be created (no
        broker).
    """
    say = echo or (lambda text: print(text, file=sys.stderr, flush=True))
    super_stream = 'rbfly-group-{}'.format(uuid.uuid4().hex[:10])
    try:
        partitions = asyncio.run(_create(config.urls, super_stream, config.partitions))
    except (OSError, TimeoutError, RbFlyError) as ex:
        raise HarnessError('cannot create super stream at {}: {}'.format(
            config.where, ex)) from ex
    directory = config.log_dir or Path(tempfile.mkdtemp(prefix='rbfly-group-'))
    directory.mkdir(parents=True, exist_ok=True)
    group = Group(config, directory, super_stream, partitions, say)
    if config.cluster:
        group.cluster = Cluster(cluster_script(),
                                ['r{}'.format(i) for i in range(1, len(config.cluster) + 1)])
    ok = False
    try:
        group.note('super stream {} ({} partitions) at {}; logs in {}'.format(
            super_stream, len(partitions), config.where, directory))
        _scenario(group)
        scenario = Scenario(
            partitions, config.store_every, config.store_interval, group.t0,
            config.restarts, config.kills, config.messages, config.handlers,
        )
        save_run(directory, scenario, group.runs, group.problems, group.leader_kills,
                 group.groups)
        result = Result(analyse_directory(directory), directory)
        ok = result.ok
        return result
    finally:
        group.kill_everything()
        try:
            asyncio.run(_delete(config.urls, super_stream))
        except (OSError, TimeoutError, RbFlyError) as ex:
            say('could not delete super stream {}: {}'.format(super_stream, ex))
        if ok and config.log_dir is None and not config.keep_logs:
            shutil.rmtree(directory, ignore_errors=True)
        else:
            say('logs kept in {}'.format(directory))

def header(config: Config) -> str:
    return ('consumer group: {} workers, {} partitions, {:,} messages at {:g}/s;'
            ' {} restarts (SIGTERM), {} kills (SIGKILL), {:g} s apart; store_every {},'
            ' store_interval {:g} s, offset {}{}{}; broker {}'.format(
                config.workers, config.partitions, config.messages, config.rate,
                config.restarts, config.kills, config.interval, config.store_every,
                config.store_interval, config.offset,
                ', workers wait for their offsets' if config.wait_stored else '',
                '' if config.kill_leader is None else
                '; the node of partition {}\'s leader killed, back after {:g} s'.format(
                    config.kill_leader, config.revive_after),
                config.where))

def parse_args(argv: Sequence[str] | None = None) -> tuple[Config, Path | None, Path | None]:
    """
    The run's parameters, where its figures are written as JSON (if
    anywhere), and the directory of a run to analyse again (if any).
    """
    parser = argparse.ArgumentParser(
        prog='python -m soak.consumer_group', description=__doc__.split('\n\n')[0].strip())
    default_url = os.environ.get('RBFLY_URL43', 'rabbitmq-stream://guest:guest@localhost:5556/')
    d = Config(url=default_url)
    add = parser.add_argument
    add('--url', default=d.url,
        help='RabbitMQ Streams broker, 3.13+ (default: $RBFLY_URL43 or localhost:5556;'
             ' $RBFLY_URL4 for RabbitMQ 4.0)')
    add('--partitions', type=int, default=d.partitions, help='(%(default)s)')
    add('--messages', type=int, default=d.messages, help='(%(default)s)')
    add('--rate', type=float, default=d.rate, help='messages a second (%(default)s)')
    add('--workers', type=int, default=d.workers, help='(%(default)s)')
    add('--restarts', type=int, default=d.restarts,
        help='workers restarted with SIGTERM, one at a time (%(default)s)')
    add('--kills', type=int, default=d.kills,
        help='workers killed with SIGKILL, one at a time (%(default)s)')
    add('--interval', type=float, default=d.interval,
        help='seconds between a replacement subscribed and the next restart (%(default)s)')
    add('--warmup', type=float, default=d.warmup,
        help='seconds of publishing before the first restart (%(default)s)')
    add('--store-every', type=int, default=d.store_every, help='(%(default)s)')
    add('--handlers', type=int, default=d.handlers,
        help='concurrent handlers a worker runs (client.process_super_stream), 0: async for'
             ' (%(default)s)')
    add('--store-interval', type=float, default=d.store_interval, help='(%(default)s)')
    add('--offset', choices=('first', 'reference'), default=d.offset,
        help='the workers\' subscription offset: Offset.FIRST or Offset.reference(group)'
             ' (%(default)s)')
    add('--wait-stored', action='store_true',
        help='the workers wait until the broker has their offsets before closing the client')
    add('--ready-timeout', type=float, default=d.ready_timeout, help='(%(default)s s)')
    add('--stop-timeout', type=float, default=d.stop_timeout, help='(%(default)s s)')
    add('--drain-timeout', type=float, default=d.drain_timeout, help='(%(default)s s)')
    add('--cluster', action='store_true',
        help='run on the three-node cluster of scripts/cluster.sh (its URLs from'
             ' $RBFLY_CLUSTER_URLS or scripts/cluster.sh env; --url is ignored)')
    add('--kill-leader', type=int, metavar='PARTITION',
        help='with --cluster: kill the node of the leader of this partition (its index)'
             ' after the warm-up')
    add('--revive-after', type=float, default=d.revive_after,
        help='seconds after which the killed node is brought back (%(default)s)')
    add('--verbose', action='store_true',
        help="the workers log rbfly's INFO messages (in worker-N.err)")
    add('--log-dir', type=Path, help='where the logs go (default: a temporary directory)')
    add('--keep-logs', action='store_true', help='keep them after a run that met its goals')
    add('--json', type=Path, help='write the figures to this file')
    add('--analyse', type=Path, metavar='DIR',
        help='run nothing: analyse again the logs a run left in DIR')
    args = parser.parse_args(argv)
    if args.workers < 1 or args.partitions < 1 or args.messages < 1 or args.rate <= 0:
        parser.error('workers, partitions, messages and rate must be positive')
    if args.kill_leader is not None and not args.cluster:
        parser.error('--kill-leader needs --cluster')
    json_path: Path | None = args.json
    again: Path | None = args.analyse
    options = {k: v for k, v in vars(args).items() if k not in ('json', 'analyse')}
    options['cluster'] = cluster_urls(cluster_script()) if args.cluster else None
    return Config(**options), json_path, again

class Stopped(Exception):
    """The controller got SIGTERM or SIGINT: the run ends, its children killed."""

def _stopped(signum: int, frame: object) -> None:
    raise Stopped(signal.Signals(signum).name)

def main(argv: Sequence[str] | None = None) -> int:
    config, json_path, again = parse_args(argv)
    if again is not None:
        figures = analyse_directory(again)
        print(table(figures))
        return 0 if figures.ok else 1
    print(header(config), flush=True)
    # raised where the controller is, so that run() kills the children and
    # keeps the logs (SIGINT too: a shell starting it in the background
    # may have it ignored, and it would not raise KeyboardInterrupt)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _stopped)
    try:
        result = run(config)
    except HarnessError as ex:
        print('cannot run: {}'.format(ex), file=sys.stderr)
        return 3
    except Stopped as ex:
        print('stopped by {}'.format(ex), file=sys.stderr)
        return 130
    print(result.text())
    if json_path is not None:
        document = as_json(result.figures)
        document['config'] = {k: (str(v) if isinstance(v, Path) else v)
                              for k, v in vars(config).items() if k not in ('url', 'cluster')}
        document['broker'] = config.where
        json_path.write_text(json.dumps(document, indent=2) + '\n')
    print('consumer group: {}'.format('ok' if result.ok else 'FAILED'))
    return 0 if result.ok else 1

__all__ = [
    'GROUP', 'Config', 'Group', 'HarnessError', 'Result', 'header', 'main', 'parse_args', 'run',
]

if __name__ == '__main__':
    sys.exit(main())
