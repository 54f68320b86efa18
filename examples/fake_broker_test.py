"""
Unit tests of an application with rbfly's fake broker: no RabbitMQ
needed. Run them with pytest::

    python -m pytest examples/fake_broker_test.py

The application here forwards orders over 100 from one stream to another,
storing its offset so that a restart neither repeats nor skips an order.
The tests run it against :py:class:`rbfly.testing.FakeBroker`, twice, as a
restart would, and look at what the broker stored.
"""

import asyncio

from rbfly.streams import Offset, StreamsClient, get_message_ctx, streams_client
from rbfly.testing import FakeBroker

async def forward_big_orders(client: StreamsClient, count: int) -> None:
    """The application: read ``count`` orders, forward the big ones, store the offset."""
    async with client.publisher('big-orders', name='forwarder') as publisher:
        seen = 0
        async for order in client.subscribe(
                'orders', offset=Offset.reference('forwarder'), timeout=5):
            assert isinstance(order, dict)
            total = order['total']
            if isinstance(total, int) and total > 100:
                await publisher.send(order)
            await client.write_offset('orders', 'forwarder', get_message_ctx().stream_offset)
            seen += 1
            if seen == count:
                break

async def publish_orders(client: StreamsClient, totals: list[int], first: int = 0) -> None:
    async with client.publisher('orders') as publisher:
        for i, total in enumerate(totals, first):
            await publisher.send({'id': i, 'total': total})

def test_big_orders_are_forwarded_once() -> None:
    """Two runs of the application, as around a restart: each order handled once."""
    async def scenario() -> None:
        async with FakeBroker() as broker:
            client = streams_client(broker.url)
            try:
                await client.create_stream('orders')
                await client.create_stream('big-orders')
                await publish_orders(client, [50, 150, 300])
                await forward_big_orders(client, 3)
                await publish_orders(client, [500, 20], first=3)
                await forward_big_orders(client, 2)   # resumes after offset 2

                forwarded = []
                async for order in client.subscribe('big-orders', offset=Offset.FIRST):
                    forwarded.append(order)
                    if len(forwarded) == 3:
                        break
                assert forwarded == [
                    {'id': 1, 'total': 150}, {'id': 2, 'total': 300}, {'id': 3, 'total': 500},
                ]
                # what the broker keeps, for a test to check
                assert broker.store.streams['orders'].next_offset == 5
                assert broker.store.offsets[('orders', 'forwarder')] == 4
            finally:
                await client.disconnect()

    asyncio.run(scenario())
    print('ok: big orders forwarded once each')
