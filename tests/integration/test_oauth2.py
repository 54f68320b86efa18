"""
OAuth 2 against the 4.x broker, whose OAuth 2 backend checks tokens
signed with the tests' key (``scripts/brokers.sh`` makes the key pair and
configures the broker: resource server ``rbfly``). A token endpoint in the
test process issues them (the client credentials grant) with a lifetime
of a few seconds; the broker closes a connection whose token expired.
"""

import asyncio
import base64
import json
import math
import os
import subprocess
import threading
import time
import typing as tp
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from rbfly.streams import (
    ClientCredentials,
    ConnectionEvent,
    ConnectionState,
    OAuth2Error,
    Offset,
    PublisherPipelined,
    Token,
    streams_client,
)
from rbfly.streams.backoff import Backoff
from rbfly.streams.error import AuthenticationFailure
from rbfly.testing import connect

from .conftest import read_back

KEY = os.environ.get('RBFLY_OAUTH2_KEY', '/var/cache/rbfly-brokers/tls/oauth2.key')
SCOPES = 'rbfly.configure:*/* rbfly.write:*/* rbfly.read:*/*'
CLIENT_ID, CLIENT_SECRET = 'rbfly-app', 'the-client-secret'
FAST = Backoff(initial=0.05, maximum=0.5)

def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b'=').decode()

def mint(ttl: float, audience: str = 'rbfly', scope: str = SCOPES) -> str:
    """A JWT signed with the tests' key (RS256, with openssl)."""
    if not Path(KEY).is_file():
        pytest.fail('no OAuth 2 signing key at {} (scripts/brokers.sh start makes it)'
                    .format(KEY))
    now = time.time()
    header = b64(json.dumps({'alg': 'RS256', 'typ': 'JWT'}).encode())
    claims = {
        'sub': CLIENT_ID, 'client_id': CLIENT_ID, 'aud': [audience], 'scope': scope,
        # whole seconds, never before the lifetime the endpoint announces
        'iat': int(now), 'exp': math.ceil(now + ttl),
    }
    payload = b64(json.dumps(claims).encode())
    signature = subprocess.run(
        ['openssl', 'dgst', '-sha256', '-sign', KEY, '-binary'],
        input='{}.{}'.format(header, payload).encode(), capture_output=True, check=True,
    ).stdout
    return '{}.{}.{}'.format(header, payload, b64(signature))

