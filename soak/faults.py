"""
The soak's faults: connections cut through a proxy, a broker restarted,
and cluster nodes (a stream's leader first) killed and revived; each
runs until its ``stop`` event and counts what it did in
:py:class:`soak.ledger.Stats`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import tempfile
import typing as tp

if tp.TYPE_CHECKING:
    from soak.ledger import Stats
    from tests.integration.proxy import Proxy

logger = logging.getLogger('soak')

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
