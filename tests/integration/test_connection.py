"""
Connection handshake, streams management and errors against real brokers.
"""

import asyncio
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from rbfly.streams import ConnectionLost, StreamsClient, streams_client
from rbfly.streams.error import (
    AuthenticationFailure,
    StreamAlreadyExists,
    StreamDoesNotExist,
    VirtualHostAccessFailure,
)
from rbfly.testing import connect, own_connection

from .proxy import Proxy

def _with(url: str, *, userinfo: str | None = None, path: str | None = None,
          port: int | None = None) -> str:
    p = urlsplit(url)
    host = p.hostname or 'localhost'
    netloc = '{}@{}:{}'.format(
        userinfo if userinfo is not None else '{}:{}'.format(p.username, p.password),
        host, port if port is not None else p.port,
    )
    return urlunsplit((p.scheme, netloc, path if path is not None else p.path, '', ''))

BROKERS_SCRIPT = str(Path(__file__).resolve().parents[2] / 'scripts' / 'brokers.sh')

async def test_connect_reports_broker_version(any_url: str) -> None:
    """The handshake completes and the broker's version is known."""
    client = streams_client(any_url)
    async with client:
        protocol = await connect(client)
        assert protocol.is_open
        version = protocol.server_properties['version']
        assert version.startswith('3.10' if '5552' in any_url else '4.')

async def test_create_and_delete_stream(any_url: str, stream: str) -> None:
    """Streams are created with arguments and deleted; repeats are errors only on request."""
    client = streams_client(any_url)
    async with client:
        await client.create_stream(stream, max_length_bytes=10_000_000, max_age='1h')
        await client.create_stream(stream, max_length_bytes=10_000_000, max_age='1h')
        with pytest.raises(StreamAlreadyExists):
            await client.create_stream(
                stream, max_length_bytes=10_000_000, max_age='1h', exist_ok=False,
            )
        await client.delete_stream(stream)
        await client.delete_stream(stream)
        with pytest.raises(StreamDoesNotExist):
            await client.delete_stream(stream, missing_ok=False)

async def test_wrong_password(any_url: str, caplog: pytest.LogCaptureFixture) -> None:
    """
    Refused credentials raise a typed error naming the user and what to
    check, without the password; the log names the URI the client
    connects to, its default virtual host one slash (it showed ``//``).
    """
    client = streams_client(_with(any_url, userinfo='guest:not-the-password', path='/'))
    with caplog.at_level('INFO', logger='rbfly'), \
            pytest.raises(AuthenticationFailure) as info:
        await client.create_stream('never-created')
    text = str(info.value)
    assert 'not-the-password' not in text
    assert 'not-the-password' not in repr(client)
    assert "the broker refused user 'guest': check the user name and the password" in text
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith('connecting')]
    where = urlsplit(any_url)
    assert lines and set(lines) == {'connecting to rabbitmq-stream://guest@{}:{}/'.format(
        where.hostname, where.port)}
    assert 'not-the-password' not in caplog.text

async def test_unknown_virtual_host(any_url: str) -> None:
    """
    A virtual host that does not exist raises VirtualHostAccessFailure,
    naming the user and the virtual host.
    """
    client = streams_client(_with(any_url, path='/no-such-vhost'))
    with pytest.raises(VirtualHostAccessFailure) as info:
        await client.create_stream('never-created')
    user = urlsplit(any_url).username
    assert "user '{}' may not open virtual host 'no-such-vhost'".format(user) \
        in str(info.value)

async def test_percent_encoded_default_vhost(any_url: str, stream: str) -> None:
    """``/%2F`` names the default virtual host."""
    client = streams_client(_with(any_url, path='/%2F'))
    async with client:
        await client.create_stream(stream)
        await client.delete_stream(stream, missing_ok=False)

async def test_connection_refused() -> None:
    """No broker on the port raises ConnectionLost, not a bare OSError."""
    client = streams_client('rabbitmq-stream://guest:guest@localhost:1/')
    with pytest.raises(ConnectionLost):
        await client.create_stream('never-created')

async def test_stream_name_too_long(client: StreamsClient) -> None:
    """Bad input fails before anything is sent; the connection stays usable."""
    with pytest.raises(ValueError, match='longer than 255'):
        await client.create_stream('x' * 300)
    with pytest.raises(ValueError, match='non-empty'):
        await client.create_stream('')
    await client.create_stream('rbfly-test-usable')
    await client.delete_stream('rbfly-test-usable', missing_ok=False)

