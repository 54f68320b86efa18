"""
A worker of the consumer group (:py:mod:`soak.consumer_group` starts
several): a single active consumer of every partition of a super stream,
under the group's name, with automatic offset tracking, as a service
would be deployed several times::

    python -m soak.consumer_group.worker --url URL [URL...] --super-stream S --group G --log PATH

Several URLs are the nodes of a cluster (the client connects to the first
it reaches). With ``--verbose``, rbfly's log at INFO (reconnections,
metadata updates, consumer updates) goes to stderr, with wall-clock times
to compare with the broker's log.

Processing a message is appending a line ``<partition> <offset> <seq>
<time>`` to its log, with one ``os.write`` to a file opened with
``O_APPEND``: a SIGKILL leaves whole lines, and a line is written once the
message is processed (the format and the markers:
:py:mod:`soak.consumer_group.logs`).

SIGTERM (or SIGINT) stops it as ``examples/graceful_shutdown.py`` stops its
consumer: the task iterating over the messages is cancelled where it
waits for the next, the iterator is closed (``contextlib.aclosing``, which
stores the offset of the last message processed), the client is closed
(``async with``), a ``# stopped`` marker is written and it exits with 0.
It waits for nothing else, unless ``--wait-stored`` says so: the client
alone should hand the partitions over without duplicates.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Sequence

from rbfly.amqp import MessageCtx
from rbfly.streams import (
    ConsumerUpdateContext,
    Offset,
    StateChange,
    StreamsClient,
    get_message_ctx,
    streams_client,
)
from rbfly.streams.error import NoOffset

class Log:
    """The worker's log: one ``os.write`` per line, appended."""
    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def mark(self, kind: str, *fields: object) -> None:
        line = ' '.join(['#', kind, *(str(f) for f in fields), '{:.6f}'.format(time.monotonic())])
        os.write(self.fd, (line + '\n').encode())

    def processed(self, partition: str, offset: int, seq: int) -> None:
        os.write(self.fd, b'%s %d %d %.6f\n' % (
            partition.encode(), offset, seq, time.monotonic()))

    def close(self) -> None:
        os.close(self.fd)

def sequence_number(body: object) -> int:
    """The sequence number of a message body (``{'seq': n}``)."""
    seq = body.get('seq') if isinstance(body, dict) else None
    if not isinstance(seq, int):
        raise ValueError('not a message of the producer: {!r}'.format(body))
    return seq

async def consume(
        client: StreamsClient, args: argparse.Namespace, log: Log, last: dict[str, int],
) -> None:
    """Process messages until cancelled; ``last`` gets each partition's last offset processed."""
    def on_state(change: StateChange) -> None:
        log.mark('state', change.stream, change.state.value)

    def on_update(update: ConsumerUpdateContext) -> None:
        # where it starts stays the client's choice (after the stored offset)
        log.mark('update', update.stream, 'active' if update.active else 'inactive')

    offset = Offset.FIRST if args.offset == 'first' else Offset.reference(args.group)
    if args.handlers:
        async def handle(msg: MessageCtx) -> None:
            partition = msg.stream or '?'
            log.processed(partition, msg.stream_offset, sequence_number(msg.body))
            last[partition] = msg.stream_offset

        # cancelled, the run drains its handlers, commits and unsubscribes
        await client.process_super_stream(
            args.super_stream, handle, concurrency=args.handlers, key=lambda m: m.stream,
            name=args.group, single_active=True, offset=offset,
            store_every=args.store_every, store_interval=args.store_interval,
            on_state=on_state, consumer_update=on_update,
        )
        return
    messages = client.subscribe_super_stream(
        args.super_stream, name=args.group, single_active=True, offset=offset,
        store_every=args.store_every, store_interval=args.store_interval, on_state=on_state,
        consumer_update=on_update,
    )
    # closing the iterator (here when the task is cancelled at `async for`)
    # stores the offset of the last message processed
    async with contextlib.aclosing(messages):
        async for body in messages:
            ctx = get_message_ctx()
            partition = ctx.stream or '?'
            log.processed(partition, ctx.stream_offset, sequence_number(body))
            last[partition] = ctx.stream_offset

async def wait_stored(
        client: StreamsClient, group: str, last: dict[str, int], timeout: float,
) -> bool:
    """
    Wait until the broker has, for each partition the worker processed,
    an offset at or after the last it processed (a StoreOffset has no
    answer). ``False`` after ``timeout`` seconds.
    """
    pending = dict(last)
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        for partition, offset in list(pending.items()):
            with contextlib.suppress(NoOffset):
                if await client.query_offset(partition, group) >= offset:
                    del pending[partition]
        if pending:
            await asyncio.sleep(0.05)
    return not pending

async def work(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    log = Log(args.log)
    log.mark('start', os.getpid())
    last: dict[str, int] = {}
    async with streams_client(args.url if len(args.url) > 1 else args.url[0]) as client:
        consumer = asyncio.create_task(consume(client, args, log, last))
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait([consumer, stopping], return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        consumer.cancel()
        await asyncio.wait([consumer])  # not raising the CancelledError we caused
        if not consumer.cancelled():
            consumer.result()  # its error: the worker fails
            raise RuntimeError('the subscription ended')
        log.mark('closed')
        if args.wait_stored:
            stored = await wait_stored(client, args.group, last, 10)
            log.mark('stored' if stored else 'not-stored')
    log.mark('stopped')
    log.close()

def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('--url', required=True, nargs='+',
                        help='the broker, or the nodes of a cluster')
    parser.add_argument('--super-stream', required=True)
    parser.add_argument('--group', required=True, help='the consumers\' name')
    parser.add_argument('--log', required=True, help='file the messages processed go to')
    parser.add_argument('--offset', choices=('first', 'reference'), default='first',
                        help='offset of the subscription: Offset.FIRST (default) or'
                             ' Offset.reference(group)')
    parser.add_argument('--store-every', type=int, default=100)
    parser.add_argument('--handlers', type=int, default=0,
                        help='concurrent handlers (client.process_super_stream, in order per'
                             ' partition); 0: an async for loop')
    parser.add_argument('--store-interval', type=float, default=1)
    parser.add_argument('--wait-stored', action='store_true',
                        help='after closing the subscription, wait until the broker has'
                             ' the offsets (the application doing what the client should)')
    parser.add_argument('--verbose', action='store_true',
                        help="rbfly's log at INFO to stderr")
    return parser.parse_args(argv)

def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.verbose:
        logging.basicConfig(
            level=logging.WARNING,
            format='%(asctime)s.%(msecs)03d %(name)s %(levelname)s %(message)s',
            datefmt='%Y-%m-%d %H:%M:%S',
        )
        logging.getLogger('rbfly').setLevel(logging.INFO)
    asyncio.run(work(args))
    return 0

if __name__ == '__main__':
    sys.exit(main())
