"""
The scenarios of the broker benchmarks: what ``bench_publish.py``,
``bench_consume.py`` and ``bench_java.py`` measure, and how many messages
(the Java harness runs the same workloads as the Python clients).

They live here so that no ``bench_*.py`` script imports another one: each
script imports the scenarios from here, the publishers from
``_publishers.py``, the consumers from ``_consumers.py`` and the Java
client's runners from ``_java.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

BATCH_SIZE = 100   # messages of a batch (publishing) and of a published batch (consuming)

# publishing (bench_publish.py; bench_java.py's single, batch and pipelined)
PUBLISH_SCENARIOS = ('single', 'batch', 'pipelined')
FORMATS = ('amqp', 'binary')
PUBLISH_COUNTS = {'single': 200_000, 'batch': 1_000_000, 'pipelined': 1_000_000}
PUBLISH_QUICK_COUNTS = {'single': 1_000, 'batch': 10_000, 'pipelined': 10_000}

# consuming (bench_consume.py; bench_java.py's consume)
CONSUME_VARIANTS = ('batch', 'pipelined')
CONSUME_COUNT = 1_000_000
CONSUME_QUICK_COUNT = 20_000


@dataclass(frozen=True)
class Case:
    """What one run publishes."""
    scenario: str
    fmt: str
    count: int
    batch: int = BATCH_SIZE
    window: int | None = None

    @property
    def key(self) -> str:
        return '{}/{}'.format(self.scenario, self.fmt)


def all_counts(quick: bool) -> dict[str, int]:
    """
    Default messages per run of every publishing scenario and of consuming
    (``consume``), as ``bench_java.py`` runs them.
    """
    if quick:
        return {**PUBLISH_QUICK_COUNTS, 'consume': CONSUME_QUICK_COUNT}
    return {**PUBLISH_COUNTS, 'consume': CONSUME_COUNT}
