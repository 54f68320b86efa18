"""
A consumer group of worker processes through a rolling deploy and crashes
(rbfly issue 30), on RabbitMQ 4.3: the short run of
``python -m soak.consumer_group`` (``soak/consumer_group/controller.py`` says how it
goes), its goals checked by the same analysis.

Three workers, each a process with its own client, are single active
consumers of one name of a super stream of six partitions, with automatic
offset tracking, while a producer process publishes. Six times the oldest
worker gets SIGTERM and is replaced, then three times the worker owning
the most partitions gets SIGKILL and is replaced. The goals: no confirmed
message lost; no message processed twice across a graceful hand-off (a
worker stopping with SIGTERM, the broker moving a partition to a worker
that joined); after a kill, at most what the offset tracking allows
(``store_every`` messages plus ``store_interval`` seconds of the
partition's, per partition the killed worker owned); every worker
stopped with SIGTERM exits 0.

A synchronous test, so that it runs once (the asyncio tests run on two
event loops): the processes, not this one, run the event loops. About
30 s on a 2-core machine.
"""

from pathlib import Path

from soak.consumer_group.controller import Config, run

def test_rolling_deploy_and_kills(url43: str, tmp_path: Path) -> None:
    config = Config(
        url=url43, partitions=6, workers=3, messages=5000, rate=200,
        restarts=6, kills=3, interval=1.0, warmup=1.0,
        store_every=100, store_interval=1.0,
        ready_timeout=15, stop_timeout=10, drain_timeout=20,
        log_dir=tmp_path,
    )
    result = run(config, echo=print)
    assert result.ok, result.text()

def test_rolling_deploy_and_kills_with_handlers(url43: str, tmp_path: Path) -> None:
    """
    The same with concurrent handlers (16 a worker, in order per
    partition): the hand-offs wait for the handlers in flight, so graceful
    ones repeat nothing; a kill repeats at most the tracking's bound plus
    the messages in flight.
    """
    config = Config(
        url=url43, partitions=6, workers=3, messages=5000, rate=200,
        restarts=6, kills=3, interval=1.0, warmup=1.0,
        store_every=100, store_interval=1.0, handlers=16,
        ready_timeout=15, stop_timeout=10, drain_timeout=20,
        log_dir=tmp_path,
    )
    result = run(config, echo=print)
    assert result.ok, result.text()
