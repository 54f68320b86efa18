"""
Publishing ids chosen by the application (``stream_message_ctx(body,
publish_id=...)`` of RbFly 0.10, or ``MessageCtx.stream_publish_id``): the
message is sent under its id, later messages continue from it, and the
broker's deduplication drops an id it already stored.
"""

import typing as tp

import pytest

from rbfly.amqp import MessageCtx
from rbfly.streams import (
    Offset,
    Publisher,
    PublisherBatchFast,
    PublisherPipelined,
    StreamsClient,
    get_message_ctx,
    stream_message_ctx,
)
from rbfly.streams.publishers.awaited import PublisherTrait

async def read(client: StreamsClient, stream: str, count: int) -> list[object]:
    result: list[object] = []
    async for body in client.subscribe(stream, offset=Offset.FIRST, timeout=10):
        result.append(body)
        assert get_message_ctx().stream_offset == len(result) - 1
        if len(result) == count:
            break
    return result

@pytest.mark.parametrize('cls', [Publisher, PublisherBatchFast, PublisherPipelined])
async def test_application_ids_deduplicate(
        client: StreamsClient, stream: str, cls: type[PublisherTrait],
) -> None:
    """
    An application re-publishing from its own source after a restart sends
    the same ids; the broker keeps each message once.
    """
    async def publish(bodies: list[tuple[int, str]]) -> int:
        p: tp.Any
        async with client.publisher(stream, name='app', cls=cls) as p:
            for pid, body in bodies:
                msg = stream_message_ctx(body, publish_id=pid)
                if cls is PublisherBatchFast:
                    p.batch(msg)
                else:
                    await p.send(msg)
            if cls is not Publisher:
                await p.flush()
            return int(p.message_id)

    assert await publish([(10 + i, 'm{}'.format(i)) for i in range(5)]) == 14
    # "restart": ids 12..16, of which 12..14 are stored already
    assert await publish([(10 + i, 'm{}'.format(i)) for i in range(2, 7)]) == 16
    async with client.publisher(stream, name='app', cls=cls) as last:
        assert last.message_id == 16
    assert await read(client, stream, 7) == ['m{}'.format(i) for i in range(7)]

async def test_mixed_ids_continue(client: StreamsClient, stream: str) -> None:
    """Messages without an id continue after the last explicit one."""
    async with client.publisher(stream, cls=PublisherPipelined) as p:
        assert await p.send('a') == 1
        assert await p.send(MessageCtx('b', stream_publish_id=100)) == 100
        assert await p.send('c') == 101
        with pytest.raises(ValueError, match='waiting for confirmation'):
            await p.send(MessageCtx('x', stream_publish_id=101))
        await p.flush()
    async with client.publisher(stream, cls=PublisherBatchFast) as b:
        b.batch('d')
        b.batch(MessageCtx('e', stream_publish_id=50))
        b.batch('f')
        await b.flush()
        assert b.message_id == 51
        b.batch(MessageCtx('x', stream_publish_id=60))
        b.batch(MessageCtx('y', stream_publish_id=60))
        with pytest.raises(ValueError, match='must not repeat'):
            await b.flush()
    assert await read(client, stream, 6) == ['a', 'b', 'c', 'd', 'e', 'f']
