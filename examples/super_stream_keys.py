"""
A super stream with key routing (created over the protocol: RabbitMQ 3.13+).

A super stream is a stream partitioned into several streams, bound to an
exchange of its name. Created with binding keys, each partition is named
after its key (``orders-eu``, ...). A publisher with ``routing='key'``
sends each message to the partition the broker binds its routing key to
(the key of a message is what the ``routing_key`` function returns); a key
without a binding raises :py:class:`~rbfly.streams.NoRoute`. Messages of
one key go to one partition, in order. A subscription to the super stream
reads all partitions; ``get_message_ctx().stream`` names a message's.

The program creates a super stream with the keys ``eu``, ``us`` and
``asia``, publishes 60 orders of these regions, shows that an order of an
unknown region has no route, reads the orders back and checks that each
is in its region's partition, in order. Then it deletes the super stream.

Run it against RabbitMQ 3.13 or later::

    RBFLY_URL4=rabbitmq-stream://guest:guest@localhost:5553/ python super_stream_keys.py

(``RBFLY_URL4``, the URL of a RabbitMQ 4 broker in rbfly's CI, or else
``RBFLY_URL``.)
"""

import asyncio
import contextlib
import os
import sys
import typing as tp
import uuid
from collections import defaultdict

from rbfly.streams import (
    NoRoute,
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
COUNT = 60

Order = dict[str, tp.Any]

def check(condition: bool, what: str) -> None:
    """Exit with an error unless the condition holds (kept under ``python -O``)."""
    if not condition:
        sys.exit('failed: {}'.format(what))

def region(order: Order) -> str:
    """The routing key of an order."""
    return tp.cast(str, order['region'])

async def main() -> None:
    super_stream = 'rbfly-example-orders-{}'.format(uuid.uuid4().hex[:8])
    async with streams_client(URL) as client:
        await client.stream_exists(super_stream)  # connects: the broker's version is known
        version = client.server_properties.get('version', '')
        if tuple(int(v) for v in version.split('.')[:2] if v.isdigit()) < (3, 13):
            sys.exit('creating super streams needs RabbitMQ 3.13 or later, the broker is {};'
                     ' set RBFLY_URL4 (or RBFLY_URL) to the URL of a newer one'.format(version))

        partitions = await client.create_super_stream(super_stream, binding_keys=REGIONS)
        try:
            print('created super stream {} with partitions {}'.format(
                super_stream, ', '.join(partitions)))
            check(await client.route(super_stream, 'us') == [super_stream + '-us'],
                  'key us bound to partition -us')

            orders = [{'region': REGIONS[i % 3], 'order': i} for i in range(COUNT)]
            async with client.super_stream_publisher(
                    super_stream, region, routing='key', cls=PublisherBatchFast) as publisher:
                for order in orders:
                    publisher.batch(order)
                await publisher.flush()  # all partitions' batches, confirmed
                try:
                    await publisher.partition({'region': 'mars', 'order': -1})
                except NoRoute as ex:
                    print('no route for an order of region mars: {}'.format(ex))
                else:
                    sys.exit('failed: an order of region mars was routed')
            print('published {} orders, routed by region'.format(COUNT))

            received: dict[str, list[Order]] = defaultdict(list)
            messages = client.subscribe_super_stream(super_stream, offset=Offset.FIRST, timeout=10)
            async with contextlib.aclosing(messages):
                async for body in messages:
                    partition = get_message_ctx().stream or '?'  # set for super streams
                    received[partition].append(tp.cast(Order, body))
                    if sum(map(len, received.values())) == COUNT:
                        break
        finally:
            await client.delete_super_stream(super_stream)

    for key in REGIONS:
        partition = '{}-{}'.format(super_stream, key)
        print('{}: {} orders'.format(partition, len(received[partition])))
        check(received[partition] == [o for o in orders if o['region'] == key],
              'the orders of region {} in partition {}, in order'.format(key, partition))
    print('ok: {} orders, each in the partition of its region, in order'.format(COUNT))

if __name__ == '__main__':
    asyncio.run(main())
