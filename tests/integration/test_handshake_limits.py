"""
Frames of the handshake are capped at 8,192 bytes (RabbitMQ 4.3's
``stream.initial_frame_max``): a secret (password or OAuth 2 token) that
would make a larger SASL frame is a typed error before connecting; one
that makes a frame of exactly 8,192 bytes reaches the broker, which
answers it (here: a wrong password).
"""

import asyncio
from urllib.parse import quote, urlsplit, urlunsplit

import pytest

from rbfly.streams import streams_client
from rbfly.streams.error import AuthenticationFailure, HandshakeFrameTooLarge
from rbfly.streams.oauth2 import Token
from rbfly.streams.protocol import INITIAL_FRAME_MAX, SaslAuthenticate, encode
from rbfly.streams.protocol.connection import sasl_plain

@pytest.fixture(params=['3.10', '4.x', '4.3'])
def broker(request: pytest.FixtureRequest) -> str:
    name = {'3.10': 'url', '4.x': 'url4', '4.3': 'url43'}[request.param]
    return str(request.getfixturevalue(name))

def password_of_frame(size: int) -> str:
    """A password whose SASL PLAIN frame (user guest) is ``size`` bytes."""
    overhead = len(encode(SaslAuthenticate('PLAIN', sasl_plain('guest', '')), 1))
    return 'p' * (size - overhead)

def with_password(url: str, password: str) -> str:
    parts = urlsplit(url)
    netloc = 'guest:{}@{}'.format(quote(password, safe=''), parts.netloc.split('@')[-1])
    return urlunsplit(parts._replace(netloc=netloc))

async def test_largest_secret_reaches_the_broker(broker: str) -> None:
    password = password_of_frame(INITIAL_FRAME_MAX)
    client = streams_client(with_password(broker, password), connect_timeout=10)
    with pytest.raises(AuthenticationFailure):
        await client.stream_exists('rbfly-any')
    await client.disconnect()

async def test_larger_secret_is_refused_before_connecting(broker: str) -> None:
    password = password_of_frame(INITIAL_FRAME_MAX + 1)
    client = streams_client(with_password(broker, password), connect_timeout=10)
    with pytest.raises(HandshakeFrameTooLarge, match=r'8,193 bytes.*at most 8,192'):
        await client.stream_exists('rbfly-any')
    assert client.metrics().connections_opened == 0
    await client.disconnect()

async def test_oauth2_token_too_large(url43: str) -> None:
    """A token provider's oversized token is named as such."""
    calls = 0

    async def provider() -> Token:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0)
        return Token('t' * 9000, expires_in=3600)

    client = streams_client(url43, oauth2=provider, connect_timeout=10)
    with pytest.raises(HandshakeFrameTooLarge, match='OAuth 2 token'):
        await client.stream_exists('rbfly-any')
    assert calls == 1
    await client.disconnect()
