"""
Single active consumer (RabbitMQ 3.11+, so on the 4.x broker): of the
subscriptions sharing a name, one at a time receives messages; when it
ends, the next continues from the offset stored under the name.
"""

import asyncio
import typing as tp

import pytest

from rbfly.streams import (
    ConsumerUpdateContext,
    FeatureNotSupported,
    Offset,
    PublisherBatchFast,
    StreamsClient,
    get_message_ctx,
    streams_client,
)

from .conftest import Opened, stored

async def _publish(client: StreamsClient, stream: str, count: int, start: int = 0) -> None:
    async with client.publisher(stream, cls=PublisherBatchFast) as publisher:
        for i in range(start, start + count):
            publisher.batch('m{}'.format(i))
        await publisher.flush()

async def test_needs_rabbitmq_311(client310: StreamsClient, stream: str) -> None:
    with pytest.raises(FeatureNotSupported, match='single active consumer'):
        async for _ in client310.subscribe(stream, name='group', single_active=True):
            pass

async def test_needs_name(client4: StreamsClient, stream: str) -> None:
    with pytest.raises(ValueError, match='needs a name'):
        async for _ in client4.subscribe(stream, single_active=True):
            pass
    with pytest.raises(ValueError, match='single active consumer'):
        async for _ in client4.subscribe(stream, consumer_update=lambda active: None):
            pass

async def test_handover_continues_from_stored_offset(
        url4: str, client4: StreamsClient, stream: str,
) -> None:
    """
    Two consumers of one group, each on its own connection: the first
    reads half of the stream and stores its offset, then ends; the second,
    idle until then, reads exactly the other half.
    """
    await _publish(client4, stream, 100)
    first: list[str] = []
    second: list[str] = []
    second_client = streams_client(url4)
    second_subscribed = Opened()

    async def consume_second() -> None:
        async for msg in second_client.subscribe(
                stream, name='group', single_active=True, offset=Offset.reference('group'),
                on_state=second_subscribed):
            second.append(tp.cast(str, msg))
            if len(second) == 50:
                return

    try:
        async for msg in client4.subscribe(
                stream, name='group', single_active=True, offset=Offset.reference('group')):
            first.append(tp.cast(str, msg))
            if len(first) == 1:
                task = asyncio.create_task(consume_second())
                # the broker answered the second's Subscribe: a member of the
                # group, inactive, before the first leaves
                await second_subscribed.wait()
            if len(first) == 50:
                await client4.write_offset(stream, 'group')
                await stored(client4, stream, 'group', 49)
                break
        assert not second, 'the inactive consumer received messages'
        await asyncio.wait_for(task, 20)
    finally:
        await second_client.disconnect()
    assert first == ['m{}'.format(i) for i in range(50)]
    assert second == ['m{}'.format(i) for i in range(50, 100)]

async def test_consumer_update_chooses_offset(client4: StreamsClient, stream: str) -> None:
    """The callback's offset wins over the subscription's offset."""
    await _publish(client4, stream, 30)
    calls: list[ConsumerUpdateContext] = []

    async def update(context: ConsumerUpdateContext) -> Offset:
        calls.append(context)
        return Offset.offset(20)

    offsets = []
    async for _ in client4.subscribe(
            stream, name='g', single_active=True, offset=Offset.FIRST, consumer_update=update):
        offsets.append(get_message_ctx().stream_offset)
        if offsets[-1] == 29:
            break
    assert offsets == list(range(20, 30))
    assert calls == [ConsumerUpdateContext(stream, 'g', True, None, Offset.FIRST)]

async def test_consumer_update_error_ends_subscription(
        client4: StreamsClient, stream: str,
) -> None:
    """A failing callback is raised from the iterator, not lost in a task."""
    def update(context: ConsumerUpdateContext) -> None:
        raise RuntimeError('no offset for you')

    with pytest.raises(RuntimeError, match='no offset for you'):
        async for _ in client4.subscribe(
                stream, name='g', single_active=True, consumer_update=update, timeout=10):
            pass

async def test_bad_callback_result(client4: StreamsClient, stream: str) -> None:
    with pytest.raises(TypeError, match='Offset or None'):
        async for _ in client4.subscribe(
                stream, name='g', single_active=True,
                consumer_update=lambda active: 5,  # type: ignore[arg-type,return-value]
                timeout=10):
            pass
