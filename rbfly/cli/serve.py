"""
``rbfly group serve``: a long-running exporter of a consumer group's lag
over HTTP (:py:class:`rbfly.streams.lag.LagExporter`), for Prometheus and
KEDA's ``metrics-api`` scaler; it runs until SIGTERM or Ctrl-C, and exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys

from ..streams import StreamsClient
from ..streams.httpd import start
from ..streams.lag import LagExporter
from ..streams.types import PartitionStatus

async def group_serve(client: StreamsClient, args: argparse.Namespace) -> int:
    async def status() -> list[PartitionStatus]:
        return await client.group_status(
            args.name, stream=args.stream, super_stream=args.super_stream,
        )

    # a reading waits for the broker at most as long as a connection may
    # take, and at least 10 s (a super stream's partitions are read in turn)
    exporter = LagExporter(
        args.name, status, args.interval, max(10.0, args.connect_timeout + 5),
    )
    host, port = args.listen
    server = await start(exporter.routes, host, port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError):  # not on Windows
        loop.add_signal_handler(signal.SIGTERM, stop.set)
    bound = server.sockets[0].getsockname()
    print('rbfly: serving the lag of group {!r} on http://{}:{}/metrics and /lag.json'.format(
        args.name, *bound[:2]), file=sys.stderr, flush=True)
    reading = asyncio.create_task(exporter.run())
    try:
        async with server:
            await stop.wait()
    finally:
        reading.cancel()
        await asyncio.wait([reading])
        with contextlib.suppress(NotImplementedError):
            loop.remove_signal_handler(signal.SIGTERM)
    return 0

__all__ = ['group_serve']
