"""
Stream filtering: RabbitMQ 3.13+ (the 4.x broker); a clear error on 3.10.
"""

import pytest

from rbfly.amqp import MessageCtx
from rbfly.streams import (
    FeatureNotSupported,
    MessageFilter,
    Offset,
    PublisherBatchFast,
    StreamsClient,
)

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
