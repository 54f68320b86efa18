"""
The parameters of a consumer group run (:py:mod:`soak.consumer_group`):
its command line's options, as the controller and its processes
(:py:mod:`soak.consumer_group.processes`) read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

GROUP = 'consumer-group'
"""The name the workers share (the super stream's name is unique to the run)."""

@dataclass
class Config:
    """
    A run's parameters (the command line's options).

    :ivar url: The broker.
    :ivar interval: Seconds between a replacement ready and the next
        restart or kill.
    :ivar warmup: Seconds of publishing before the first restart.
    :ivar offset: The workers' subscription offset: ``first``
        (``Offset.FIRST``) or ``reference`` (``Offset.reference(group)``).
    :ivar wait_stored: The workers wait, after closing their
        subscription, until the broker has their offsets.
    :ivar ready_timeout: Seconds a worker has to subscribe to every
        partition.
    :ivar stop_timeout: Seconds a worker has to exit after SIGTERM (it is
        killed after them, and the run fails).
    :ivar drain_timeout: Seconds the workers have, after the producer's
        end, to process every confirmed message.
    :ivar log_dir: Where the logs go (``None``: a temporary directory,
        removed after a run that met its goals).
    :ivar cluster: The nodes' URLs of the cluster of ``scripts/cluster.sh``
        (``None``: the broker of ``url``).
    :ivar kill_leader: On the cluster, the partition (its index) whose
        leader's node is killed after the warm-up (``None``: none).
    :ivar revive_after: Seconds after which the killed node is brought back.
    :ivar verbose: The workers log rbfly's INFO messages.
    :ivar handlers: Each worker runs this many concurrent handlers
        (``client.process_super_stream``, in order per partition), 0: an
        ``async for`` loop.
    """
    url: str
    partitions: int = 6
    messages: int = 60_000
    rate: float = 1600
    workers: int = 3
    restarts: int = 6
    kills: int = 3
    interval: float = 1.5
    warmup: float = 3
    store_every: int = 100
    store_interval: float = 1
    offset: str = 'first'
    handlers: int = 0
    wait_stored: bool = False
    ready_timeout: float = 20
    stop_timeout: float = 15
    drain_timeout: float = 60
    log_dir: Path | None = None
    keep_logs: bool = False
    cluster: list[str] | None = None
    kill_leader: int | None = None
    revive_after: float = 5
    verbose: bool = False

    @property
    def urls(self) -> list[str]:
        """The broker's URL, or the cluster nodes'."""
        return self.cluster if self.cluster else [self.url]

    @property
    def where(self) -> str:
        """The broker, or the cluster, without credentials."""
        return ' '.join(host(u) for u in self.urls)

def host(url: str) -> str:
    """The broker's address, without credentials."""
    return urlsplit(url).netloc.split('@')[-1]

__all__ = ['GROUP', 'Config', 'host']
