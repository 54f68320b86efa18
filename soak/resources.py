"""
What the soak's process holds, sampled to check that nothing leaks: its
resident memory and its open file descriptors.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import typing as tp

if tp.TYPE_CHECKING:
    from soak.ledger import Stats

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

async def sample(stop: asyncio.Event, stats: Stats) -> None:
    while not stop.is_set():
        stats.rss.append(rss_kib())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 2)
