"""
Two single active consumers taking over from each other (RabbitMQ 3.11+).

Subscriptions to a stream that share a ``name`` and set
``single_active=True`` form a group: the broker sends messages to one of
them at a time, and when the active one ends (or its connection is lost),
it activates the next. With ``offset=Offset.reference(name)`` the next one
continues after the offset the previous one stored with
``write_offset(stream, name)``; ``consumer_update`` tells a subscription
when it becomes active or inactive.

The program publishes 90 messages, then runs two consumers, A and B, each
on a client of its own (as two processes of a service would). A reads 30
messages while B waits; A stops, and B takes over after them; A comes back
and waits; B stops after 30 messages, and A takes over again. It checks
that each message was read once, by the consumer active at the time.

Run it against RabbitMQ 3.11 or later::

    RBFLY_URL4=rabbitmq-stream://guest:guest@localhost:5553/ python single_active.py

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
    ConsumerUpdateContext,
    Offset,
    PublisherBatchFast,
    StreamsClient,
    get_message_ctx,
    streams_client,
)
from rbfly.streams.error import NoOffset

URL = (
    os.environ.get('RBFLY_URL4') or os.environ.get('RBFLY_URL')
    or 'rabbitmq-stream://guest:guest@localhost:5552/'
)
GROUP = 'billing'
QUOTA = 30  # messages each consumer reads before it stops

def check(condition: bool, what: str) -> None:
    """Exit with an error unless the condition holds (kept under ``python -O``)."""
    if not condition:
        sys.exit('failed: {}'.format(what))

class Consumer:
    """
    A consumer of the group: reads ``QUOTA`` messages, stores the offset of
    the last one and stops when told to.

    :ivar label: Name shown in the output.
    :ivar received: Messages it read, in all its runs.
    :ivar activated: Set when the broker makes it active.
    """
    def __init__(self, client: StreamsClient, stream: str, label: str) -> None:
        self.client = client
        self.stream = stream
        self.label = label
        self.received: list[str] = []
        self.activated = asyncio.Event()

    def on_update(self, update: ConsumerUpdateContext) -> None:
        # returning None: start after the offset stored under the group's
        # name (update.offset), or at the subscription's offset when none
        print('{}: {} on {}'.format(
            self.label, 'active' if update.active else 'inactive', update.stream,
        ))
        if update.active:
            self.activated.set()

    async def run(self, stop: asyncio.Event) -> None:
        """
        One run: subscribe, read ``QUOTA`` messages once active, store the
        offset of the last one, and stop when ``stop`` is set.
        """
        self.activated.clear()
        messages = self.client.subscribe(
            self.stream, name=GROUP, single_active=True, offset=Offset.reference(GROUP),
            consumer_update=self.on_update,
        )
        count = 0
        async with contextlib.aclosing(messages):
            async for body in messages:
                self.received.append(tp.cast(str, body))
                count += 1
                if count == QUOTA:
                    # store where the next active consumer continues
                    await self.client.write_offset(self.stream, GROUP)
                    await stored(self.client, self.stream, get_message_ctx().stream_offset)
                    await stop.wait()  # still the active one: the others wait
                    break
        print('{}: read {} messages, {} to {}; stopped'.format(
            self.label, count, self.received[-count], self.received[-1],
        ))

async def stored(client: StreamsClient, stream: str, offset: int) -> None:
    """
    Wait until the broker stored ``offset`` under the group's name (a
    StoreOffset request has no answer; the broker writes it asynchronously).
    """
    for _ in range(100):
        with contextlib.suppress(NoOffset):  # nothing stored yet
            if await client.query_offset(stream, GROUP) == offset:
                return
        await asyncio.sleep(0.05)
    sys.exit('failed: offset {} not stored under {!r}'.format(offset, GROUP))

async def start(consumer: Consumer, stop: asyncio.Event) -> asyncio.Task[None]:
    """
    Start a consumer's run while another one is active. The broker does
    not tell a consumer that it waits: give it a moment to subscribe.
    """
    task = asyncio.create_task(consumer.run(stop))
    await asyncio.sleep(0.3)
    check(not consumer.activated.is_set(), '{} waits while another is active'.format(
        consumer.label))
    return task

async def take_over(stopping: asyncio.Task[None], stop: asyncio.Event, successor: Consumer) -> None:
    """Stop the active consumer's run; the broker activates the next one."""
    stop.set()
    await asyncio.wait_for(stopping, 10)
    await asyncio.wait_for(successor.activated.wait(), 10)

async def main() -> None:
    stream = 'rbfly-example-sac-{}'.format(uuid.uuid4().hex[:8])
    async with streams_client(URL) as client_a, streams_client(URL) as client_b:
        await client_a.create_stream(stream)  # (connects: the broker's version is known)
        version = client_a.server_properties.get('version', '')
        if tuple(int(v) for v in version.split('.')[:2] if v.isdigit()) < (3, 11):
            await client_a.delete_stream(stream)
            sys.exit('single active consumers need RabbitMQ 3.11 or later, the broker is {};'
                     ' set RBFLY_URL4 (or RBFLY_URL) to the URL of a newer one'.format(version))
        try:
            async with client_a.publisher(stream, cls=PublisherBatchFast) as publisher:
                for i in range(3 * QUOTA):
                    publisher.batch('m{}'.format(i))
                await publisher.flush()
            a = Consumer(client_a, stream, 'A')
            b = Consumer(client_b, stream, 'B')

            stops = [asyncio.Event() for _ in range(3)]
            first = asyncio.create_task(a.run(stops[0]))  # alone: active at once
            await asyncio.wait_for(a.activated.wait(), 10)
            second = await start(b, stops[1])  # B waits
            await take_over(first, stops[0], b)  # A stops: B continues after A
            third = await start(a, stops[2])  # A is back, and waits
            await take_over(second, stops[1], a)  # B stops: A continues after B
            stops[2].set()
            await asyncio.wait_for(third, 10)
        finally:
            await client_a.delete_stream(stream)

    messages = ['m{}'.format(i) for i in range(3 * QUOTA)]
    check(a.received == messages[:QUOTA] + messages[2 * QUOTA:], 'A read m0-m29 and m60-m89')
    check(b.received == messages[QUOTA:2 * QUOTA], 'B read m30-m59')
    print('ok: A and B took over from each other; each of the {} messages read once'.format(
        len(messages)))

if __name__ == '__main__':
    asyncio.run(main())
