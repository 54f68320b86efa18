"""
``rbfly group serve``, run as an operator runs it (``python -m rbfly``, a
process of its own), scraped while a consumer group falls behind and
catches up; against RabbitMQ 4.x and the fake broker. ``rbfly group
status --format openmetrics`` prints the same text once.

The exporter reads the lag every 0.2 s; a scrape gives the last reading,
so the test scrapes until the reading it waits for comes (the lag of what
it published; 0 once the consumer committed), within a minute.
"""

import asyncio
import contextlib
import json
import re
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from rbfly.streams import Offset, StreamsClient, streams_client
from rbfly.testing import FakeBroker

from .proxy import Proxy

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = re.compile(r'^(\w+)\{group="([^"]*)",stream="([^"]*)"\} (\d+)$')

Samples = dict[tuple[str, str], int]
"""Samples of a scrape: (metric, stream) -> value."""

@pytest.fixture(params=['4.x', '4.3', 'fake'])
async def broker_url(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """RabbitMQ 4.x, 4.3, or a fake broker of this test."""
    if request.param == 'fake':
        async with FakeBroker() as broker:
            yield broker.url
    else:
        yield str(request.getfixturevalue('url4' if request.param == '4.x' else 'url43'))

class Exporter:
    """``rbfly group serve`` in a process of its own."""
    def __init__(self, proc: asyncio.subprocess.Process, base: str) -> None:
        self.proc = proc
        self.base = base

    async def get(self, path: str) -> httpx.Response:
        async with httpx.AsyncClient() as http:
            return await http.get(self.base + path)

    async def samples(self) -> Samples | None:
        """The samples of ``/metrics`` (``None``: it answered 503)."""
        r = await self.get('/metrics')
        if r.status_code == 503:
            return None
        assert r.status_code == 200, r.text
        assert r.headers['content-type'].startswith('application/openmetrics-text')
        assert r.text.endswith('# EOF\n')
        assert '# TYPE rbfly_consumer_group_lag gauge' in r.text
        found = {}
        for line in r.text.splitlines():
            if m := SAMPLE.match(line):
                assert m[2] == 'g'
                found[m[1], m[3]] = int(m[4])
        return found

    async def until(self, done: Callable[[Samples], bool]) -> Samples:
        """Scrape until a reading satisfies ``done``; return it."""
        async with asyncio.timeout(60):
            while True:
                samples = await self.samples()
                if samples is not None and done(samples):
                    return samples
                # wall time: the exporter, another process, reads every 0.2 s
                await asyncio.sleep(0.1)

@contextlib.asynccontextmanager
async def exporter(url: str, super_stream: str) -> AsyncIterator[Exporter]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, '-m', 'rbfly', '--url', url, 'group', 'serve', 'g',
        '--super-stream', super_stream, '--listen', '127.0.0.1:0', '--interval', '0.2',
        stderr=asyncio.subprocess.PIPE, cwd=ROOT,
    )
    assert proc.stderr is not None
    try:
        async with asyncio.timeout(30):
            line = (await proc.stderr.readline()).decode()
        found = re.search(r'http://(127\.0\.0\.1:\d+)/metrics', line)
        assert found, line
        yield Exporter(proc, 'http://{}'.format(found[1]))
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            async with asyncio.timeout(30):
                await proc.wait()
    assert proc.returncode == 0, (await proc.stderr.read()).decode()

async def consume(client: StreamsClient, partition: str, count: int) -> None:
    """Process ``count`` messages of a partition as group ``g``, storing offsets."""
    messages = client.subscribe(partition, offset=Offset.FIRST, name='g', store_every=1,
                                timeout=30)
    seen = 0
    async for _ in messages:
        seen += 1
        if seen == count:
            await messages.commit()
            break
    await messages.aclose()

