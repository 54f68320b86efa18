"""
The consumer lag of ``client.metrics()`` reads 0 once a consumer took
every message, on RabbitMQ 4.x (3.11+ says which chunk it committed) and
the fake broker, although the stream's last chunk is a stored offset, not
messages (the broker sends subscriptions chunks of messages only, so the
lag counted it for good).
"""

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from rbfly.streams import Offset, StreamsClient, streams_client
from rbfly.testing import FakeBroker

@pytest.fixture(params=['4.x', 'fake'])
async def client(request: pytest.FixtureRequest, stream: str) -> AsyncIterator[StreamsClient]:
    if request.param == 'fake':
        async with FakeBroker() as broker:
            c = streams_client(broker.url)
            await c.create_stream(stream)
            yield c
            await c.disconnect()
        return
    c = streams_client(str(request.getfixturevalue('url4')))
    await c.create_stream(stream)
    try:
        yield c
    finally:
        await c.delete_stream(stream)
        await c.disconnect()

async def test_lag_reads_zero_when_caught_up(client: StreamsClient, stream: str) -> None:
    async with client.publisher(stream) as publisher:
        await publisher.send_many([str(i) for i in range(10)])
    # a stored offset: a chunk after the messages, which no subscription gets
    await client.commit_offset(stream, 'somebody', 5)
    sub = client.subscribe(stream, offset=Offset.FIRST)
    async with asyncio.timeout(30):
        for _ in range(10):
            await anext(sub)
    # caught up: 0 once the broker had nothing more to send for a while
    deadline = time.monotonic() + 15
    while (lag := client.metrics().consumer_lag) != 0:
        assert time.monotonic() < deadline, 'lag {} with every message taken'.format(lag)
        await asyncio.sleep(0.1)  # wall time: the subscription's quiet second passing
    await sub.aclose()
