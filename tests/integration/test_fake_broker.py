"""
What only the fake broker (:py:mod:`rbfly.testing`) does: lose every
connection on demand, claim another RabbitMQ version, take other users,
and show what it stores. What it shares with RabbitMQ is tested in
``test_behaviour.py``.
"""

import asyncio
import re
import typing as tp
from pathlib import Path

import pytest

from rbfly.streams import (
    FeatureNotSupported,
    Offset,
    PublisherPipelined,
    get_message_ctx,
    streams_client,
)
from rbfly.streams.error import ConnectionLost
from rbfly.testing import (
    FakeBroker,
    connect,
    current_broker,
    node_connections,
    own_connection,
    sasl_mechanism,
    wait_background,
)

DOC = Path(__file__).resolve().parents[2] / 'doc' / 'testing.rst'

async def test_recovery_after_connections_dropped() -> None:
    """
    Every connection dropped while a named publisher sends: the client
    reconnects, sends its unconfirmed messages again, and the broker's
    deduplication keeps each message once, in order.
    """
    async with FakeBroker() as broker:
        client = streams_client(broker.url)
        try:
            await client.create_stream('s')
            n = 3000
            async with client.publisher('s', name='p', cls=PublisherPipelined) as pub:
                for i in range(n):
                    await pub.send(i)
                    if i == 1000:
                        assert broker.drop_connections() == 1
                    if i == 2000:  # once back: all before confirmed, then again
                        await pub.flush()
                        assert broker.drop_connections() == 1
                await pub.flush()
            log = broker.store.streams['s']
            assert log.next_offset == n
            got: list[int] = []
            async with asyncio.timeout(20):
                async for body in client.subscribe('s', offset=Offset.FIRST):
                    got.append(tp.cast(int, body))
                    assert get_message_ctx().stream_offset == len(got) - 1
                    if len(got) == n:
                        break
            assert got == list(range(n))
        finally:
            await client.disconnect()

async def test_subscription_resumes_after_drop() -> None:
    """A subscription continues after its connection was dropped, with no gap or repeat."""
    async with FakeBroker() as broker:
        client = streams_client(broker.url)
        try:
            await client.create_stream('s')
            async with client.publisher('s') as pub:
                for i in range(10):
                    await pub.send(i)
            got: list[object] = []
            async with asyncio.timeout(20):
                async for body in client.subscribe('s', offset=Offset.FIRST):
                    got.append(body)
                    if len(got) == 5:
                        broker.drop_connections()
                        async with client.publisher('s') as pub:
                            for i in range(10, 15):
                                await pub.send(i)
                    if len(got) == 15:
                        break
            assert got == list(range(15))
        finally:
            await client.disconnect()

async def test_claimed_version() -> None:
    """Features are enabled by the version the broker claims, as with RabbitMQ."""
    async with FakeBroker(version='3.10.0') as broker:
        client = streams_client(broker.url)
        try:
            await client.create_stream('s')
            with pytest.raises(FeatureNotSupported, match=r'3\.11'):
                await client.stream_stats('s')
        finally:
            await client.disconnect()

async def test_users_and_virtual_hosts() -> None:
    """The login and the virtual host are checked; a wrong one is a typed error."""
    async with FakeBroker(users={'app': 's3cret'}, virtual_hosts=['prod']) as broker:
        assert broker.url == 'rabbitmq-stream://app:s3cret@127.0.0.1:{}/'.format(broker.port)
        good = streams_client(broker.url + 'prod')
        wrong_vhost = streams_client(broker.url)
        wrong_password = streams_client(
            'rabbitmq-stream://app:nope@127.0.0.1:{}/prod'.format(broker.port),
        )
        try:
            await good.create_stream('s')
            assert await good.stream_exists('s')
            for client in (wrong_vhost, wrong_password):
                with pytest.raises((ConnectionLost, Exception)) as info:
                    await client.create_stream('s')
                assert type(info.value).__module__.startswith('rbfly.')
        finally:
            for client in (good, wrong_vhost, wrong_password):
                await client.disconnect()

async def test_store_contents() -> None:
    """Streams, chunks, sequences and offsets are there for a test to read."""
    async with FakeBroker() as broker:
        client = streams_client(broker.url)
        try:
            await client.create_stream('s', max_age='1h')
            async with client.publisher('s', name='p') as pub:
                await pub.send('a')
                await pub.send('b')
            await client.write_offset('s', 'app', 1)
            await client.query_publisher_sequence('s', 'p')  # StoreOffset has been read
            store = broker.store
            assert store.streams['s'].arguments == {'max-age': '1h'}
            assert store.streams['s'].next_offset == 2
            assert len(store.streams['s'].chunks) == 2
            assert store.sequences == {('s', 'p'): 2}
            assert store.offsets == {('s', 'app'): 1}
        finally:
            await client.disconnect()

