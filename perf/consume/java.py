"""
The Java stream client as the ``java`` implementation of the consuming
benchmark: rbfly's harness in a JVM a round (:py:class:`JavaRunner`),
reading the stream the benchmark published from its first offset.
"""

from __future__ import annotations

from perf.common.java import (
    WARMUP_NOTE,
    WARMUP_PERCENT,
    WARMUP_SECONDS,
    JavaRunner,
    round_result,
)
from perf.common.results import JsonDict

CONSUME_WARMUP = 'reading the first messages of the same stream'
CONSUME_API = (
    'Environment.consumerBuilder().offset(OffsetSpecification.first())'
    '.messageHandler(h): h counts the messages, the body of the count-th is checked; '
    + WARMUP_NOTE.format(WARMUP_PERCENT, WARMUP_SECONDS, CONSUME_WARMUP)
)
"""The API of the consuming runner, warmed up for :py:data:`WARMUP_SECONDS`."""


class JavaConsumeRunner(JavaRunner):
    """The ``java`` implementation of the consuming benchmark (a ``Runner``)."""

    def __init__(
            self, url: str, broker_pid: int | None, *, warmup_seconds: float = WARMUP_SECONDS,
    ) -> None:
        super().__init__(url, broker_pid, warmup_seconds=warmup_seconds)
        self._info['api'] = CONSUME_API.replace(
            'for {:g} s'.format(WARMUP_SECONDS), 'for {:g} s'.format(warmup_seconds),
        )

    async def run(self, stream: str, count: int) -> JsonDict:
        return round_result(await self._round('consume', 'amqp', count, stream))