async def test_wait_for_timeout_keeps_connection(
        proxy: Proxy, proxied: StreamsClient, stream: str,
) -> None:
    """
    A request cancelled by wait_for while waiting for its answer (the proxy
    holds it) raises TimeoutError; the late answer is dropped, and the
    client goes on on the same connection.

    (``wait_for(call, 0)`` tested nothing: Python 3.11 cancels the
    coroutine before it starts.)
    """
    protocol = await connect(proxied)
    proxy.hold_on(0x000D)  # Create: its answer, and all after it
    with pytest.raises(TimeoutError):
        # (the call's first step, which sends the request, runs before the
        # timeout can fire)
        await asyncio.wait_for(proxied.create_stream(stream), 0.5)
    assert proxy.holding  # the Create was sent: the answer is held
    proxy.release()
    await proxied.create_stream(stream)  # the stream exists: no error
    await proxied.delete_stream(stream, missing_ok=False)
    await proxied.create_stream(stream)
    assert own_connection(proxied).protocol is protocol
    assert protocol.is_open and proxy.connections == 1

async def test_reconnect_after_disconnect(client: StreamsClient, stream: str) -> None:
    """The client connects again lazily after a disconnect."""
    await client.disconnect()
    await client.create_stream(stream)
    protocol = await connect(client)
    assert protocol.is_open

async def test_connection_decorator(any_url: str, stream: str) -> None:
    """The ``connection`` decorator disconnects the client on return."""
    from rbfly.streams import connection

    @connection
    async def work(client: StreamsClient) -> int:
        await client.create_stream(stream)
        await client.delete_stream(stream)
        return 7

    client = streams_client(any_url)
    assert await work(client) == 7
    assert own_connection(client).protocol is None

async def test_connect_timeout() -> None:
    """A peer that never answers the handshake times out with ConnectionLost."""
    server = await asyncio.start_server(lambda r, w: None, '127.0.0.1', 0)
    port = server.sockets[0].getsockname()[1]
    try:
        client = streams_client(
            'rabbitmq-stream://guest:guest@127.0.0.1:{}/'.format(port), connect_timeout=0.5,
        )
        with pytest.raises(ConnectionLost, match='timed out'):
            await client.create_stream('never-created')
    finally:
        server.close()
        await server.wait_closed()

async def test_stream_stats_and_metadata(client: StreamsClient, stream: str) -> None:
    """Stream statistics on 3.11+ (a typed error before), and stream location."""
    from rbfly.streams import FeatureNotSupported, PublisherBatchFast

    async with client.publisher(stream, cls=PublisherBatchFast) as publisher:
        for i in range(10):
            publisher.batch(i)
        await publisher.flush()
    protocol = await connect(client)
    if protocol.server_properties['version'].startswith('3.10'):
        with pytest.raises(FeatureNotSupported, match=r'3\.11'):
            await client.stream_stats(stream)
    else:
        stats = await client.stream_stats(stream)
        assert stats['first_chunk_id'] == 0
        assert stats['committed_chunk_id'] >= 0
    info = await client.stream_metadata(stream)
    assert info.stream == stream
    assert info.leader is not None and info.leader[0] == 'localhost'
    with pytest.raises(StreamDoesNotExist):
        await client.stream_metadata('rbfly-no-such-stream')

async def test_committed_chunk_id(client: StreamsClient, stream: str) -> None:
    """Deliver v2 on 3.11+ exposes the committed chunk id in the chunk API."""
    from rbfly.streams import Offset, Publisher

    async with client.publisher(stream, cls=Publisher) as publisher:
        await publisher.send('x')
    protocol = await connect(client)
    async for chunk in client.subscribe_chunks(stream, offset=Offset.FIRST, timeout=5):
        assert chunk.first_offset == 0
        if protocol.server_properties['version'].startswith('3.10'):
            assert chunk.committed_chunk_id is None
        else:
            assert chunk.committed_chunk_id == 0
        break

async def test_stream_exists(client: StreamsClient, stream: str) -> None:
    """stream_exists answers without raising, for a stream and for none."""
    assert await client.stream_exists(stream)
    assert not await client.stream_exists('rbfly-no-such-stream')

async def test_server_properties(any_url: str) -> None:
    """The broker's peer properties, public once connected."""
    client = streams_client(any_url)
    assert client.server_properties == {}
    async with client:
        await client.stream_exists('rbfly-no-such-stream')
        props = client.server_properties
        assert props['product'] == 'RabbitMQ'
        assert props['version'][0] in '34'

async def test_query_publisher_sequence(client: StreamsClient, stream: str) -> None:
    """The last publishing id of a named publisher, with no publisher declared."""
    from rbfly.streams import PublisherBatchFast

    assert await client.query_publisher_sequence(stream, 'app') == 0
    async with client.publisher(stream, name='app', cls=PublisherBatchFast) as publisher:
        for i in range(7):
            publisher.batch(i)
        await publisher.flush()
    assert await client.query_publisher_sequence(stream, 'app') == 7

