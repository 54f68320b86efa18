"""
The scenarios of the broker benchmarks: what ``perf.publish``,
``perf.consume`` and ``perf.java_client`` measure, and how many messages
(the Java harness runs the same workloads as the Python clients).

They live here, in :py:mod:`perf.common`, so that no benchmark imports
another one's folder: each imports the scenarios from here, and keeps its
publishers (``perf/publish/``), consumers (``perf/consume/``) and Java
runners to itself.
"""

from __future__ import annotations

from dataclasses import dataclass

BATCH_SIZE = 100   # messages of a batch (publishing) and of a published batch (consuming)

# publishing (perf.publish; perf.java_client's single, batch and pipelined)
PUBLISH_SCENARIOS = ('single', 'batch', 'pipelined')
FORMATS = ('amqp', 'binary')
PUBLISH_COUNTS = {'single': 50_000, 'batch': 1_000_000, 'pipelined': 1_000_000}
PUBLISH_QUICK_COUNTS = {'single': 1_000, 'batch': 10_000, 'pipelined': 10_000}
TITLES = {
    'single': 'single message publishing, each confirmation awaited',
    'batch': 'batches of {batch} messages, each batch confirmation awaited',
    'pipelined': 'pipelined publishing, confirmations awaited at the end',
}
JAVA_SINGLE_RATE = 10_700   # official Java stream-perf-test tool, single publish: the target
                            # (fallback: the java implementation measured in the run)

# consuming (perf.consume; perf.java_client's consume)
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
    (``consume``), as ``perf.java_client`` runs them.
    """
    if quick:
        return {**PUBLISH_QUICK_COUNTS, 'consume': CONSUME_QUICK_COUNT}
    return {**PUBLISH_COUNTS, 'consume': CONSUME_COUNT}
