"""
Reading the end of a stream before RabbitMQ 4.3 (``Ends.last_chunk``,
for ``Offset.from_end`` and ``stop_at_end``) when no chunk comes within
the probe's wait: an error when the broker said the stream has chunks
(RabbitMQ 3.11+), a warning naming the assumption of an empty stream on
3.10. The probe's subscription is a fake that times out at once: no clock.
"""

import logging
import typing as tp
from types import SimpleNamespace

import pytest

from rbfly.streams import Offset
from rbfly.streams.error import StreamEndUnknown
from rbfly.streams.parts.ends import (
    PROBE_TIMEOUT,
    PROBE_TIMEOUT_KNOWN,
    Ends,
    probe_timed_out,
)
from rbfly.streams.subscriptions.subscription import Chunk

class Connections:
    """A broker of a version, with a stream of these statistics."""
    def __init__(self, version: tuple[int, int], stats: dict[str, int]) -> None:
        self.protocol = SimpleNamespace(broker_version=version)
        self.stats = stats

    async def get(self) -> object:
        return self.protocol

    async def call(self, request: object, context: str) -> object:
        return SimpleNamespace(stats=list(self.stats.items()))

def subscribing(version: tuple[int, int], stats: dict[str, int]) -> tuple[Ends, list[float]]:
    """An Ends whose probe times out; the waits asked for are listed."""
    none = tp.cast(tp.Any, None)  # (the parts the probe does not use)
    ends = Ends(none, tp.cast(tp.Any, Connections(version, stats)), none, none)
    waits: list[float] = []

    async def probe(stream: str, wait: float) -> Chunk:
        waits.append(wait)
        raise TimeoutError

    ends._probe = probe  # type: ignore[method-assign]
    return ends, waits

async def test_chunks_said_raises() -> None:
    """RabbitMQ 3.11+ says the stream has chunks: no chunk is no end, an error."""
    sub, waits = subscribing((4, 0), {'committed_chunk_id': 40})
    with pytest.raises(StreamEndUnknown, match="stream 'orders' has chunks") as info:
        await sub.last_chunk('orders')
    assert (info.value.stream, info.value.timeout) == ('orders', PROBE_TIMEOUT_KNOWN)
    assert waits == [PROBE_TIMEOUT_KNOWN]
    with pytest.raises(StreamEndUnknown):  # from_end too
        await sub.resolve('orders', Offset.from_end(100))

async def test_empty_said() -> None:
    """RabbitMQ 3.11+ says no chunk: no probe, no messages."""
    sub, waits = subscribing((3, 11), {'committed_chunk_id': -1})
    assert await sub.last_chunk('orders') is None
    assert waits == []

async def test_310_warns(caplog: pytest.LogCaptureFixture) -> None:
    """RabbitMQ 3.10 says nothing: no chunk is taken for no messages, said in a warning."""
    sub, waits = subscribing((3, 10), {})
    with caplog.at_level(logging.WARNING, logger='rbfly.streams.client'):
        assert await sub.resolve('orders', Offset.from_end(100)) == Offset.NEXT
    assert waits == [PROBE_TIMEOUT]
    [record] = caplog.records
    assert "stream 'orders' sent no chunk" in record.getMessage()
    assert 'taken for a stream without messages' in record.getMessage()

def test_decision() -> None:
    with pytest.raises(StreamEndUnknown, match='try again'):
        probe_timed_out('s', True, 10)
    probe_timed_out('s', False, 2)