async def test_connection_name(url: str) -> None:
    """
    The broker lists the connection under the name given (read from the
    management API, which records a connection's properties when it
    opens; ``rabbitmqctl list_stream_connections`` fails with status 70
    when another connection closes while it lists them).
    """
    import base64
    import json
    import os
    import urllib.request
    import uuid

    name = 'rbfly-test-{}'.format(uuid.uuid4().hex[:8])
    port = os.environ.get('BROKER310_MGMT_PORT', '15672')
    request = urllib.request.Request(
        'http://localhost:{}/api/stream/connections'.format(port),
        headers={'Authorization': 'Basic ' + base64.b64encode(b'guest:guest').decode()},
    )

    def names() -> list[str]:
        with urllib.request.urlopen(request, timeout=5) as response:
            return [
                c.get('client_properties', {}).get('connection_name', '')
                for c in json.load(response)
            ]

    async with streams_client(url, connection_name=name) as client:
        await client.stream_exists('rbfly-no-such-stream')
        # the management database records the connection asynchronously
        async with asyncio.timeout(15):
            for _ in range(150):  # polled: the database has no event to wait on
                if name in await asyncio.to_thread(names):
                    break
                await asyncio.sleep(0.2)  # wall time: a poll's interval
            else:
                pytest.fail('connection {!r} not listed by the broker'.format(name))
    with pytest.raises(TypeError, match='connection_name'):
        streams_client(url, connection_name=b'x')  # type: ignore[arg-type]

async def test_sasl_anonymous(url4: str, url: str) -> None:
    """
    SASL ANONYMOUS: RabbitMQ 4.x logs the client in as its
    anonymous_login_user (guest, from this machine); 3.10 does not offer it.
    """
    from rbfly.streams import FeatureNotSupported
    from rbfly.streams.error import SaslMechanismNotSupported

    anonymous = _with(url4, userinfo='nobody:wrong')  # not used by ANONYMOUS
    async with streams_client(anonymous, sasl_mechanism='ANONYMOUS') as client:
        assert await client.stream_exists('rbfly-no-such-stream') is False
        with pytest.raises(FeatureNotSupported, match='SASL ANONYMOUS'):
            await client.update_secret('x')
    async with streams_client(url, sasl_mechanism='ANONYMOUS') as client:
        with pytest.raises(SaslMechanismNotSupported, match='ANONYMOUS not offered'):
            await client.stream_exists('rbfly-no-such-stream')
    with pytest.raises(ValueError, match='sasl_mechanism'):
        streams_client(url, sasl_mechanism='CRAM-MD5')

async def test_replicas_only_without_replica(url: str, stream: str) -> None:
    """
    A single node's stream has no replica: a client reading from replicas
    only waits for one up to its request timeout, then StreamNotAvailable.
    """
    from rbfly.streams import Offset
    from rbfly.streams.error import StreamNotAvailable

    async with streams_client(url, replicas_only=True, request_timeout=1) as client:
        await client.create_stream(stream)
        try:
            # a bound on a hang, far above the request timeout
            async with asyncio.timeout(60):
                with pytest.raises(StreamNotAvailable, match='no replica to read from'):
                    async for _ in client.subscribe(stream, offset=Offset.FIRST):
                        pass
        finally:
            await client.delete_stream(stream)

async def test_not_a_stream_port(url: str) -> None:
    """
    A server that is not a stream port: the broker's management (HTTP)
    port, which waits for a request and closes the connection after its
    timeout, and an HTTP server answering at once ("HTTP" reads as a frame
    of 1.2 GB, refused before the connection is open): ConnectionLost
    saying so, not a hang or a huge buffer.
    """
    p = urlsplit(url)
    client = streams_client('rabbitmq-stream://guest:guest@{}:15672/'.format(p.hostname),
                            connect_timeout=20)
    with pytest.raises(ConnectionLost, match='closed the connection without answering'):
        await client.create_stream('never-created')
    await client.disconnect()

    async def http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b'HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n')
        await writer.drain()
        await reader.read(1 << 16)
        writer.close()

    server = await asyncio.start_server(http, '127.0.0.1', 0)
    port = server.sockets[0].getsockname()[1]
    try:
        client = streams_client('rabbitmq-stream://127.0.0.1:{}/'.format(port))
        with pytest.raises(ConnectionLost, match=r'does not speak the stream protocol'
                                                 r': this is an HTTP server') as info:
            await client.create_stream('never-created')
        cause = info.value.__cause__  # the protocol named, from the frame refused
        assert cause is not None and 'exceeds' in str(cause.__cause__)
        await client.disconnect()
    finally:
        server.close()
        await server.wait_closed()