class TokenEndpoint:
    """
    An authorization server's token endpoint: the client credentials grant
    for one client, tokens valid ``ttl`` seconds; the client authenticates
    with HTTP Basic, or, with ``post``, with its id and secret in the form
    (RFC 6749, section 2.3.1), and the other way is refused.
    """
    def __init__(self, post: bool = False) -> None:
        self.ttl = 4.0
        self.issued = 0
        self.requests: list[dict[str, list[str]]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get('Content-Length', 0))
                form = parse_qs(self.rfile.read(length).decode())
                endpoint.requests.append(form)
                basic = 'Basic ' + base64.b64encode(
                    '{}:{}'.format(CLIENT_ID, CLIENT_SECRET).encode(),
                ).decode()
                if post:
                    authorized = 'Authorization' not in self.headers \
                        and form.get('client_id') == [CLIENT_ID] \
                        and form.get('client_secret') == [CLIENT_SECRET]
                else:
                    authorized = self.headers.get('Authorization') == basic \
                        and 'client_secret' not in form
                if not authorized:
                    self._answer(401, {'error': 'invalid_client',
                                       'error_description': 'bad client credentials'})
                elif form.get('grant_type') != ['client_credentials']:
                    self._answer(400, {'error': 'unsupported_grant_type'})
                else:
                    endpoint.issued += 1
                    self._answer(200, {
                        'access_token': mint(endpoint.ttl), 'token_type': 'bearer',
                        'expires_in': endpoint.ttl,
                    })

            def _answer(self, status: int, body: dict[str, tp.Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: tp.Any) -> None:
                pass

        self.server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.url = 'http://127.0.0.1:{}/oauth/token'.format(self.server.server_port)
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

@pytest.fixture
def endpoint() -> Iterator[TokenEndpoint]:
    e = TokenEndpoint()
    yield e
    e.close()

def url_of(url4: str) -> str:
    """The 4.x broker's URL without user and password (the token is both)."""
    p = urlsplit(url4)
    return 'rabbitmq-stream://{}:{}/'.format(p.hostname or 'localhost', p.port or 5553)

@pytest.fixture
async def cleanup(url4: str) -> AsyncIterator[list[str]]:
    """Streams to delete after the test (as guest)."""
    streams: list[str] = []
    yield streams
    async with streams_client(url4) as client:
        for s in streams:
            await client.delete_stream(s)

async def test_token_renewed_on_open_connections(
        url4: str, endpoint: TokenEndpoint, stream: str, cleanup: list[str],
) -> None:
    """
    A publisher and a subscription run through several token lifetimes
    (4 s): the client renews the token on its connection before it
    expires, the connection is never lost, and every message arrives once,
    in order.
    """
    provider = ClientCredentials(endpoint.url, CLIENT_ID, CLIENT_SECRET, scope=SCOPES)
    client = streams_client(url_of(url4), oauth2=provider, reconnect=FAST)
    cleanup.append(stream)
    received: list[int] = []
    wanted = [-1]  # messages to receive, known when publishing ends
    all_in = asyncio.Event()
    async with client:
        await client.create_stream(stream)

        async def consume() -> None:
            async for body in client.subscribe(stream, offset=Offset.FIRST):
                received.append(tp.cast(int, body))
                if len(received) == wanted[0]:
                    all_in.set()

        consumer = asyncio.create_task(consume())
        sent = 0
        async with client.publisher(stream, cls=PublisherPipelined) as publisher:
            deadline = time.monotonic() + 8
            while time.monotonic() < deadline:
                for _ in range(100):
                    await publisher.send(sent)
                    sent += 1
                await publisher.flush()
                await asyncio.sleep(0.05)
        wanted[0] = sent
        if len(received) < sent:
            async with asyncio.timeout(30):
                await all_in.wait()
        consumer.cancel()
        metrics = client.metrics()
    assert received == list(range(sent))
    assert endpoint.issued >= 3, endpoint.issued   # 8 s of 4 s tokens renewed at 3.2 s
    assert metrics.connections_lost == 0
    assert metrics.connections_opened == 1
    assert all(r['scope'] == [SCOPES] for r in endpoint.requests)

async def test_expired_token_replaced_on_reconnection(
        url4: str, endpoint: TokenEndpoint, stream: str, cleanup: list[str],
) -> None:
    """
    The token provider fails when the token is due (an authorization
    server down for a while): the broker closes the connection when the
    token expires, and the client reconnects with a new token once the
    provider works again; the publisher's messages are all stored once.
    """
    calls = 0

    async def flaky() -> Token:
        nonlocal calls
        calls += 1
        if calls in (2, 3):  # the first renewal and its first retry
            raise OAuth2Error('the authorization server is down')
        return Token(mint(2), expires_in=2)

    lost = asyncio.Event()

    def on_connection(event: ConnectionEvent) -> None:
        if event.state is ConnectionState.LOST:
            lost.set()

    client = streams_client(
        url_of(url4), oauth2=flaky, reconnect=FAST, on_connection=on_connection,
    )
    cleanup.append(stream)
    async with client:
        await client.create_stream(stream)
        async with client.publisher(stream, name='oauth2-expiry') as publisher:
            await publisher.send('before')
            async with asyncio.timeout(30):
                await lost.wait()  # the broker closed it: the token expired
            await publisher.send('after')  # connected again with a new token
        received = await read_back(client, stream, 2)
    assert received == ['before', 'after']
    assert calls >= 4

async def test_endpoint_refuses_client(url4: str, endpoint: TokenEndpoint) -> None:
    """
    Wrong client credentials: OAuth2Error names the endpoint and the
    server's error, not the secret; nothing reaches the broker.
    """
    provider = ClientCredentials(endpoint.url, CLIENT_ID, 'wrong-secret')
    client = streams_client(url_of(url4), oauth2=provider)
    with pytest.raises(OAuth2Error) as info:
        await connect(client)
    text = str(info.value)
    assert endpoint.url in text
    assert 'invalid_client' in text and '401' in text
    assert 'wrong-secret' not in text and 'wrong-secret' not in repr(provider)
    await client.disconnect()

async def test_client_secret_post(url4: str, stream: str, cleanup: list[str]) -> None:
    """
    ``client_auth='post'``: the client id and secret go in the form, for a
    server that refuses HTTP Basic; the token opens the connection.
    """
    endpoint = TokenEndpoint(post=True)
    try:
        basic = ClientCredentials(endpoint.url, CLIENT_ID, CLIENT_SECRET, scope=SCOPES)
        with pytest.raises(OAuth2Error, match='invalid_client'):
            await basic()
        provider = ClientCredentials(
            endpoint.url, CLIENT_ID, CLIENT_SECRET, scope=SCOPES, client_auth='post',
        )
        assert CLIENT_SECRET not in repr(provider)
        cleanup.append(stream)
        async with streams_client(url_of(url4), oauth2=provider) as client:
            await client.create_stream(stream)
            async with client.publisher(stream) as publisher:
                await publisher.send('post')
            assert await read_back(client, stream, 1) == ['post']
        assert endpoint.issued == 1
    finally:
        endpoint.close()

async def test_endpoint_unreachable(url4: str) -> None:
    """A token endpoint nobody listens on: OAuth2Error, quickly."""
    provider = ClientCredentials('http://127.0.0.1:9/token', CLIENT_ID, CLIENT_SECRET,
                                 timeout=5)
    client = streams_client(url_of(url4), oauth2=provider)
    with pytest.raises(OAuth2Error, match='cannot reach token endpoint'):
        await connect(client)
    await client.disconnect()

async def test_broker_refuses_token(url4: str) -> None:
    """
    A token for another audience: the broker refuses the login; the
    client drops the token and gets a new one for its next connection.
    """
    audiences = ['someone-else', 'rbfly']

    async def provider() -> str:
        return mint(60, audience=audiences.pop(0))

    client = streams_client(url_of(url4), oauth2=provider)
    with pytest.raises(AuthenticationFailure):
        await connect(client)
    protocol = await connect(client)
    assert protocol.is_open and audiences == []
    await client.disconnect()
