"""
Stream filtering: RabbitMQ 3.13+ (the 4.x broker); a clear error on 3.10.
"""

import typing as tp
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
    get_message_ctx,
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

def order_colour(msg: MessageCtx) -> str | None:
    """The filter value of an order: its colour (its body is a map)."""
    body = msg.body
    return str(body['colour']) if isinstance(body, dict) else None

@pytest.fixture(params=['4.x', '4.3'])
def url313(request: pytest.FixtureRequest) -> str:
    """Each broker with stream filtering and super streams (RabbitMQ 3.13+)."""
    return str(request.getfixturevalue('url4' if request.param == '4.x' else 'url43'))

async def test_filtering_super_stream(url313: str, super_stream: str) -> None:
    """
    A super stream publisher with a filter value extractor gives each
    partition's messages their filter values; a filtered subscription to
    the super stream gets the matching messages of every partition, each
    partition's in order, and the broker sent no chunk of another colour
    (rounds of one colour each, confirmed before the next: a chunk per
    partition and round; the client counts what the broker sent before
    its own filter).
    """
    colours = ('red', 'green', 'blue')
    orders = [
        {'order': i, 'colour': colours[(i // 30) % 3]} for i in range(180)
    ]  # six rounds of 30, two of each colour
    async with streams_client(url313) as client:
        partitions = await client.create_super_stream(super_stream, 3)
        try:
            async with client.super_stream_publisher(
                    super_stream, lambda o: str(o['order']), cls=PublisherBatchFast,
                    filter_extract=order_colour) as publisher:
                routed: dict[str, list[object]] = {p: [] for p in partitions}
                for k in range(0, len(orders), 30):
                    for order in orders[k:k + 30]:
                        routed[await publisher.partition(order)].append(order)
                        publisher.batch(order)
                    await publisher.flush()

            green = MessageFilter(order_colour, {'green'})
            expected = [o for o in orders if o['colour'] == 'green']
            received: dict[str, list[object]] = {p: [] for p in partitions}
            messages = client.subscribe_super_stream(
                super_stream, offset=Offset.FIRST, filter=green, timeout=30,
            )
            async with aclosing(messages) as bodies:
                async for body in bodies:
                    received[get_message_ctx().stream or '?'].append(body)
                    if sum(map(len, received.values())) == len(expected):
                        break
            for partition in partitions:
                assert received[partition], partition  # every partition has green orders
                assert received[partition] == [
                    o for o in routed[partition] if tp.cast(dict[str, str], o)['colour'] == 'green'
                ], partition
            assert client.metrics().consumed == len(expected)
        finally:
            await client.delete_super_stream(super_stream)
