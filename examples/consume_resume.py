"""
A consumer with automatic offset tracking that resumes after a restart.

A subscription with a ``name`` and ``store_every`` stores, under that name,
the offset of the last message the application processed: every
``store_every`` messages, ``store_interval`` seconds after the last one,
and when the subscription ends. Subscribing again with
``offset=Offset.reference(name)`` continues after the stored offset; with
nothing stored yet, it starts at the first message.

The program publishes 100 messages to a new stream, runs a consumer that
stops after 60 of them, publishes 50 more while no consumer runs, and runs
the consumer again with a new client, as a restarted process would: it
checks that the second run starts exactly after the last message the first
one processed and reads each remaining message once. Then it deletes the
stream.

Run it against a broker with the stream plugin (RabbitMQ 3.9+)::

    RBFLY_URL=rabbitmq-stream://guest:guest@localhost:5552/ python consume_resume.py
"""

import asyncio
import contextlib
import os
import sys
import uuid

from rbfly.streams import (
    Offset,
    PublisherBatchFast,
    get_message_ctx,
    streams_client,
)
from rbfly.streams.error import NoOffset

URL = os.environ.get('RBFLY_URL', 'rabbitmq-stream://guest:guest@localhost:5552/')
CONSUMER = 'invoice-printer'

def check(condition: bool, what: str) -> None:
    """Exit with an error unless the condition holds (kept under ``python -O``)."""
    if not condition:
        sys.exit('failed: {}'.format(what))

def invoice_number(body: object) -> int:
    """The number of the invoice a message body holds."""
    number = body.get('invoice') if isinstance(body, dict) else None
    if not isinstance(number, int):
        sys.exit('failed: not an invoice: {!r}'.format(body))
    return number

async def publish(stream: str, first: int, count: int) -> None:
    """Publish messages ``first`` to ``first + count - 1``, confirmed."""
    async with streams_client(URL) as client, \
            client.publisher(stream, cls=PublisherBatchFast) as publisher:
        for n in range(first, first + count):
            publisher.batch({'invoice': n})
        await publisher.flush()

async def consume(stream: str, until: int) -> list[tuple[int, int]]:
    """
    One run of the consumer: process messages, starting after the offset
    stored under the consumer's name, until invoice ``until``; return the
    offsets and invoice numbers processed.
    """
    processed: list[tuple[int, int]] = []
    async with streams_client(URL) as client:
        messages = client.subscribe(
            stream, name=CONSUMER, offset=Offset.reference(CONSUMER),
            store_every=25, store_interval=1, timeout=10,
        )
        # aclosing: leaving the loop with `break` ends the subscription at
        # once, which stores the offset of the last message processed
        async with contextlib.aclosing(messages):
            async for body in messages:
                invoice = invoice_number(body)
                processed.append((get_message_ctx().stream_offset, invoice))
                if invoice == until:
                    break
    return processed

async def stored_offset(stream: str, expected: int) -> int:
    """
    The offset stored under the consumer's name. The broker does not
    answer a StoreOffset request and writes it to the stream
    asynchronously: wait up to 5 s for the expected value to be visible.
    """
    async with streams_client(URL) as client:
        for _ in range(100):
            with contextlib.suppress(NoOffset):  # nothing stored yet
                offset = await client.query_offset(stream, CONSUMER)
                if offset == expected:
                    break
            await asyncio.sleep(0.05)
        return await client.query_offset(stream, CONSUMER)

async def main() -> None:
    stream = 'rbfly-example-resume-{}'.format(uuid.uuid4().hex[:8])
    async with streams_client(URL) as admin:
        await admin.create_stream(stream)
        try:
            await publish(stream, 0, 100)
            first = await consume(stream, until=59)
            check([n for _, n in first] == list(range(60)), 'the first run read invoices 0-59')
            last = first[-1][0]
            stored = await stored_offset(stream, last)
            print('first run processed invoices 0-59 (offsets {}-{}); stored offset {}'.format(
                first[0][0], last, stored))
            check(stored == last, 'offset {} stored, got {}'.format(last, stored))

            await publish(stream, 100, 50)  # while the consumer is down
            second = await consume(stream, until=149)
            print('second run resumed at offset {}, invoice {}, and processed {} messages'
                  .format(second[0][0], second[0][1], len(second)))
            # the broker keeps stored offsets in the stream itself, in chunks
            # of their own that subscriptions skip: offsets may have gaps
            check(second[0][0] > stored, 'the second run starts after the stored offset')
            check([n for _, n in second] == list(range(60, 150)),
                  'the second run read invoices 60-149 once')
        finally:
            await admin.delete_stream(stream)
    print('ok: the restarted consumer resumed at invoice 60, right after the first run\'s last')

if __name__ == '__main__':
    asyncio.run(main())