async def test_serve_lag(broker_url: str) -> None:
    """
    The group falls behind (published, nothing consumes: each partition's
    lag is what it holds) and catches up (a consumer storing its offsets
    processed everything: lag 0, caught up 1); ``/lag.json`` sums it.
    A request that is not one is answered, and the exporter goes on.
    """
    name = 'rbfly-lag-{}'.format(uuid.uuid4().hex[:8])
    client = streams_client(broker_url)
    partitions = await client.create_super_stream(name, 2)
    p0, p1 = partitions
    try:
        async with exporter(broker_url, name) as ex:
            # nothing published: caught up
            await ex.until(lambda s: s == {
                ('rbfly_consumer_group_lag', p0): 0, ('rbfly_consumer_group_lag', p1): 0,
                ('rbfly_consumer_group_caught_up', p0): 1,
                ('rbfly_consumer_group_caught_up', p1): 1,
            })
            for partition, count in ((p0, 5), (p1, 3)):
                async with client.publisher(partition) as publisher:
                    await publisher.send_many([str(i) for i in range(count)])
            behind = await ex.until(lambda s: s[('rbfly_consumer_group_lag', p1)] == 3
                                    and s[('rbfly_consumer_group_lag', p0)] == 5)
            assert behind[('rbfly_consumer_group_caught_up', p0)] == 0
            doc = (await ex.get('/lag.json')).json()
            assert (doc['group'], doc['lag'], doc['max_lag'], doc['caught_up']) == \
                ('g', 8, 5, False), doc
            assert [p['lag'] for p in doc['partitions']] == [5, 3]

            # a bad request: answered, and the exporter serves on
            assert (await ex.get('/nothing-here')).status_code == 404
            reader, writer = await asyncio.open_connection(*ex.base[7:].split(':'))
            writer.write(b'not http\r\n\r\n')
            assert (await reader.read()).startswith(b'HTTP/1.1 400 ')
            writer.close()

            await consume(client, p0, 5)
            await consume(client, p1, 3)
            await ex.until(lambda s: all(
                v == (1 if metric.endswith('caught_up') else 0)
                for (metric, _), v in s.items()))
            doc = json.loads((await ex.get('/lag.json')).text)
            assert (doc['lag'], doc['caught_up'], doc['known']) == (0, True, True), doc
    finally:
        await client.delete_super_stream(name)
        await client.disconnect()

PEER_PROPERTIES = 0x0011
"""The key of a connection's first command."""

async def until_status(ex: Exporter, status: int) -> httpx.Response:
    """Scrape ``/metrics`` until a reading answers ``status``."""
    async with asyncio.timeout(60):
        while True:
            r = await ex.get('/metrics')
            if r.status_code == status:
                return r
            await asyncio.sleep(0.1)  # wall time: the exporter, another process, reads every 0.2 s

async def test_serve_broker_away_and_back(url4: str) -> None:
    """
    RabbitMQ unreachable (the proxy drops each connection as it starts):
    503 naming the cause; reachable again: the lag again, from the same
    exporter process.
    """
    name = 'rbfly-lag-{}'.format(uuid.uuid4().hex[:8])
    client = streams_client(url4)
    await client.create_super_stream(name, 1)
    target = urlsplit(url4)
    proxy = Proxy(target.hostname or 'localhost', target.port or 5553)
    await proxy.start()
    try:
        async with exporter('rabbitmq-stream://guest:guest@127.0.0.1:{}/'.format(proxy.port),
                            name) as ex:
            await until_status(ex, 200)
            proxy.drop_on(PEER_PROPERTIES)
            proxy.cut()
            r = await until_status(ex, 503)
            assert "lag of group 'g' unknown: " in r.text, r.text
            proxy.drop_on(None)
            r = await until_status(ex, 200)
            assert 'rbfly_consumer_group_lag{{group="g",stream="{}-0"}} 0'.format(name) in r.text
    finally:
        await proxy.close()
        await client.delete_super_stream(name)
        await client.disconnect()

async def test_serve_broker_down() -> None:
    """
    The broker goes away: the exporter answers 503 with the reason
    (Prometheus marks the target down, KEDA keeps its replicas), and
    keeps running; SIGTERM ends it with status 0.
    """
    name = 'rbfly-lag-down'
    async with FakeBroker() as broker:
        client = streams_client(broker.url)
        await client.create_super_stream(name, 1)
        await client.disconnect()
        async with exporter(broker.url, name) as ex:
            await ex.until(lambda s: len(s) == 2)
            await broker.stop()
            r = await until_status(ex, 503)
            assert "lag of group 'g' unknown: " in r.text, r.text
            r = await ex.get('/lag.json')
            assert r.status_code == 503 and 'unknown' in r.text
