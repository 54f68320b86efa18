"""
A client's health served over HTTP for a container's probes
(Kubernetes' ``httpGet``): :py:func:`serve_probes` answers

- ``/readyz``: 200 while the client is not unhealthy (healthy or
  degraded), else 503 with the reasons: take the pod out of the service
  while it reconnects;
- ``/livez``: 503 once the client has been unhealthy for ``grace``
  seconds without a break, else 200: restart the pod only when
  reconnecting does not help (a short loss is recovered in well under a
  second; the backoff's delays grow to 10 s by default);
- ``/health.json``: the :py:class:`~rbfly.streams.health.Health` as JSON
  (200, or 503 when unhealthy).

Each request reads :py:meth:`~rbfly.streams.StreamsClient.health`; it
sends nothing to the broker. See ``doc/operating.rst`` for the recipe.
"""

from __future__ import annotations

import asyncio
import dataclasses as dtc
import json
from collections.abc import Callable
from http import HTTPStatus
from time import monotonic

from .client import StreamsClient
from .health import Health, HealthLimits
from .httpd import Response, Route, start

LIVENESS_GRACE = 60.0
"""Seconds a client is unhealthy without a break before ``/livez`` fails."""

class Probes:
    """
    The answers of the probes' paths to a client's health.

    :param health: Reads the health now.
    :param grace: Seconds unhealthy before the liveness probe fails.
    :param clock: The clock (monotonic; a test gives its own).
    """
    def __init__(
            self, health: Callable[[], Health], grace: float = LIVENESS_GRACE,
            clock: Callable[[], float] = monotonic,
    ) -> None:
        if not grace >= 0:
            raise ValueError('grace must be 0 seconds or more, got {!r}'.format(grace))
        self._health = health
        self.grace = grace
        self._clock = clock
        self._unhealthy_since: float | None = None

    def _read(self) -> Health:
        state = self._health()
        if state.ok:
            self._unhealthy_since = None
        elif self._unhealthy_since is None:
            self._unhealthy_since = self._clock()
        return state

    def readyz(self) -> Response:
        state = self._read()
        return Response(HTTPStatus.OK if state.ok else HTTPStatus.SERVICE_UNAVAILABLE,
                        str(state) + '\n')

    def livez(self) -> Response:
        state = self._read()
        since = self._unhealthy_since
        if since is not None and self._clock() - since >= self.grace:
            return Response(HTTPStatus.SERVICE_UNAVAILABLE, 'unhealthy for {:.0f}s\n{}\n'.format(
                self._clock() - since, state))
        return Response(HTTPStatus.OK, str(state) + '\n')

    def health_json(self) -> Response:
        state = self._read()
        body = json.dumps(dtc.asdict(state), default=lambda v: getattr(v, 'value', str(v)))
        return Response(HTTPStatus.OK if state.ok else HTTPStatus.SERVICE_UNAVAILABLE,
                        body + '\n', 'application/json')

    @property
    def routes(self) -> dict[str, Route]:
        return {'/readyz': self.readyz, '/livez': self.livez, '/health.json': self.health_json}

async def serve_probes(
        client: StreamsClient, host: str = '0.0.0.0', port: int = 8081,
        *, limits: HealthLimits | None = None, grace: float = LIVENESS_GRACE,
) -> asyncio.Server:
    """
    Serve the client's health on ``host`` and ``port`` until the server
    returned is closed (``async with await serve_probes(client): ...``).

    :raises OSError: When the address cannot be listened on.
    """
    probes = Probes(lambda: client.health(limits), grace)
    return await start(probes.routes, host, port)

__all__ = ['LIVENESS_GRACE', 'Probes', 'serve_probes']
