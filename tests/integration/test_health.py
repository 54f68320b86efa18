"""
A client's health (:py:meth:`~rbfly.streams.StreamsClient.health`) on
RabbitMQ: healthy while it publishes and consumes; unhealthy once its
connection is cut (through the test proxy), healthy again once it is
back; the probes' HTTP endpoints, and ``rbfly health``'s exit status.
"""

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import httpx

from rbfly.streams import (
    ConnectionEvent,
    ConnectionState,
    Health,
    HealthLimits,
    Offset,
    StreamsClient,
    Verdict,
    streams_client,
)
from rbfly.streams.metrics import SAMPLE_INTERVAL
from rbfly.streams.probes import serve_probes

from .conftest import FAST
from .proxy import Proxy

ROOT = Path(__file__).resolve().parents[2]

async def test_health_lost_and_back(proxy: Proxy, client: StreamsClient, stream: str) -> None:
    """
    Healthy with a publisher confirming and a subscription taking
    messages; when the connection is cut, unhealthy (as the client sees
    the loss: its on_connection callback asks); once recovered, healthy.
    """
    at_loss: list[Health] = []
    recovered = asyncio.Event()

    def on_connection(event: ConnectionEvent) -> None:
        if event.state is ConnectionState.LOST:
            at_loss.append(c.health())
        elif event.state is ConnectionState.RECOVERED:
            recovered.set()

    c = streams_client('rabbitmq-stream://guest:guest@127.0.0.1:{}/'.format(proxy.port),
                       reconnect=FAST, on_connection=on_connection)
    try:
        async with c.publisher(stream) as publisher:
            await publisher.send('one')
            messages = c.subscribe(stream, offset=Offset.FIRST, name='h', timeout=30)
            async for _ in messages:
                break
            h = c.health()
            assert (h.verdict, h.reasons, h.ok) == (Verdict.HEALTHY, (), True), h
            [own] = h.connections
            assert (own.own, own.open, own.error, own.publishers, own.subscriptions) == \
                (True, True, None, 1, 1)
            assert own.node is not None and own.since is not None and own.since >= 0
            [pub] = h.publishers
            assert (pub.stream, pub.unconfirmed, pub.waiting) == (stream, 0, None)
            assert pub.since_confirmation is not None and pub.since_confirmation >= 0
            [sub] = h.subscriptions
            assert (sub.stream, sub.name, sub.connected, sub.active, sub.lag) == \
                (stream, 'h', True, True, 0)
            assert sub.since_message is not None

            assert proxy.cut() == 1
            async with asyncio.timeout(30):
                await recovered.wait()
            [lost] = at_loss
            assert lost.verdict is Verdict.UNHEALTHY and not lost.ok, lost
            assert lost.connections[0].open is False
            assert lost.connections[0].error is not None
            assert 'lost' in lost.reasons[0] and 'reconnecting' in lost.reasons[0]

            await publisher.send('two')  # confirmed on the new connection
            async for _ in messages:
                break
            await messages.aclose()
            h = c.health()
            assert (h.verdict, h.ok) == (Verdict.HEALTHY, True), h
            assert h.connections[0].open and h.connections[0].error is None
    finally:
        await c.disconnect()
    closed = c.health()
    assert closed.verdict is Verdict.HEALTHY and not closed.connections[0].open

async def test_health_confirmation_stall(
        proxy: Proxy, client: StreamsClient, stream: str,
) -> None:
    """
    The broker's answers held by the proxy: a message sent waits for its
    confirmation, and past ``confirm_stall`` the client is degraded (still
    ok), naming the publisher; released, healthy again.
    """
    c = streams_client('rabbitmq-stream://guest:guest@127.0.0.1:{}/'.format(proxy.port),
                       reconnect=FAST)
    limits = HealthLimits(confirm_stall=0.2)
    try:
        async with c.publisher(stream) as publisher:
            await publisher.send('timed')  # the first confirmation is timed
            # the next message is timed once SAMPLE_INTERVAL passed since then (by
            # time.monotonic; uvloop's timers may wake a millisecond early)
            await asyncio.sleep(2 * SAMPLE_INTERVAL)  # twice: uvloop wakes to the ms
            proxy.hold()
            sent = asyncio.create_task(publisher.send('held'))
            async with asyncio.timeout(30):
                while True:
                    h = c.health(limits)
                    if h.verdict is Verdict.DEGRADED:
                        break
                    await asyncio.sleep(0.05)  # the next look; the wait grows
            assert h.ok, h
            [reason] = h.reasons
            assert 'waits' in reason and '(1 unconfirmed)' in reason, reason
            [pub] = h.publishers
            assert pub.unconfirmed == 1 and pub.waiting is not None and pub.waiting >= 0.2
            proxy.release()
            await sent
            h = c.health(limits)
            assert (h.verdict, h.publishers[0].unconfirmed, h.publishers[0].waiting) == \
                (Verdict.HEALTHY, 0, None), h
    finally:
        proxy.release()
        await c.disconnect()

async def test_probes(client4: StreamsClient, stream: str) -> None:
    """The probes' endpoints of a healthy client: 200, the verdict, the JSON."""
    server = await serve_probes(client4, '127.0.0.1', 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        async with client4.publisher(stream) as publisher:
            await publisher.send('x')
            async with httpx.AsyncClient(base_url='http://127.0.0.1:{}'.format(port)) as http:
                r = await http.get('/readyz')
                assert (r.status_code, r.text) == (200, 'healthy\n')
                assert (await http.get('/livez')).status_code == 200
                doc = (await http.get('/health.json')).json()
                assert doc['verdict'] == 'healthy'
                assert doc['publishers'][0]['stream'] == stream
                assert (await http.get('/nope')).status_code == 404

def rbfly(url: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, '-m', 'rbfly', '--url', url, *argv],
                          capture_output=True, text=True, timeout=60, check=False, cwd=ROOT)

def test_cli_health(any_url: str, stream: str) -> None:
    """
    ``rbfly health``: 0 when the broker answers; 1 for a stream that does
    not exist, or a broker that does not answer, naming why.
    """
    done = rbfly(any_url, 'health')
    assert (done.returncode, done.stdout) == (0, 'healthy\n'), done.stderr
    done = rbfly(any_url, 'health', '--stream', 'rbfly-no-such-stream', '--format', 'json')
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert (doc['verdict'], doc['reasons']) == (
        'unhealthy', ["stream 'rbfly-no-such-stream' does not exist"])
    done = rbfly('rabbitmq-stream://guest:guest@127.0.0.1:1/', 'health',
                 '--connect-timeout', '5')
    assert done.returncode == 1 and 'rbfly: error: cannot connect' in done.stderr, done.stderr
