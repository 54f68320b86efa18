"""
The connection reads a chunk's timestamp through the core's header reader
to pause its reads after history: a chunk too short for a header is
delivered, and pauses nothing (its subscription reports it).
"""

from __future__ import annotations

from rbfly.streams.protocol import Deliver, encode

from ._fakes import Subscription, handshake

async def test_short_chunk_does_not_pause() -> None:
    protocol, transport = handshake()
    protocol.read_pause = 0.01
    sub = Subscription()
    protocol.subscriptions[1] = sub
    protocol.data_received(encode(Deliver(1, b'\x50' + bytes(46))))
    assert sub.calls == [('chunk', b'\x50' + bytes(46), None)]
    assert transport.paused == 0 and transport.reading
