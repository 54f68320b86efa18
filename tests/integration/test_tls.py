"""
TLS with certificate verification and SASL EXTERNAL with a client
certificate, against real brokers.

``scripts/brokers.sh`` makes a test CA, a server certificate for
``localhost`` (DNS:localhost, IP:127.0.0.1) and a client certificate with
CN ``guest``, and opens TLS stream listeners: RabbitMQ 3.10 on 5551, 4.x on
5554. ``scripts/brokers.sh env`` prints:

- ``RBFLY_TLS_URL``, ``RBFLY_TLS_URL4``: ``rabbitmq-stream+tls://`` URIs
  with user info (SASL PLAIN over TLS);
- ``RBFLY_TLS_CA``: the test CA certificate;
- ``RBFLY_TLS_CERT``, ``RBFLY_TLS_KEY``: the client certificate and key.

The tests fail (never skip) when these are missing; tests of the 4.x
broker skip only when that broker is absent (the ``url4`` fixture).

SASL EXTERNAL works on RabbitMQ 4.x. On Debian's RabbitMQ 3.10.8 the
stream plugin offers EXTERNAL but its connection process crashes on the
SaslAuthenticate frame (``function_clause`` in
``rabbit_auth_mechanism_ssl:handle_response/2``, given the reader's own
state instead of the mechanism's; fixed in RabbitMQ 3.11.19 and 3.12.1), so
the broker drops the connection and the client raises ``ConnectionLost``.
"""

import asyncio
import os
import ssl
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import pytest

from rbfly.error import RbFlyError
from rbfly.streams import (
    ConnectionLost,
    Offset,
    PublisherBatchFast,
    PublisherPipelined,
    StreamsClient,
    get_message_ctx,
    streams_client,
)
from rbfly.streams.error import AuthenticationFailure
from rbfly.testing import connect, sasl_mechanism

from .conftest import _client_with_stream

def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail('{} is not set (run: eval "$(scripts/brokers.sh env)")'.format(name))
    return value

def _replace(url: str, *, host: str | None = None, userinfo: str | None = None,
             scheme: str | None = None, port: int | None = None) -> str:
    """The URI with its host, user info (``''``: none), scheme or port changed."""
    p = urlsplit(url)
    if userinfo is None:
        userinfo = '{}:{}'.format(p.username, p.password) if p.username else ''
    netloc = '{}{}:{}'.format(
        userinfo + '@' if userinfo else '', host or p.hostname, port or p.port,
    )
    return urlunsplit((scheme or p.scheme, netloc, p.path, '', ''))

@pytest.fixture(scope='session')
def tls_url() -> str:
    """TLS URI of the RabbitMQ 3.10 broker, with user info."""
    return _env('RBFLY_TLS_URL')

@pytest.fixture(scope='session')
def tls_url4(url4: str) -> str:
    """TLS URI of the RabbitMQ 4.x broker (skips only when the broker is absent)."""
    return _env('RBFLY_TLS_URL4')

@pytest.fixture(params=['3.10', '4.x'])
def tls_any_url(request: pytest.FixtureRequest) -> str:
    """TLS URI of each broker in turn."""
    name: str = request.param
    return str(request.getfixturevalue('tls_url' if name == '3.10' else 'tls_url4'))

@pytest.fixture
def ca_ctx() -> ssl.SSLContext:
    """Client context trusting the test CA, with hostname checks."""
    return ssl.create_default_context(cafile=_env('RBFLY_TLS_CA'))

@pytest.fixture
def cert_ctx(ca_ctx: ssl.SSLContext) -> ssl.SSLContext:
    """Client context trusting the test CA, with the client certificate (CN guest)."""
    ca_ctx.load_cert_chain(_env('RBFLY_TLS_CERT'), _env('RBFLY_TLS_KEY'))
    return ca_ctx

@pytest.fixture
async def tls_client(
        tls_any_url: str, ca_ctx: ssl.SSLContext, stream: str,
) -> AsyncIterator[StreamsClient]:
    """Client of each broker over TLS (SASL PLAIN), with the test's stream created."""
    async for c in _client_with_stream(tls_any_url, stream, ssl=ca_ctx):
        yield c

async def _round_trip(client: StreamsClient, stream: str, count: int = 50) -> None:
    """Publish ``count`` confirmed messages and read them back in order."""
    async with client.publisher(stream) as publisher:
        for i in range(count):
            await publisher.send({'n': i, 'text': 'żółw'})
    received: list[tuple[int, object]] = []
    async for body in client.subscribe(stream, offset=Offset.FIRST, timeout=5):
        received.append((get_message_ctx().stream_offset, body))
        if len(received) == count:
            break
    assert received == [(i, {'n': i, 'text': 'żółw'}) for i in range(count)]

async def _tls_version(client: StreamsClient) -> str | None:
    protocol = await connect(client)
    assert protocol.transport is not None
    ssl_object = protocol.transport.get_extra_info('ssl_object')
    assert ssl_object is not None, 'the connection is not encrypted'
    version: str | None = ssl_object.version()
    return version

async def test_tls_plain_publish_and_read(tls_client: StreamsClient, stream: str) -> None:
    """SASL PLAIN over a verified TLS connection: messages go and come back."""
    assert (await _tls_version(tls_client) or '').startswith('TLSv1.')
    await _round_trip(tls_client, stream)

