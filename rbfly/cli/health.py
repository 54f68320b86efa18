"""
``rbfly health``: whether the broker of ``--url`` answers, and each
``--stream`` has a leader, with an exit status for a container's probe
(``exec``): 0 healthy or degraded, 1 unhealthy (or not connected). An
application's own client says how it is doing with
:py:meth:`~rbfly.streams.StreamsClient.health`, served to the probes by
:py:func:`rbfly.streams.probes.serve_probes`.
"""

from __future__ import annotations

import argparse
import dataclasses as dtc
import json

from ..streams import StreamsClient
from ..streams.error import StreamDoesNotExist
from ..streams.health import Health, Verdict

PROBE = 'rbfly-health-probe'
"""The stream asked for when no ``--stream`` is given (it need not exist)."""

async def health(client: StreamsClient, args: argparse.Namespace) -> int:
    reasons = []
    # a Metadata request: a round trip to the broker, on a connection opened for it
    for stream in args.stream or ():
        try:
            info = await client.stream_metadata(stream)
        except StreamDoesNotExist:
            reasons.append('stream {!r} does not exist'.format(stream))
            continue
        if info.leader is None:
            reasons.append('stream {!r} has no leader'.format(stream))
    if not args.stream:
        await client.stream_exists(PROBE)
    state = client.health()
    if reasons:
        state = dtc.replace(state, verdict=Verdict.UNHEALTHY,
                            reasons=(*state.reasons, *reasons))
    _print(state, args.format)
    return 0 if state.ok else 1

def _print(state: Health, form: str) -> None:
    if form == 'json':
        data = dtc.asdict(state)
        print(json.dumps(data, default=lambda v: getattr(v, 'value', str(v))))
    else:
        print(state)

__all__ = ['PROBE', 'health']
