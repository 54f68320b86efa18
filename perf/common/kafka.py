"""
The Kafka broker of the aiokafka runs (``scripts/kafka.sh start``): whether
one answers, and its process, whose CPU time the runs measure. Shared by
the publishing benchmark and the workloads.
"""

from __future__ import annotations

import asyncio
import functools

from perf.common.streams import listening_pid

@functools.cache
async def kafka_available(bootstrap: str) -> str | None:
    """``None`` if a Kafka broker answers at ``bootstrap``, else why not."""
    host, _, port = bootstrap.rpartition(':')
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), 3)
    except (OSError, TimeoutError, ValueError) as ex:
        return 'no Kafka broker at {} ({}); start one with scripts/kafka.sh start'.format(
            bootstrap, ex,
        )
    writer.close()
    return None


def kafka_pid(bootstrap: str) -> int | None:
    """Process of a local Kafka broker (its CPU time is measured)."""
    host, _, port = bootstrap.rpartition(':')
    if host not in ('localhost', '127.0.0.1', '::1') or not port.isdigit():
        return None
    return listening_pid(int(port))
