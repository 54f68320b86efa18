"""
A worker of a consumer group reading a super stream (RabbitMQ 3.11+;
``--create`` needs 3.13+).

Run N copies of this program: they share the partitions of the super
stream, each partition processed by one worker at a time. The workers are
single active consumers of every partition under one name (``GROUP``):
the broker makes one of them active per partition and moves partitions as
workers come and go. A hand-off is exact: a worker losing a partition
commits the offset of the last message it processed there (automatic
offset tracking) before the broker activates the next worker, which
starts right after that offset. A new group starts at each partition's
first message.

On SIGTERM (or SIGINT, Ctrl-C) a worker stops its consumer
(``until_signal``): its handlers in flight finish, the offsets of the last
messages processed are committed, and its partitions move to the other
workers. It prints what it processed in this
run, per partition, and exits 0.

Start the first worker with ``--create`` (the super stream is created
unless it exists), then more, in other terminals; stop one with Ctrl-C
and see its partitions move::

    RBFLY_URL4=rabbitmq-stream://guest:guest@localhost:5553/ \\
        python consumer_group.py --super-stream orders --partitions 6 --create
    python consumer_group.py --super-stream orders
    python consumer_group.py --super-stream orders --seconds 10 --log orders.log

``--seconds`` stops a worker after that many seconds as SIGTERM would;
``--log FILE`` writes a line per message processed (``partition offset
body``; ``-`` for standard output). ``RBFLY_URL4`` is the URL of a
RabbitMQ 4 broker in rbfly's CI; else ``RBFLY_URL`` is used.
"""

import argparse
import asyncio
import contextlib
import os
import sys
import typing as tp

from rbfly.amqp import MessageCtx
from rbfly.streams import (
    ConsumerUpdateContext,
    Offset,
    StreamsClient,
    StreamsError,
    streams_client,
    until_signal,
)
from rbfly.streams.error import StreamDoesNotExist

URL = (
    os.environ.get('RBFLY_URL4') or os.environ.get('RBFLY_URL')
    or 'rabbitmq-stream://guest:guest@localhost:5552/'
)
GROUP = 'order-workers'  # the consumer name, under which the offsets are stored

class Work:
    """
    The processing of messages, and what this run processed per partition.

    Idempotent: a message can come again. Hand-offs and stops are exact,
    but when a worker dies (SIGKILL, a crash) or loses its connection, the
    next consumer of its partitions starts after the offset stored last
    (every ``store_every`` messages, ``store_interval`` seconds): the
    messages processed since then come again (at-least-once). Messages of
    a partition come in order, so a message at or before the last offset
    processed of its partition is one seen already, and skipped. This
    worker keeps that mark in memory, which covers its own reconnections;
    a service writing to a database keeps it there, updated in the same
    transaction as the effect (a table of partition and last offset), or
    makes the effect an upsert keyed by the message's own id.

    :ivar first: The first offset processed, per partition.
    :ivar last: The last offset processed, per partition.
    :ivar count: Messages processed, per partition.
    :ivar repeats: Messages seen again, skipped.
    :ivar active: The partitions this worker is active on.
    """
    def __init__(self, log: tp.TextIO | None) -> None:
        self.log = log
        self.first: dict[str, int] = {}
        self.last: dict[str, int] = {}
        self.count: dict[str, int] = {}
        self.repeats = 0
        self.active: set[str] = set()

    def process(self, partition: str, offset: int, body: object) -> None:
        last = self.last.get(partition)
        if last is not None and offset <= last:
            self.repeats += 1
            return
        if self.log is not None:  # the work: here, a line in the log, written at once
            print(partition, offset, repr(body), file=self.log, flush=True)
        self.first.setdefault(partition, offset)
        self.last[partition] = offset
        self.count[partition] = self.count.get(partition, 0) + 1

    def on_update(self, update: ConsumerUpdateContext) -> None:
        """The broker gives this worker a partition, or takes one away."""
        if update:  # active; it starts at update.offset (returning None keeps it)
            self.active.add(update.stream)
            start = 'stored offset {}'.format(update.stored_offset) \
                if update.stored_offset is not None else 'no offset stored'
            print('active on {} ({})'.format(update.stream, start), flush=True)
        else:  # the last message processed is committed
            self.active.discard(update.stream)
            print('inactive on {} (stored offset {})'.format(
                update.stream, update.stored_offset), flush=True)

