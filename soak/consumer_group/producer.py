"""
The producer of the consumer group run (:py:mod:`soak.consumer_group`
starts it): publishes ``--messages`` messages ``{'seq': n}`` (n from 0) at
``--rate`` a second to a super stream, routed by the hash of ``str(n)``
(``super_stream_publisher``, ``routing='hash'``), in batches of what is
due every 10 ms, and appends each confirmed batch to its log::

    # start <time>
    c <first seq> <last seq> <time>
    # end <time>

A batch whose flush raises is not in the log: it may be stored or not,
and the analysis counts only confirmed messages as lost. The producer
then fails (exit 1): the run is not the one asked for.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Sequence

from rbfly.streams import PublisherBatchFast, streams_client

TICK = 0.01
"""Seconds between batches: what is due is sent every 10 ms (16 messages at 1,600 a second)."""

def routing_key(message: dict[str, int]) -> str:
    return str(message['seq'])

async def produce(args: argparse.Namespace) -> None:
    fd = os.open(args.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(line: str) -> None:
        os.write(fd, '{} {:.6f}\n'.format(line, time.monotonic()).encode())

    try:
        url = args.url if len(args.url) > 1 else args.url[0]
        async with streams_client(url) as client, client.super_stream_publisher(
                args.super_stream, routing_key, cls=PublisherBatchFast) as publisher:
            write('# start')
            start = time.monotonic()
            sent = 0
            while sent < args.messages:
                due = min(args.messages, int((time.monotonic() - start) * args.rate) + 1)
                if due > sent:
                    for seq in range(sent, due):
                        publisher.batch({'seq': seq})
                    await publisher.flush()
                    write('c {} {}'.format(sent, due - 1))
                    sent = due
                await asyncio.sleep(TICK)
            write('# end')
    finally:
        os.close(fd)

def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('--url', required=True, nargs='+',
                        help='the broker, or the nodes of a cluster')
    parser.add_argument('--super-stream', required=True)
    parser.add_argument('--log', required=True, help='file the confirmed batches go to')
    parser.add_argument('--messages', type=int, required=True)
    parser.add_argument('--rate', type=float, required=True, help='messages a second')
    return parser.parse_args(argv)

def main(argv: Sequence[str] | None = None) -> int:
    asyncio.run(produce(parse_args(argv)))
    return 0

if __name__ == '__main__':
    sys.exit(main())
