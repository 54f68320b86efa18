"""
Pipelined publishing with confirmation callbacks.

A :py:class:`~rbfly.streams.PublisherPipelined` does not wait for the
broker between messages: ``send`` returns the message's publishing id at
once, at most ``window`` messages wait for their confirmation (``send``
waits while the window is full, so memory stays bounded however fast the
program sends), and the confirmations arrive at a listener, a group of
publishing ids at a time. Leaving the publisher's context waits for the
last of them.

The program creates a stream, publishes 20,000 messages, checks that the
listener got each publishing id confirmed exactly once and that the stream
holds the messages in order, and deletes the stream.

Run it against a broker with the stream plugin (RabbitMQ 3.9+)::

    RBFLY_URL=rabbitmq-stream://guest:guest@localhost:5552/ python publish_pipelined.py
"""

import asyncio
import contextlib
import os
import sys
import time
import uuid
from collections.abc import Sequence

from rbfly.streams import Offset, PublisherPipelined, get_message_ctx, streams_client

URL = os.environ.get('RBFLY_URL', 'rabbitmq-stream://guest:guest@localhost:5552/')
COUNT = 20_000

def check(condition: bool, what: str) -> None:
    """Exit with an error unless the condition holds (kept under ``python -O``)."""
    if not condition:
        sys.exit('failed: {}'.format(what))

class Confirmations:
    """Listener of a publisher: the publishing ids confirmed, and errors."""
    def __init__(self) -> None:
        self.ids: list[int] = []
        self.groups = 0
        self.errors: list[tuple[int, Exception]] = []

    def on_confirm(self, publishing_ids: Sequence[int]) -> None:
        # runs in the event loop for each confirmation the broker sends:
        # keep it short and never block
        self.groups += 1
        self.ids.extend(publishing_ids)

    def on_error(self, publishing_id: int, error: Exception) -> None:
        self.errors.append((publishing_id, error))

async def main() -> None:
    stream = 'rbfly-example-pipelined-{}'.format(uuid.uuid4().hex[:8])
    client = streams_client(URL)
    async with client:
        await client.create_stream(stream)
        try:
            listener = Confirmations()
            start = time.monotonic()
            async with client.publisher(
                    stream, cls=PublisherPipelined, window=2_000) as publisher:
                publisher.add_listener(
                    on_confirm=listener.on_confirm, on_error=listener.on_error,
                )
                sent = [await publisher.send({'n': i}) for i in range(COUNT)]
            # leaving the context waited for every confirmation
            elapsed = time.monotonic() - start
            print('published {} messages in {:.2f} s; {} confirmations of {} ids'.format(
                COUNT, elapsed, listener.groups, len(listener.ids),
            ))
            check(not listener.errors, 'rejected: {}'.format(listener.errors))
            check(sent == list(range(sent[0], sent[0] + COUNT)), 'consecutive publishing ids')
            check(sorted(listener.ids) == sent, 'each publishing id confirmed once')

            received = 0
            async with contextlib.aclosing(
                    client.subscribe(stream, offset=Offset.FIRST, timeout=10)) as messages:
                async for body in messages:
                    check(body == {'n': received}, 'message {} is {!r}'.format(received, body))
                    check(get_message_ctx().stream_offset == received, 'offsets in order')
                    received += 1
                    if received == COUNT:
                        break
            print('read back {} messages in order'.format(received))
        finally:
            await client.delete_stream(stream)
    print('ok: {} messages published, each confirmed once through the listener'.format(COUNT))

if __name__ == '__main__':
    asyncio.run(main())
