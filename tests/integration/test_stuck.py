"""
A stuck member (``processing_timeout``), against RabbitMQ 4.x and the fake
broker: a member of a group holding a message too long commits what it
processed and steps down; another member takes the stream over from the
message held, and the stuck one's iteration raises ``ProcessingStuck``.
"""

import asyncio
from collections.abc import AsyncIterator

import pytest

from rbfly.streams import Offset, streams_client
from rbfly.streams.error import ProcessingStuck
from rbfly.testing import FakeBroker

from .conftest import Opened

@pytest.fixture(params=['4.x', 'fake'])
async def url(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    if request.param == 'fake':
        async with FakeBroker() as broker:
            yield broker.url
    else:
        yield str(request.getfixturevalue('url4'))

async def test_stuck_member_steps_down(url: str, stream: str) -> None:
    a, b = streams_client(url), streams_client(url)
    try:
        await a.create_stream(stream)
        async with a.publisher(stream) as publisher:
            await publisher.send_many([str(i) for i in range(20)])
        stuck = a.subscribe(stream, offset=Offset.FIRST, name='g', single_active=True,
                            store_every=1, processing_timeout=0.3)
        seen = [await anext(stuck) for _ in range(6)]   # message 5 held from now on
        assert seen == [str(i) for i in range(6)]
        # B joins the group while A hangs on message 5: A steps down after
        # 0.3 s of no progress, having committed 4; B starts at 5
        opened = Opened()
        later = b.subscribe(stream, offset=Offset.FIRST, name='g', single_active=True,
                            store_every=1, on_state=opened)
        first = asyncio.ensure_future(anext(later))
        await opened.wait()
        async with asyncio.timeout(30):
            assert await first == '5'
        assert await a.query_offset(stream, 'g') >= 4
        # A's application comes back: its iteration says why it ended
        with pytest.raises(ProcessingStuck) as info:
            await anext(stuck)
        assert info.value.streams == [stream] and info.value.timeout == 0.3
        await later.aclose()
    finally:
        await a.delete_stream(stream)
        await a.disconnect()
        await b.disconnect()