async def test_tls_big_pipelined_messages(tls_client: StreamsClient, stream: str) -> None:
    """
    Big messages through TLS: the TLS transport keeps the frames it has not
    encrypted yet, views of the encoder's pooled buffers, which must not be
    written over meanwhile; every message arrives whole, in order.
    """
    size, count = 300_000, 60
    bodies = [b'%010d' % i + bytes([i]) * (size - 10) for i in range(count)]
    async with tls_client.publisher(stream, cls=PublisherPipelined) as publisher:
        for body in bodies:
            await publisher.send(body)
    received: list[object] = []
    async for message in tls_client.subscribe(stream, offset=Offset.FIRST, timeout=5):
        received.append(message)
        if len(received) == count:
            break
    assert received == bodies

async def test_tls_ip_address_in_certificate(tls_any_url: str, ca_ctx: ssl.SSLContext) -> None:
    """The server certificate's IP:127.0.0.1 matches a connection by address."""
    client = streams_client(_replace(tls_any_url, host='127.0.0.1'), ssl=ca_ctx)
    async with client:
        assert await _tls_version(client)

async def test_tls_untrusted_ca(tls_any_url: str) -> None:
    """A context that does not trust the test CA fails with ConnectionLost."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies, trusts no CA
    client = streams_client(tls_any_url, ssl=ctx)
    with pytest.raises(ConnectionLost, match='CERTIFICATE_VERIFY_FAILED') as info:
        await client.create_stream('never-created')
    assert isinstance(info.value.__cause__, ssl.SSLCertVerificationError)
    assert 'guest:guest' not in str(info.value)
    await client.disconnect()

async def test_tls_hostname_mismatch(tls_any_url: str, ca_ctx: ssl.SSLContext) -> None:
    """127.0.0.2 reaches the broker but is not in its certificate: ConnectionLost."""
    client = streams_client(_replace(tls_any_url, host='127.0.0.2'), ssl=ca_ctx)
    with pytest.raises(ConnectionLost, match=r'127\.0\.0\.2') as info:
        await client.create_stream('never-created')
    assert isinstance(info.value.__cause__, ssl.SSLCertVerificationError)
    assert info.value.__cause__.verify_code == 64  # X509_V_ERR_IP_ADDRESS_MISMATCH
    await client.disconnect()

async def test_tls_client_certificate_with_plain(
        tls_any_url: str, cert_ctx: ssl.SSLContext, stream: str,
) -> None:
    """With user info in the URI, PLAIN is used even when a client certificate is sent."""
    client = streams_client(tls_any_url, ssl=cert_ctx)
    async with client:
        protocol = await connect(client)
        assert sasl_mechanism(protocol) == 'PLAIN'
        await client.create_stream(stream)
        await client.delete_stream(stream)

async def test_plain_client_on_tls_port(tls_any_url: str) -> None:
    """A rabbitmq-stream:// (no TLS) client on the TLS port fails with a typed error."""
    client = streams_client(_replace(tls_any_url, scheme='rabbitmq-stream'), connect_timeout=10)
    with pytest.raises(RbFlyError):
        await client.create_stream('never-created')
    await client.disconnect()

async def test_tls_client_on_plain_port(any_url: str, ca_ctx: ssl.SSLContext) -> None:
    """A TLS client on the plain stream port fails with ConnectionLost."""
    client = streams_client(
        _replace(any_url, scheme='rabbitmq-stream+tls'), ssl=ca_ctx, connect_timeout=10,
    )
    with pytest.raises(ConnectionLost):
        await client.create_stream('never-created')
    await client.disconnect()

async def test_external_4x(tls_url4: str, cert_ctx: ssl.SSLContext, stream: str) -> None:
    """
    No user info and a client certificate: SASL EXTERNAL logs in as the
    certificate's CN (guest), which may then manage, write and read streams.
    """
    client = streams_client(_replace(tls_url4, userinfo=''), ssl=cert_ctx)
    async with client:
        protocol = await connect(client)
        assert sasl_mechanism(protocol) == 'EXTERNAL'
        await client.create_stream(stream)
        try:
            await _round_trip(client, stream)
        finally:
            await client.delete_stream(stream)

async def test_external_4x_without_certificate(tls_url4: str, ca_ctx: ssl.SSLContext) -> None:
    """SASL EXTERNAL without a client certificate is refused: AuthenticationFailure."""
    client = streams_client(_replace(tls_url4, userinfo=''), ssl=ca_ctx)
    with pytest.raises(AuthenticationFailure):
        await client.create_stream('never-created')
    await client.disconnect()

async def test_external_310_broker_bug(tls_url: str, cert_ctx: ssl.SSLContext) -> None:
    """
    RabbitMQ 3.10.8 offers EXTERNAL on streams but its connection process
    crashes on SaslAuthenticate (fixed in 3.11.19/3.12.1): the broker drops
    the connection and the client raises ConnectionLost, not a hang.
    """
    client = streams_client(_replace(tls_url, userinfo=''), ssl=cert_ctx, connect_timeout=10)
    with pytest.raises(ConnectionLost, match='connection to broker lost'):
        await client.create_stream('never-created')
    await client.disconnect()
    # the same certificate and context work with PLAIN: the TLS side is fine
    client = streams_client(tls_url, ssl=cert_ctx)
    async with client:
        protocol = await connect(client)
        assert protocol.server_properties['version'].startswith('3.10.')

async def test_history_read_pausing(tls_client: StreamsClient, stream: str) -> None:
    """
    Reading history over TLS pauses and resumes the TLS transport's reads
    (``read_pause``, the client's default): every message arrives, in order.
    """
    async with tls_client.publisher(stream, cls=PublisherBatchFast) as publisher:
        for i in range(1000):
            publisher.batch(i)
            if i % 10 == 9:
                await publisher.flush()
    await asyncio.sleep(1.2)  # wall time: a second old: history
    received = []
    async for body in tls_client.subscribe(stream, offset=Offset.FIRST, timeout=10):
        received.append(body)
        if len(received) == 1000:
            break
    assert received == list(range(1000))