async def test_not_started() -> None:
    """Using a broker that is not running is a clear error."""
    broker = FakeBroker()
    with pytest.raises(RuntimeError, match='not started'):
        broker.url  # noqa: B018
    async with broker:
        with pytest.raises(RuntimeError, match='running already'):
            await broker.start()

async def test_seam_shows_the_connections() -> None:
    """
    The seam of :py:mod:`rbfly.testing` on a client of the fake broker:
    the client's own connection (the same object while it lasts), what
    each connection holds, another connection when one is full, snapshots
    that do not change, none left after the publishers and
    :py:meth:`~rbfly.streams.StreamsClient.disconnect`.
    """
    async with FakeBroker() as broker:
        client = streams_client(broker.url, publishers_per_connection=1)
        try:
            protocol = await connect(client)
            assert await connect(client) is protocol and protocol.is_open
            assert protocol.server_properties['product'] == 'rbfly.testing'
            assert sasl_mechanism(protocol) == 'PLAIN'
            assert current_broker(client).port == broker.port
            await client.create_stream('s')
            before = own_connection(client)
            async with client.publisher('s') as first, client.publisher('s') as second:
                await first.send('m')
                own = own_connection(client)
                assert own.protocol is protocol and own.publishers == {first}
                [extra] = node_connections(client)[None]  # the own one is full
                assert extra.publishers == {second} and extra.subscriptions == frozenset()
                assert extra.protocol is second.protocol is not protocol
                messages = client.subscribe('s', offset=Offset.FIRST)
                assert await anext(messages) == 'm'
                [sub] = own_connection(client).subscriptions
                assert sub.stream == 's'
                await messages.aclose()
                assert own_connection(client).subscriptions == frozenset()
            assert before.publishers == frozenset() and own.publishers == {first}
            assert node_connections(client) == {}
            await wait_background(client)  # the extra connection closed with its publisher
            assert extra.protocol is not None and not extra.protocol.is_open
        finally:
            await client.disconnect()
        assert own_connection(client).protocol is None
        assert not protocol.is_open

def doc_examples() -> list[str]:
    """The Python code blocks of doc/testing.rst (a literal block importing rbfly)."""
    blocks = re.findall(r'::\n\n((?:    .*\n|\n)+)', DOC.read_text())
    code = [re.sub(r'(?m)^    ', '', b) for b in blocks]
    return [c for c in code if re.search(r'(?m)^from rbfly', c)]

@pytest.mark.parametrize('n', range(len(doc_examples())))
async def test_doc_examples_run(n: int) -> None:
    """
    Each example of doc/testing.rst runs as written: its test functions
    (``async def test_...``) run and pass on the fake broker.
    """
    namespace: dict[str, tp.Any] = {}
    exec(compile(doc_examples()[n], '{}:example {}'.format(DOC.name, n), 'exec'), namespace)
    tests = [f for name, f in namespace.items() if name.startswith('test_')]
    assert tests, 'the example has no test function'
    for test in tests:
        await test()


async def test_chunk_bigger_than_64_mib() -> None:
    """
    A chunk of 70 MB is read. RabbitMQ delivers a chunk as one frame however
    big its writer made it (67 MB measured on RabbitMQ 3.10.8: 16 KiB
    messages published at full speed; test_big_chunks.py has RabbitMQ 3.10
    and 4.3 write one of 71 MB); the client refused frames
    above 64 MiB, lost its connection at that chunk, and could not read back
    a stream it had written.
    """
    from rbfly.amqp import MessageCtx, encode_message
    from rbfly.testing.store import Entry

    data = encode_message(MessageCtx(b'x' * 16_374))
    record = Entry(len(data).to_bytes(4, 'big') + data, 1)
    n = 4_300
    async with FakeBroker() as broker:
        client = streams_client(broker.url)
        try:
            await client.create_stream('big')
            chunk = broker.store.streams['big'].append([record] * n, 0)
            assert len(chunk.data) > 70_000_000
            received = 0
            async for body in client.subscribe('big', offset=Offset.FIRST):
                assert body == b'x' * 16_374
                received += 1
                if received == n:
                    break
        finally:
            await client.disconnect()
    assert received == n
    assert get_message_ctx().stream_offset == n - 1
