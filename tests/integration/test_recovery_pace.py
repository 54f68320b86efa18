"""
The pace of reconnections through a TCP proxy that cuts connections
(issue 31): a connection cut after progress (a confirmation, a delivered
chunk) is reconnected to at once, however often it is cut; a broker that
drops every connection as the client declares what it had is reconnected
to at the backoff's pace, and given up on with RecoveryStalled.

Each test's backoff makes a wrong pace plain without timing anything: a
stall after progress would wait a delay of minutes (the test's guard
ends it), and the no-progress case checks that each reconnection came at
least a delay after the one before (sleeping never ends early).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import typing as tp
from urllib.parse import urlsplit

import pytest

from rbfly.streams import (
    ConnectionEvent,
    ConnectionState,
    Offset,
    RecoveryStalled,
    StreamsClient,
    streams_client,
)
from rbfly.streams.backoff import Backoff
from rbfly.streams.protocol.constants import Key

from .proxy import Proxy

# a second delay of 100 s: any stall after the first one would hang a test
NEVER_TWICE = Backoff(initial=0.1, maximum=100.0, multiplier=1000.0, jitter=0)
CUTS = 10
GUARD = 60  # seconds: a test waiting a delay it should not wait ends here

@pytest.fixture
async def cutting(any_url: str) -> tp.AsyncIterator[Proxy]:
    p = urlsplit(any_url)
    proxy = Proxy(p.hostname or 'localhost', p.port or 5552)
    await proxy.start()
    yield proxy
    await proxy.close()

def through(proxy: Proxy, backoff: Backoff, events: list[ConnectionEvent]) -> StreamsClient:
    return streams_client(
        'rabbitmq-stream://guest:guest@127.0.0.1:{}/'.format(proxy.port),
        reconnect=backoff, on_connection=events.append,
    )

def stalls(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the manager logged of connections lost before progress."""
    return [r.getMessage() for r in caplog.records if 'before any progress' in r.getMessage()]

async def test_cuts_after_confirmations(
        client: StreamsClient, cutting: Proxy, stream: str, caplog: pytest.LogCaptureFixture,
) -> None:
    """
    A publisher's connection cut after each confirmation is reconnected to
    at once every time (not after a backoff that climbs), and every
    message is stored once.
    """
    caplog.set_level(logging.INFO, 'rbfly.streams.aio.manager')
    events: list[ConnectionEvent] = []
    proxied = through(cutting, NEVER_TWICE, events)
    try:
        async with asyncio.timeout(GUARD), \
                proxied.publisher(stream, name='paced') as publisher:
            for i in range(CUTS):
                await publisher.send(i)  # confirmed: progress
                assert cutting.cut() == 1
            await publisher.send(CUTS)
    finally:
        await proxied.disconnect()

    assert stalls(caplog) == []
    states = [e.state for e in events]
    assert states == [ConnectionState.OPEN] \
        + [ConnectionState.LOST, ConnectionState.RECOVERED] * CUTS + [ConnectionState.CLOSED]
    assert cutting.connections == CUTS + 1
    got = []
    async for body in client.subscribe(stream, offset=Offset.FIRST, timeout=5):
        got.append(body)
        if len(got) == CUTS + 1:
            break
    assert got == list(range(CUTS + 1))

async def test_cuts_after_chunks(
        client: StreamsClient, cutting: Proxy, stream: str, caplog: pytest.LogCaptureFixture,
) -> None:
    """
    A subscription's connection cut after each delivered chunk is
    reconnected to at once every time; nothing is missed or repeated.
    """
    caplog.set_level(logging.INFO, 'rbfly.streams.aio.manager')
    events: list[ConnectionEvent] = []
    proxied = through(cutting, NEVER_TWICE, events)
    got: list[object] = []
    try:
        async with asyncio.timeout(GUARD), client.publisher(stream) as publisher:
            await publisher.send(0)
            async for body in proxied.subscribe(stream, offset=Offset.FIRST):
                got.append(body)
                if len(got) == CUTS + 1:
                    break
                # chunk delivered on this connection: cut, then the next
                # message, which only the next connection can deliver
                assert cutting.cut() == 1
                await publisher.send(len(got))
    finally:
        await proxied.disconnect()

    assert got == list(range(CUTS + 1))
    assert stalls(caplog) == []
    assert [e.state for e in events].count(ConnectionState.RECOVERED) == CUTS
    assert cutting.connections == CUTS + 1

STALLING = Backoff(initial=0.2, maximum=0.4, multiplier=2, jitter=0, stalls=3, stall_time=0)
DELAYS = [0.2, 0.4, 0.4]  # before the reconnections after the first

def check_paced(proxy: Proxy, events: list[ConnectionEvent]) -> RecoveryStalled:
    """
    After a cut, one reconnection at once, then one per delay, then given
    up: RecoveryStalled (returned).
    """
    # the first connection, at once after the cut, then after each delay
    assert proxy.connections == 2 + len(DELAYS)
    gaps = [b - a for a, b in itertools.pairwise(proxy.accepted[1:])]
    assert all(gap >= delay for gap, delay in zip(gaps, DELAYS, strict=True)), gaps
    # lost: the cut, then each connection as the client declares again
    assert [e.state for e in events] == [ConnectionState.OPEN] \
        + [ConnectionState.LOST] * (2 + len(DELAYS)) + [ConnectionState.FAILED]
    error = events[-1].error
    assert isinstance(error, RecoveryStalled)
    assert '4 connections in a row lost before any progress' in str(error)
    return error

async def test_publisher_dropped_after_handshake(
        cutting: Proxy, client: StreamsClient, stream: str,
) -> None:
    """
    A broker that accepts every connection and drops it as the publisher
    is declared again: reconnected to at the backoff's pace, then the
    publisher ends with RecoveryStalled, not retried for ever.
    """
    events: list[ConnectionEvent] = []
    proxied = through(cutting, STALLING, events)
    try:
        async with asyncio.timeout(GUARD), proxied.publisher(stream, name='stalled') as publisher:
            await publisher.send(0)
            cutting.drop_on(Key.DECLARE_PUBLISHER)
            assert cutting.cut() == 1
            with pytest.raises(RecoveryStalled) as caught:
                await publisher.send(1)
    finally:
        await proxied.disconnect()
    assert caught.value is check_paced(cutting, events)

async def test_subscription_dropped_after_handshake(
        cutting: Proxy, client: StreamsClient, stream: str,
) -> None:
    """
    A broker that accepts every connection and drops it as the
    subscription subscribes again: reconnected to at the backoff's pace,
    then the subscription ends with RecoveryStalled.
    """
    events: list[ConnectionEvent] = []
    proxied = through(cutting, STALLING, events)
    got: list[object] = []
    try:
        await client.create_stream(stream)
        async with client.publisher(stream) as publisher:
            await publisher.send(0)
        async with asyncio.timeout(GUARD):
            with pytest.raises(RecoveryStalled) as caught:
                async for body in proxied.subscribe(stream, offset=Offset.FIRST):
                    got.append(body)
                    cutting.drop_on(Key.SUBSCRIBE)
                    assert cutting.cut() == 1
    finally:
        await proxied.disconnect()
    assert got == [0]
    assert caught.value is check_paced(cutting, events)
