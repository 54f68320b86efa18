"""
Fixtures of the integration tests: real RabbitMQ brokers, found through
the environment variables that ``scripts/brokers.sh env`` prints.

- ``RBFLY_URL``: RabbitMQ 3.10 (Debian 12), default port 5552;
- ``RBFLY_URL4``: RabbitMQ 4.x (chroot), default port 5553, for features
  of RabbitMQ 3.11+ (stream statistics, Deliver v2, super streams, single
  active consumer) and 3.13+ (filtering);
- ``RBFLY_URL43``: the RabbitMQ of Debian unstable (4.3+, chroot), default
  port 5556, for features of RabbitMQ 4.3 (ResolveOffsetSpec);
- ``RBFLY_MANAGEMENT_PORT``, ``..._PORT4``, ``..._PORT43``: the port of
  each one's management plugin (15672, 15673, 15675), for
  :py:mod:`rbfly.streams.admin`.
"""

import asyncio
import contextlib
import os
import socket
import typing as tp
import uuid
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest

from rbfly.streams import Offset, ResourceState, StateChange, StreamsClient, streams_client
from rbfly.streams.backoff import Backoff
from rbfly.streams.error import NoOffset

from ..missing import missing
from .proxy import Proxy

URL = os.environ.get('RBFLY_URL', 'rabbitmq-stream://guest:guest@localhost:5552/')
URL4 = os.environ.get('RBFLY_URL4', 'rabbitmq-stream://guest:guest@localhost:5553/')
URL43 = os.environ.get('RBFLY_URL43', 'rabbitmq-stream://guest:guest@localhost:5556/')
MANAGEMENT_PORTS = {
    URL: int(os.environ.get('RBFLY_MANAGEMENT_PORT', '15672')),
    URL4: int(os.environ.get('RBFLY_MANAGEMENT_PORT4', '15673')),
    URL43: int(os.environ.get('RBFLY_MANAGEMENT_PORT43', '15675')),
}
"""The management plugin's port of each broker (``scripts/brokers.sh env``)."""

FAST = Backoff(initial=0.05, maximum=0.5)
"""Reconnection delays of a client whose connection a test cuts: back at once."""

def _reachable(url: str) -> bool:
    p = urlsplit(url)
    try:
        with socket.create_connection((p.hostname or 'localhost', p.port or 5552), timeout=2):
            return True
    except OSError:
        return False

async def read_back(client: StreamsClient, stream: str, count: int) -> list[object]:
    """The first ``count`` messages of a stream (within 30 s)."""
    received: list[object] = []
    async with asyncio.timeout(30):
        async for body in client.subscribe(stream, offset=Offset.FIRST):
            received.append(body)
            if len(received) == count:
                break
    return received

@pytest.fixture(scope='session')
def url() -> str:
    """URL of the RabbitMQ 3.10 broker; the suite fails without it."""
    if not _reachable(URL):
        pytest.fail('RabbitMQ broker not reachable at {} (run scripts/brokers.sh start)'.format(
            urlsplit(URL).netloc.split('@')[-1]
        ))
    return URL

@pytest.fixture(scope='session')
def url4() -> str:
    """
    URL of the RabbitMQ 4.x broker. Tests of 3.11+/3.13+ features skip only
    when that broker is truly absent; under CI (``CI=true``) they fail.
    """
    if not _reachable(URL4):
        missing('RabbitMQ 4.x broker not reachable at {} (scripts/brokers.sh start 4)'
                    .format(urlsplit(URL4).netloc.split('@')[-1]))
    return URL4

@pytest.fixture(scope='session')
def url43() -> str:
    """
    URL of the RabbitMQ 4.3+ broker (Debian unstable's). Optional: it skips
    when that broker is absent, as ``scripts/brokers.sh start`` carries on
    without it when Debian unstable cannot provide it; under CI
    (``CI=true``) they fail.
    """
    if not _reachable(URL43):
        missing('RabbitMQ 4.3 broker not reachable at {} (scripts/brokers.sh start 43;'
                    ' it comes from Debian unstable)'.format(urlsplit(URL43).netloc.split('@')[-1]))
    return URL43

@pytest.fixture(params=['3.10', '4.x'])
def any_url(request: pytest.FixtureRequest) -> str:
    """Each broker in turn."""
    name: str = request.param
    return str(request.getfixturevalue('url' if name == '3.10' else 'url4'))