async def consume(client: StreamsClient, super_stream: str, work: Work) -> int:
    """
    Process the messages of the partitions this worker is active on, until
    cancelled: up to 16 at a time, those of a partition in order (the key),
    each committed once processed and every message before it too.
    """
    async def handle(msg: MessageCtx) -> None:
        # msg.stream: the partition of the message
        work.process(tp.cast(str, msg.stream), msg.stream_offset, msg.body)

    return await client.process_super_stream(
        super_stream, handle, concurrency=16, key=lambda msg: msg.stream,
        name=GROUP, single_active=True,
        offset=Offset.FIRST,  # where a partition starts with no offset stored under GROUP
        store_every=1000, store_interval=1,  # a crash repeats at most 1,000 messages, 1 s
        consumer_update=work.on_update,
    )

async def worker(args: argparse.Namespace, log: tp.TextIO | None) -> Work:
    work = Work(log)
    async with streams_client(URL) as client:
        await client.stream_exists(args.super_stream)  # connects: the broker's version is known
        version = client.server_properties.get('version', '')
        need = (3, 13) if args.create else (3, 11)
        if tuple(int(v) for v in version.split('.')[:2] if v.isdigit()) < need:
            raise RuntimeError('{} needs RabbitMQ {}.{} or later, the broker is {}; set'
                               ' RBFLY_URL4 (or RBFLY_URL) to the URL of a newer one'.format(
                                   '--create' if args.create else 'a consumer group', *need,
                                   version))
        if args.create:  # (nothing happens when it exists)
            await client.create_super_stream(args.super_stream, args.partitions)
        try:
            partitions = await client.super_stream_partitions(args.super_stream)
        except StreamDoesNotExist:
            raise RuntimeError('no super stream {} (create it with --create)'.format(
                args.super_stream)) from None
        print('worker {} of group {}: super stream {} of {} partitions;'
              ' SIGTERM (or Ctrl-C) stops it'.format(
                  os.getpid(), GROUP, args.super_stream, len(partitions)), flush=True)
        # until SIGTERM or SIGINT (or --seconds): then the consumer is
        # cancelled, and it drains its handlers, commits and leaves
        await until_signal(consume(client, args.super_stream, work), timeout=args.seconds)
        print('stopped', flush=True)
        # the broker has the last offset processed of each partition held at
        # the end (or a later one: the next worker's); a failed commit was logged
        for status in await client.group_status(GROUP, super_stream=args.super_stream):
            last = work.last.get(status.stream)
            if status.stream in work.active and last is not None \
                    and (status.stored is None or status.stored < last):
                raise RuntimeError('offset {} of {} not committed'.format(last, status.stream))
    return work

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('--super-stream', default='rbfly-example-orders')
    parser.add_argument('--partitions', type=int, default=6,
                        help='partitions of the super stream --create creates')
    parser.add_argument('--create', action='store_true',
                        help='create the super stream unless it exists')
    parser.add_argument('--seconds', type=float, help='stop after this many seconds')
    parser.add_argument('--log', help='write a line per message processed to this file'
                        ' (- for standard output)')
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        log = None if args.log is None else sys.stdout if args.log == '-' \
            else stack.enter_context(open(args.log, 'a', encoding='utf-8'))
        try:
            work = asyncio.run(worker(args, log))
        except (RuntimeError, StreamsError) as ex:
            sys.exit('failed: {}'.format(ex))
    for partition in sorted(work.count):
        print('{}: offsets {}-{}, {} messages'.format(
            partition, work.first[partition], work.last[partition], work.count[partition]))
    print('ok: processed {} messages of {} partitions, {} seen again skipped;'
          ' offsets committed'.format(sum(work.count.values()), len(work.count), work.repeats))

if __name__ == '__main__':
    main()
