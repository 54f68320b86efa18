"""
A service that publishes and consumes, and shuts down on SIGTERM without
losing anything.

The service publishes numbered orders (``{'seq': n}``) to a stream and
consumes them, until it gets SIGTERM (or SIGINT, Ctrl-C). It then:

1. stops publishing and leaves the publisher's context, which waits until
   the broker confirmed every message sent: each order it reports
   published is stored;
2. stops the consumer: closing its subscription stores the offset of the
   last message processed (automatic offset tracking), and the service
   waits until the broker has it;
3. closes the connection and exits with status 0.

Started again, it continues where it stopped: its publisher is named, so
it continues from the last publishing id the stream stored for the name
(the order numbers are the publishing ids; a message sent again under an
id the broker has is dropped), and the consumer subscribes after the
stored offset, so it processes each order once.

Run it, stop it with SIGTERM or Ctrl-C, and run it again::

    RBFLY_URL=rabbitmq-stream://guest:guest@localhost:5552/ python graceful_shutdown.py
    python graceful_shutdown.py --stream orders --seconds 2

``--seconds`` stops it after that many seconds as SIGTERM would.
"""

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Sequence

from rbfly.streams import (
    Offset,
    PublisherPipelined,
    StreamsClient,
    get_message_ctx,
    streams_client,
)
from rbfly.streams.error import NoOffset

URL = os.environ.get('RBFLY_URL', 'rabbitmq-stream://guest:guest@localhost:5552/')
PUBLISHER = 'order-service'
CONSUMER = 'order-service'

class Consumed:
    """What the consumer processed in this run (order numbers, stream offsets)."""
    def __init__(self) -> None:
        self.first: int | None = None
        self.last: int | None = None
        self.offset: int | None = None
        self.started = asyncio.Event()

def order_number(body: object) -> int:
    """The number of the order a message body holds."""
    number = body.get('seq') if isinstance(body, dict) else None
    if not isinstance(number, int):
        raise ValueError('not an order: {!r}'.format(body))
    return number

async def publish(client: StreamsClient, stream: str, stop: asyncio.Event) -> tuple[int, int]:
    """
    Publish orders until ``stop`` is set, about 2,000 a second; return
    the first and last order number sent, each confirmed.
    """
    confirmed: set[int] = set()

    def on_confirm(publishing_ids: Sequence[int]) -> None:
        confirmed.update(publishing_ids)

    async with client.publisher(stream, name=PUBLISHER, cls=PublisherPipelined) as publisher:
        publisher.add_listener(on_confirm=on_confirm)
        # a named publisher continues after the last id the stream stored
        first = publisher.message_id + 1
        print('publishing from order {}'.format(first), flush=True)
        while not stop.is_set():
            for _ in range(20):
                seq = publisher.message_id + 1
                await publisher.send({'seq': seq})  # the publishing id is seq
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.01)
        last = publisher.message_id
    # leaving the context waited for every confirmation (or raised)
    if confirmed != set(range(first, last + 1)):
        raise RuntimeError('orders sent and not confirmed')
    return first, last

async def consume(client: StreamsClient, stream: str, consumed: Consumed) -> None:
    """
    Process orders, from after the offset stored under the consumer's
    name, until cancelled; each must follow the previous one.
    """
    messages = client.subscribe(
        stream, name=CONSUMER, offset=Offset.reference(CONSUMER),
        store_every=1000, store_interval=1,
    )
    # closing the iterator (here when the task is cancelled at `async for`)
    # stores the offset of the last message processed
    async with contextlib.aclosing(messages):
        async for body in messages:
            seq = order_number(body)
            if consumed.last is not None and seq != consumed.last + 1:
                raise RuntimeError('order {} after order {}'.format(seq, consumed.last))
            consumed.last = seq
            consumed.offset = get_message_ctx().stream_offset
            if consumed.first is None:
                consumed.first = seq
                print('consuming from order {} (offset {})'.format(seq, consumed.offset),
                      flush=True)
                consumed.started.set()

async def wait_stored(client: StreamsClient, stream: str, offset: int) -> None:
    """
    Wait until the broker has the consumer's offset (a StoreOffset request
    has no answer; the broker writes it asynchronously).
    """
    for _ in range(100):
        with contextlib.suppress(NoOffset):  # nothing stored yet
            if await client.query_offset(stream, CONSUMER) == offset:
                return
        await asyncio.sleep(0.05)
    raise RuntimeError('offset {} not stored'.format(offset))

async def service(stream: str, seconds: float | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    if seconds is not None:
        loop.call_later(seconds, stop.set)

    async with streams_client(URL) as client:
        await client.create_stream(stream)  # when it does not exist yet
        consumed = Consumed()
        consumer = asyncio.create_task(consume(client, stream, consumed))
        publisher = asyncio.create_task(publish(client, stream, stop))
        # running once the consumer has an order; a task that ended early failed
        started = asyncio.create_task(consumed.started.wait())
        stopping = asyncio.create_task(stop.wait())
        done, _ = await asyncio.wait(
            [started, stopping, consumer, publisher], timeout=10,
            return_when=asyncio.FIRST_COMPLETED,
        )
        started.cancel()
        stopping.cancel()
        if not done:
            raise RuntimeError('the consumer got no order within 10 s')
        if started in done:
            print('running: send SIGTERM (or press Ctrl-C) to stop', flush=True)
        if consumer in done or publisher in done:
            stop.set()  # shut down; its error is raised below

        await stop.wait()
        print('stopping', flush=True)
        first, last = await publisher  # all confirmed
        consumer.cancel()
        await asyncio.wait([consumer])  # not raising the CancelledError we caused
        if not consumer.cancelled():
            consumer.result()  # its error
        if consumed.offset is not None:
            await wait_stored(client, stream, consumed.offset)
    print('ok: published orders {}-{}, all confirmed; consumed orders {}-{};'
          ' offset {} stored'.format(first, last, consumed.first, consumed.last, consumed.offset))

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('--stream', default='rbfly-example-orders')
    parser.add_argument('--seconds', type=float, help='stop after this many seconds')
    args = parser.parse_args()
    try:
        asyncio.run(service(args.stream, args.seconds))
    except (RuntimeError, ValueError) as ex:
        sys.exit('failed: {}'.format(ex))

if __name__ == '__main__':
    main()
