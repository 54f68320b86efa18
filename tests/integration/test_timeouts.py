"""
A broker that does not answer: requests time out with RequestTimeout, and
a subscription or publisher whose declaration timed out or was cancelled
leaves the connection clean (through a TCP proxy holding the broker's
data back).
"""

import asyncio
import typing as tp
from contextlib import aclosing

import pytest

from rbfly.streams import (
    ConfirmTimeout,
    Offset,
    PublisherPipelined,
    RequestTimeout,
    StreamsClient,
    get_message_ctx,
)
from rbfly.streams.aio.connection import ABANDONED
from rbfly.testing import connect, wait_background

from .proxy import Proxy

@pytest.fixture
def proxied_options() -> dict[str, tp.Any]:
    """The ``proxied`` client (see conftest.py) gives up on a request after 0.3 s."""
    return {'request_timeout': 0.3}

async def test_request_timeout(proxy: Proxy, proxied: StreamsClient, stream: str) -> None:
    """
    A request the broker does not answer in time raises RequestTimeout (a
    TimeoutError); the connection stays open and its late answer is
    ignored.
    """
    protocol = await connect(proxied)
    proxy.hold()
    with pytest.raises(RequestTimeout, match=r'no response to Metadata in 0\.3s') as info:
        await proxied.stream_exists(stream)
    assert isinstance(info.value, TimeoutError)
    proxy.release()
    assert await proxied.stream_exists(stream)
    assert await connect(proxied) is protocol
    assert protocol.is_open

async def read(client: StreamsClient, stream: str, n: int) -> list[tuple[int, object]]:
    received: list[tuple[int, object]] = []
    async with asyncio.timeout(30), \
            aclosing(client.subscribe(stream, offset=Offset.FIRST)) as bodies:
        async for body in bodies:
            received.append((get_message_ctx().stream_offset, body))
            if len(received) == n:
                break
    return received

@pytest.mark.parametrize('how', ['request_timeout', 'cancelled'])
async def test_subscription_not_answered(
        proxy: Proxy, proxied: StreamsClient, client: StreamsClient, stream: str, how: str,
) -> None:
    """
    A subscription whose Subscribe was not answered in time (or was
    cancelled) keeps its id taken until the broker confirms it is gone:
    the next subscription reads every message once, nothing of the
    abandoned one reaches it.
    """
    async with client.publisher(stream) as publisher:
        for i in range(10):
            await publisher.send('m{}'.format(i))
    protocol = await connect(proxied)

    proxy.hold_on(0x0007)  # Subscribe
    iterator = proxied.subscribe(stream, offset=Offset.FIRST)
    if how == 'request_timeout':
        with pytest.raises(RequestTimeout, match='subscription to stream'):
            await anext(iterator)
    else:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(anext(iterator), 0.2)
    await iterator.aclose()
    assert protocol.subscriptions == {0: ABANDONED}
    proxy.release()

    expected = [(i, 'm{}'.format(i)) for i in range(10)]
    assert await read(proxied, stream, 10) == expected
    async with asyncio.timeout(10):  # the abandoned id is deleted, then freed
        await wait_background(proxied)
    assert protocol.subscriptions == {}
    assert await read(proxied, stream, 10) == expected
    assert protocol.is_open

async def test_publisher_not_answered(
        proxy: Proxy, proxied: StreamsClient, stream: str,
) -> None:
    """
    A publisher whose DeclarePublisher was not answered in time keeps its
    id taken until the broker deleted it; the next publisher's messages
    are all confirmed and stored once.
    """
    protocol = await connect(proxied)
    proxy.hold_on(0x0001)  # DeclarePublisher
    with pytest.raises(RequestTimeout, match="publisher 'first'"):
        async with proxied.publisher(stream, name='first'):
            pytest.fail('declared without an answer')
    assert protocol.publishers == {0: ABANDONED}
    proxy.release()

    async with proxied.publisher(stream, name='second') as publisher:
        for i in range(10):
            await publisher.send('m{}'.format(i))
    async with asyncio.timeout(10):
        await wait_background(proxied)
    assert protocol.publishers == {}
    assert await read(proxied, stream, 10) == [(i, 'm{}'.format(i)) for i in range(10)]

async def test_confirm_timeout(proxy: Proxy, proxied: StreamsClient, stream: str) -> None:
    """
    Messages not confirmed within the publisher's confirm_timeout fail
    with ConfirmTimeout (their send, flush and listeners get it) and are
    not sent again; the publisher carries on.
    """
    async with proxied.publisher(stream, confirm_timeout=0.3) as publisher:
        await publisher.send('first')
        proxy.hold()
        with pytest.raises(ConfirmTimeout, match='message 2 to stream') as info:
            await publisher.send('held')
        assert info.value.publishing_id == 2
        assert isinstance(info.value, TimeoutError)
        assert publisher._unconfirmed == {}
        proxy.release()
        await publisher.send('after')

    async with proxied.publisher(
            stream, cls=PublisherPipelined, confirm_timeout=0.3,
    ) as pipelined:
        failed: list[int] = []
        pipelined.add_listener(on_error=lambda pid, ex: failed.append(pid))
        proxy.hold()
        for i in range(5):
            await pipelined.send('p{}'.format(i))
        with pytest.raises(ConfirmTimeout):
            await pipelined.flush()
        assert failed == [1, 2, 3, 4, 5]
        proxy.release()
        await pipelined.send('p5')
        await pipelined.flush()
    assert proxied.metrics().errored == 6

    # the broker got the held messages: they are stored, once
    received = await read(proxied, stream, 9)
    assert [body for _, body in received] == [
        'first', 'held', 'after', 'p0', 'p1', 'p2', 'p3', 'p4', 'p5',
    ]
