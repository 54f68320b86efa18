"""
More publishers and subscriptions than one connection holds: the client
opens more connections to the broker, and closes them with the last of
what they hold.
"""

import asyncio
import contextlib

from rbfly.streams import Offset, StreamsClient, get_message_ctx, streams_client
from rbfly.testing import connect, node_connections, own_connection

async def test_small_limits(any_url: str, client: StreamsClient, stream: str) -> None:
    """
    With two of each per connection, five publishers and five
    subscriptions use three connections each way; every message arrives
    once at every subscription.
    """
    limited = streams_client(
        any_url, publishers_per_connection=2, subscriptions_per_connection=2,
    )
    async with limited, contextlib.AsyncExitStack() as stack:
        publishers = [
            await stack.enter_async_context(limited.publisher(stream, name='p{}'.format(i)))
            for i in range(5)
        ]
        home = await connect(limited)
        assert len(home.publishers) == 2
        extra = node_connections(limited)[None]
        assert sorted(len(m.publishers) for m in extra) == [1, 2]
        protocols = {p.protocol for p in publishers}
        assert len(protocols) == 3
        for i, p in enumerate(publishers):
            await p.send('from {}'.format(i))

        iterators = [limited.subscribe(stream, offset=Offset.FIRST) for _ in range(5)]
        firsts = [await anext(it) for it in iterators]
        assert firsts == ['from 0'] * 5
        assert len(home.subscriptions) == 2
        # (the other connections' room is used before another one is opened)
        assert sorted(len(m.subscriptions) for m in node_connections(limited)[None]) == [1, 2]
        for it in iterators:
            rest = [await anext(it) for _ in range(4)]
            assert rest == ['from {}'.format(i) for i in range(1, 5)]
            await it.aclose()

        # the subscriptions' own connection is closed with the last of them
        assert sorted(len(m.publishers) for m in node_connections(limited)[None]) == [1, 2]
        await stack.aclose()
        assert node_connections(limited) == {}

    async with asyncio.timeout(10):
        received = []
        async for body in client.subscribe(stream, offset=Offset.FIRST):
            received.append(body)
            if get_message_ctx().stream_offset == 4:
                break
    assert received == ['from {}'.format(i) for i in range(5)]

async def test_more_than_the_protocol_allows(client: StreamsClient, stream: str) -> None:
    """
    300 publishers and 300 subscriptions on one client (a connection
    holds 256 of each).
    """
    async with contextlib.AsyncExitStack() as stack:
        publishers = [
            await stack.enter_async_context(client.publisher(stream)) for _ in range(300)
        ]
        assert len({p.protocol for p in publishers}) == 2
        await asyncio.gather(*(p.send(i) for i, p in enumerate(publishers)))

    iterators = [client.subscribe(stream, offset=Offset.FIRST) for _ in range(300)]
    try:
        async with asyncio.timeout(60):
            seen = await asyncio.gather(*(anext(it) for it in iterators))
        assert len(seen) == 300
        assert len(set(seen)) == 1
        assert set(seen) <= set(range(300))
        assert len(own_connection(client).subscriptions) == 256
        assert [len(m.subscriptions) for m in node_connections(client)[None]] == [44]
    finally:
        for it in iterators:
            await it.aclose()
    assert node_connections(client) == {}

async def test_short_subscriptions_in_quick_succession(any_url: str, stream: str) -> None:
    """
    Subscriptions that end at once (``stop_at_end``) and start again, a
    thousand at a time: an id ended is taken until the broker answered its
    Unsubscribe, and counts as held, so a connection never runs out of its
    256 ids (it did: "too many subscriptions on one connection (256)").
    """
    client = streams_client(any_url)
    async with client:
        await client.create_stream(stream)
        try:
            async with client.publisher(stream) as publisher:
                await publisher.send_many([str(i) for i in range(5)])

            async def read() -> int:
                n = 0
                async for chunk in client.subscribe_chunks(
                        stream, offset=Offset.FIRST, stop_at_end=True):
                    n += len(chunk)
                return n

            counts = await asyncio.gather(*(read() for _ in range(1000)))
            assert counts == [5] * 1000
        finally:
            await client.delete_stream(stream)
