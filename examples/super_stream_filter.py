"""
Filtering a super stream (RabbitMQ 3.13+): a consumer of one region's
orders reads every partition, and the broker sends it only the chunks
that may hold them.

A super stream's publisher routes each order to a partition by its
customer (hash routing: a customer's orders stay in order) and, with
``filter_extract``, gives each order a filter value, its region: every
partition's publisher writes it, and the broker keeps a Bloom filter of
the values of each chunk. A subscription to the super stream with a
:py:class:`~rbfly.streams.MessageFilter` subscribes to each partition with
the filter: the broker skips the chunks without the region, and the client
drops the other orders of the chunks it sends (the Bloom filter's false
positives), with the filter's function.

The program creates a super stream of three partitions, publishes 90
orders of three regions (a batch of each region at a time, so that a
chunk holds one region), reads the ``eu`` orders back from all partitions,
and checks that it got each of them once, a partition's in order, and
that the broker sent nothing else. Then it deletes the super stream.

Run it against RabbitMQ 3.13 or later::

    RBFLY_URL4=rabbitmq-stream://guest:guest@localhost:5553/ python super_stream_filter.py

(``RBFLY_URL4``, the URL of a RabbitMQ 4 broker in rbfly's CI, or else
``RBFLY_URL``.)
"""

import asyncio
import contextlib
import os
import sys
import typing as tp
import uuid

from rbfly.streams import (
    MessageCtx,
    MessageFilter,
    Offset,
    PublisherBatchFast,
    get_message_ctx,
    streams_client,
)

URL = (
    os.environ.get('RBFLY_URL4') or os.environ.get('RBFLY_URL')
    or 'rabbitmq-stream://guest:guest@localhost:5552/'
)
REGIONS = ['eu', 'us', 'asia']
BATCH = 15
COUNT = 90

Order = dict[str, tp.Any]

def check(condition: bool, what: str) -> None:
    """Exit with an error unless the condition holds (kept under ``python -O``)."""
    if not condition:
        sys.exit('failed: {}'.format(what))

def customer(order: Order) -> str:
    """The routing key of an order: its customer."""
    return str(order['customer'])

def region(msg: MessageCtx) -> str | None:
    """The filter value of an order (a message: its body is the order)."""
    body = msg.body
    return str(body['region']) if isinstance(body, dict) else None

async def main() -> None:
    super_stream = 'rbfly-example-filter-{}'.format(uuid.uuid4().hex[:8])
    async with streams_client(URL) as client:
        await client.stream_exists(super_stream)  # connects: the broker's version is known
        version = client.server_properties.get('version', '')
        if tuple(int(v) for v in version.split('.')[:2] if v.isdigit()) < (3, 13):
            sys.exit('filtering and creating super streams need RabbitMQ 3.13 or later, the'
                     ' broker is {}; set RBFLY_URL4 (or RBFLY_URL) to the URL of a newer'
                     ' one'.format(version))

        partitions = await client.create_super_stream(super_stream, 3)
        try:
            orders = [
                {'order': i, 'customer': 'c{}'.format(i % 7),
                 'region': REGIONS[(i // BATCH) % len(REGIONS)]}
                for i in range(COUNT)
            ]
            routed: dict[str, list[Order]] = {p: [] for p in partitions}
            async with client.super_stream_publisher(
                    super_stream, customer, cls=PublisherBatchFast,
                    filter_extract=region) as publisher:
                for k in range(0, COUNT, BATCH):  # a region at a time
                    for order in orders[k:k + BATCH]:
                        routed[await publisher.partition(order)].append(order)
                        publisher.batch(order)
                    await publisher.flush()  # every partition's batch, confirmed
            print('published {} orders to {}'.format(COUNT, ', '.join(partitions)))

            expected = [o for o in orders if o['region'] == 'eu']
            received: dict[str, list[Order]] = {p: [] for p in partitions}
            eu = MessageFilter(region, {'eu'})
            messages = client.subscribe_super_stream(
                super_stream, offset=Offset.FIRST, filter=eu, timeout=10,
            )
            async with contextlib.aclosing(messages):
                async for body in messages:
                    partition = get_message_ctx().stream or '?'  # set for super streams
                    received[partition].append(tp.cast(Order, body))
                    if sum(map(len, received.values())) == len(expected):
                        break
            sent = client.metrics().consumed  # messages the broker sent, before the filter
        finally:
            await client.delete_super_stream(super_stream)

    for partition in partitions:
        mine = [o for o in routed[partition] if o['region'] == 'eu']
        print('{}: {} eu orders'.format(partition, len(received[partition])))
        check(received[partition] == mine,
              'the eu orders of partition {}, in order'.format(partition))
    check(sent == len(expected), 'the broker sent {} messages, not {}: only eu chunks'.format(
        sent, len(expected)))
    print('ok: {} eu orders of {}, from {} partitions; the broker sent no other'.format(
        len(expected), COUNT, len(partitions)))

if __name__ == '__main__':
    asyncio.run(main())
