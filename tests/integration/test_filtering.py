"""
Stream filtering: RabbitMQ 3.13+ (the 4.x broker); a clear error on 3.10.
"""

from contextlib import aclosing
from urllib.parse import urlsplit

import pytest

from rbfly.amqp import MessageCtx
from rbfly.streams import (
    FeatureNotSupported,
    MessageFilter,
    Offset,
    PublisherBatchFast,
    StreamsClient,
    streams_client,
)
from rbfly.streams.backoff import Backoff

from .proxy import Proxy

def colour(msg: MessageCtx) -> str | None:
    value = msg.app_properties.get('colour')
    return value if isinstance(value, str) else None

async def test_filtering(client4: StreamsClient, stream: str) -> None:
    """Only messages with the requested filter value are received."""
    async with client4.publisher(stream, cls=PublisherBatchFast, filter_extract=colour) as pub:
        for i in range(300):
            c = ('red', 'green', 'blue')[i % 3]
            pub.batch(MessageCtx(i, app_properties={'colour': c}))
            if i % 50 == 49:
                await pub.flush()
    flt = MessageFilter(colour, {'green'})
    received = []
    async for body in client4.subscribe(stream, offset=Offset.FIRST, filter=flt, timeout=3):
        received.append(body)
        if len(received) == 100:
            break
    assert received == list(range(1, 300, 3))

async def test_filtering_needs_newer_broker(client310: StreamsClient, stream: str) -> None:
    """RabbitMQ 3.10 has no filtering: a typed error before anything is sent."""
    with pytest.raises(FeatureNotSupported, match=r'3\.13'):
        async with client310.publisher(stream, filter_extract=colour):
            pass
    with pytest.raises(FeatureNotSupported, match=r'3\.13'):
        async for _ in client310.subscribe(stream, filter=MessageFilter(colour, {'red'})):
            pass

async def test_filter_kept_after_reconnect(url4: str, stream: str) -> None:
    """
    A filtered subscription whose connection is cut subscribes again with
    its filter (rstream once dropped it): chunks of one colour each, and
    the broker sends the green ones only, before and after the cut (the
    client counts what the broker sent, before its own filter); every
    green message once, in order.
    """
    p = urlsplit(url4)
    proxy = Proxy(p.hostname or 'localhost', p.port or 5553)
    await proxy.start()
    client = streams_client(
        'rabbitmq-stream://guest:guest@127.0.0.1:{}/'.format(proxy.port),
        reconnect=Backoff(initial=0.05, maximum=0.5),
    )

    async def publish(first: int) -> None:
        async with client.publisher(
                stream, cls=PublisherBatchFast, filter_extract=colour) as publisher:
            for k in range(first, first + 10):
                value = ('red', 'green')[k % 2]
                for i in range(20):
                    publisher.batch(MessageCtx(k * 20 + i, app_properties={'colour': value}))
                await publisher.flush()

    try:
        async with client:
            await client.create_stream(stream)
            await publish(0)
            received: list[object] = []
            green = MessageFilter(colour, {'green'})
            subscription = client.subscribe(stream, offset=Offset.FIRST, filter=green, timeout=30)
            async with aclosing(subscription) as bodies:
                async for body in bodies:
                    received.append(body)
                    if len(received) == 100:
                        assert proxy.cut() >= 1
                        await publish(10)
                    if len(received) == 200:
                        break
            assert received == [k * 20 + i for k in range(1, 20, 2) for i in range(20)]
            assert client.metrics().consumed == 200
            assert proxy.connections >= 2
            await client.delete_stream(stream)
    finally:
        await proxy.close()
