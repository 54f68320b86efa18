"""
A consumer group's lag, written for monitoring systems and autoscalers:
the OpenMetrics text format (Prometheus scrapes it) and a JSON document
(KEDA's ``metrics-api`` scaler reads a number from it).

The statuses come from
:py:meth:`~rbfly.streams.StreamsClient.group_status`, a
:py:class:`~rbfly.streams.types.PartitionStatus` per stream or partition;
``rbfly group status --format openmetrics`` prints them once and
``rbfly group serve`` serves them over HTTP (see ``doc/operating.rst``).

In OpenMetrics, a gauge per partition (the lag of a partition whose end
the broker does not give, RabbitMQ 3.10, is left out, not written as 0:
an autoscaler must not read "caught up" there)::

    # TYPE rbfly_consumer_group_lag gauge
    # HELP rbfly_consumer_group_lag Messages ...
    rbfly_consumer_group_lag{group="billing",stream="invoices-0"} 12
    # TYPE rbfly_consumer_group_caught_up gauge
    # HELP rbfly_consumer_group_caught_up 1 when ...
    rbfly_consumer_group_caught_up{group="billing",stream="invoices-0"} 0
    # EOF
"""

from __future__ import annotations

import asyncio
import json
import logging
import typing as tp
from collections.abc import Awaitable, Callable, Sequence
from http import HTTPStatus

from .httpd import Response, Route
from .types import PartitionStatus

logger = logging.getLogger(__name__)

CONTENT_TYPE = 'application/openmetrics-text; version=1.0.0; charset=utf-8'
"""The media type of the OpenMetrics text format."""

LAG = 'rbfly_consumer_group_lag'
CAUGHT_UP = 'rbfly_consumer_group_caught_up'

_HELP = {
    LAG: 'Messages of the stream (or partition) after the offset stored under the'
         ' group\'s name, up to its last message (0: caught up).',
    CAUGHT_UP: '1 when the group processed every message of the stream (or partition),'
               ' else 0.',
}

def _label(value: str) -> str:
    """A label's value, quoted as OpenMetrics says: backslash, quote, newline escaped."""
    return '"{}"'.format(value.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n'))

def openmetrics(group: str, statuses: Sequence[PartitionStatus]) -> str:
    """
    The lag of a group on each stream or partition, in the OpenMetrics
    text format, ``# EOF`` included.

    A partition whose lag (or whether it is caught up) is not known
    (``None``: RabbitMQ 3.10 gives no statistics) has no sample.
    """
    lines: list[str] = []
    for name, value in ((LAG, _lag), (CAUGHT_UP, _caught_up)):
        lines.append('# TYPE {} gauge'.format(name))
        lines.append('# HELP {} {}'.format(name, _HELP[name]))
        for s in statuses:
            v = value(s)
            if v is not None:
                lines.append('{}{{group={},stream={}}} {}'.format(
                    name, _label(group), _label(s.stream), v))
    lines.append('# EOF')
    return '\n'.join(lines) + '\n'

def _lag(s: PartitionStatus) -> int | None:
    return s.lag

def _caught_up(s: PartitionStatus) -> int | None:
    return None if s.caught_up is None else int(s.caught_up)

class LagDocument(tp.TypedDict):
    """What :py:func:`lag_json` gives (see there)."""
    group: str
    lag: int
    max_lag: int
    caught_up: bool
    known: bool
    partitions: list[dict[str, object]]

def lag_json(group: str, statuses: Sequence[PartitionStatus]) -> LagDocument:
    """
    The lag of a group as a JSON document (a dictionary to dump), for
    KEDA's ``metrics-api`` scaler and scripts:

    - ``lag``: the sum over the partitions (``valueLocation: lag``);
    - ``max_lag``: the largest of a partition;
    - ``caught_up``: every partition caught up;
    - ``known``: whether every partition's lag is known (``False`` on
      RabbitMQ 3.10: the sums count the known ones only);
    - ``partitions``: ``{"stream": ..., "lag": ..., "caught_up": ...}``
      of each, in order (``partitions.0.lag``, or
      ``partitions.#(stream=="s-0").lag`` in GJSON, KEDA's path syntax).
    """
    lags = [s.lag for s in statuses if s.lag is not None]
    return {
        'group': group,
        'lag': sum(lags),
        'max_lag': max(lags, default=0),
        'caught_up': all(s.caught_up for s in statuses),
        'known': len(lags) == len(statuses) and all(s.caught_up is not None for s in statuses),
        'partitions': [
            {'stream': s.stream, 'lag': s.lag, 'caught_up': s.caught_up} for s in statuses
        ],
    }

Status: tp.TypeAlias = Callable[[], Awaitable[Sequence[PartitionStatus]]]
"""Reads a group's status (e.g. a client's ``group_status`` with its arguments)."""

class LagExporter:
    """
    A group's lag, read every ``interval`` seconds and served from the
    last reading: ``/metrics`` (OpenMetrics) and ``/lag.json`` (see
    :py:func:`lag_json`), through :py:mod:`rbfly.streams.httpd`.

    A scrape never waits for the broker: it gets the last reading. When
    the last reading failed (the broker is down, the stream is gone) or
    none was made yet, both answer 503 with the reason, so that Prometheus
    marks the target down and KEDA keeps its replicas instead of scaling
    on a stale or made-up lag.

    :param group: The group's name.
    :param status: Reads its status.
    :param interval: Seconds between readings.
    :param timeout: Seconds a reading may take; longer, it fails.
    """
    def __init__(
            self, group: str, status: Status, interval: float, timeout: float,
    ) -> None:
        self.group = group
        self._status = status
        self.interval = interval
        self.timeout = timeout
        self.statuses: Sequence[PartitionStatus] | None = None
        self.error: str | None = 'no reading yet'

    async def read(self) -> None:
        """Read the status once; keep it, or the reason it could not be read."""
        try:
            async with asyncio.timeout(self.timeout):
                statuses = await self._status()
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            self._failed('no status within {:g}s'.format(self.timeout))
        except Exception as ex:  # noqa: BLE001 - any cause is served as a 503, read again
            self._failed('{}: {}'.format(type(ex).__name__, ex))
        else:
            self.statuses = statuses
            self.error = None

    def _failed(self, reason: str) -> None:
        if reason != self.error:
            logger.warning('lag of group %r not read: %s', self.group, reason)
        self.error = reason
        self.statuses = None

    async def run(self) -> None:
        """Read the status every ``interval`` seconds, until cancelled."""
        while True:
            await self.read()
            await asyncio.sleep(self.interval)

    def _unavailable(self) -> Response:
        return Response(HTTPStatus.SERVICE_UNAVAILABLE, 'lag of group {!r} unknown: {}\n'.format(
            self.group, self.error))

    def metrics(self) -> Response:
        """The ``/metrics`` endpoint."""
        if self.statuses is None:
            return self._unavailable()
        return Response(HTTPStatus.OK, openmetrics(self.group, self.statuses), CONTENT_TYPE)

    def lag(self) -> Response:
        """The ``/lag.json`` endpoint."""
        if self.statuses is None:
            return self._unavailable()
        return Response(
            HTTPStatus.OK, json.dumps(lag_json(self.group, self.statuses)) + '\n',
            'application/json',
        )

    @property
    def routes(self) -> dict[str, Route]:
        """The paths served."""
        return {'/metrics': self.metrics, '/lag.json': self.lag}

__all__ = [
    'CAUGHT_UP', 'CONTENT_TYPE', 'LAG', 'LagDocument', 'LagExporter', 'Status', 'lag_json',
    'openmetrics',
]