@pytest.fixture
def stream() -> str:
    """A stream name unique to the test."""
    return 'rbfly-test-{}'.format(uuid.uuid4().hex[:12])

async def _client_with_stream(
        url: str, stream: str, **options: tp.Any,
) -> AsyncIterator[StreamsClient]:
    """A client of ``url`` (with ``options``), with ``stream`` created and deleted after."""
    c = streams_client(url, **options)
    await c.create_stream(stream)
    try:
        yield c
    finally:
        await c.delete_stream(stream)
        await c.disconnect()

@pytest.fixture
async def client(any_url: str, stream: str) -> AsyncIterator[StreamsClient]:
    """Client connected to each broker, with the test's stream created."""
    async for c in _client_with_stream(any_url, stream):
        yield c

@pytest.fixture
async def client310(url: str, stream: str) -> AsyncIterator[StreamsClient]:
    """Client of the RabbitMQ 3.10 broker, with the test's stream created."""
    async for c in _client_with_stream(url, stream):
        yield c

@pytest.fixture
async def client4(url4: str, stream: str) -> AsyncIterator[StreamsClient]:
    """Client of the RabbitMQ 4.x broker, with the test's stream created."""
    async for c in _client_with_stream(url4, stream):
        yield c

@pytest.fixture
def super_stream() -> str:
    """A super stream name unique to the test."""
    return 'rbfly-super-{}'.format(uuid.uuid4().hex[:12])

@pytest.fixture
async def super_client4(url4: str, super_stream: str) -> AsyncIterator[StreamsClient]:
    """Client of the RabbitMQ 4.x broker; the test's super stream is deleted after."""
    c = streams_client(url4)
    try:
        yield c
    finally:
        await c.delete_super_stream(super_stream)
        await c.disconnect()

@pytest.fixture
async def proxy(any_url: str) -> AsyncIterator[Proxy]:
    """A TCP proxy to each broker in turn (see ``proxy.py``)."""
    p = urlsplit(any_url)
    proxy = Proxy(p.hostname or 'localhost', p.port or 5552)
    await proxy.start()
    yield proxy
    await proxy.close()

@pytest.fixture
def proxied_options() -> dict[str, tp.Any]:
    """
    Options of the ``proxied`` client: quick reconnection. A test module
    needing others overrides this fixture (``test_timeouts.py``: a short
    request timeout).
    """
    return {'reconnect': FAST}

@pytest.fixture
async def proxied(
        proxy: Proxy, client: StreamsClient, proxied_options: dict[str, tp.Any],
) -> AsyncIterator[StreamsClient]:
    """
    A client of each broker in turn through the ``proxy``, with the test's
    stream (``client`` creates and deletes it, straight to the broker).
    Its first call connects it: ``proxy.connections`` counts its
    connections only.
    """
    c = streams_client('rabbitmq-stream://guest:guest@127.0.0.1:{}/'.format(proxy.port),
                       **proxied_options)
    try:
        yield c
    finally:
        await c.disconnect()

class Opened:
    """
    A subscription's state listener (its ``on_state``): :py:meth:`wait`
    returns once the broker answered its Subscribe. A subscription at
    ``Offset.NEXT`` starts where the stream ends when the broker gets that
    command, so a test publishes what it must receive after this, never
    after a sleep (0.5 s was not always enough on a loaded machine).
    """
    def __init__(self) -> None:
        self._event = asyncio.Event()

    def __call__(self, change: StateChange) -> None:
        if change.state is ResourceState.OPEN:
            self._event.set()

    async def wait(self) -> None:
        """Wait until the subscription is open (30 s at most)."""
        async with asyncio.timeout(30):
            await self._event.wait()

async def stored(
        client: StreamsClient, stream: str, reference: str, value: int | None = None,
        timeout: float = 10,
) -> int:
    """
    Wait until the broker has stored an offset under ``reference``
    (``value``, or any when ``None``), and return it: ``StoreOffset`` has
    no answer, so the offset is polled. It fails after ``timeout`` seconds
    naming the offset last read; an error other than ``NoOffset`` (none
    stored yet) is raised at once.
    """
    last: int | None = None
    try:
        async with asyncio.timeout(timeout):
            while True:
                with contextlib.suppress(NoOffset):
                    last = await client.query_offset(stream, reference)
                    if value is None or last == value:
                        return last
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError('offset {} not stored under {!r} of {} in {} s (last read: {})'.format(
            'any' if value is None else value, reference, stream, timeout, last,
        )) from None
