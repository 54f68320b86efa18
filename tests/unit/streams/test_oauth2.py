"""
OAuth 2 tokens without a network: token endpoint answers, JWT lifetimes,
the token keeper, and the options' checks.
"""

import base64
import json
import time

import pytest

from rbfly.streams import ClientCredentials, OAuth2Error, Token, streams_client
from rbfly.streams.oauth2 import TokenKeeper, jwt_lifetime, token_from_response

WHERE = 'token endpoint http://idp/token'

def jwt(claims: object) -> str:
    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b'=').decode()
    return '{}.{}.sig'.format(b64(b'{"alg":"RS256"}'), b64(json.dumps(claims).encode()))

@pytest.mark.parametrize('answer, expected', [
    ({'access_token': 'abc', 'token_type': 'bearer', 'expires_in': 60}, Token('abc', 60.0)),
    ({'access_token': 'abc', 'token_type': 'Bearer', 'expires_in': '30'}, Token('abc', 30.0)),
    ({'access_token': 'abc'}, Token('abc', None)),
])
def test_token_from_response(answer: dict[str, object], expected: Token) -> None:
    """A token endpoint's answer gives the token and its lifetime."""
    assert token_from_response(answer, WHERE) == expected

@pytest.mark.parametrize('answer, message', [
    ([], 'no JSON object'),
    ({'error': 'invalid_scope', 'error_description': 'no such scope'},
     'without an access_token (invalid_scope: no such scope)'),
    ({'access_token': ''}, 'without an access_token'),
    ({'access_token': 'abc', 'token_type': 'mac'}, "type 'mac', not a bearer token"),
    ({'access_token': 'abc', 'expires_in': 'soon'}, "expires_in 'soon', not a number"),
    ({'access_token': 'abc', 'expires_in': 0}, 'expires in 0.0 seconds'),
    ({'access_token': 'abc', 'expires_in': float('nan')}, 'expires in nan seconds'),
])
def test_token_from_response_errors(answer: object, message: str) -> None:
    """An answer without a usable token: OAuth2Error naming what is wrong."""
    with pytest.raises(OAuth2Error, match='token endpoint http://idp/token') as info:
        token_from_response(answer, WHERE)
    assert message in str(info.value)
    assert 'abc' not in str(info.value).replace("'abc'", '')  # the token is never shown

def test_token_repr() -> None:
    """A token's repr hides its value."""
    assert 'secret-token' not in repr(Token('secret-token', 5))

def test_jwt_lifetime() -> None:
    """The exp claim of a JWT gives the seconds left; anything else None."""
    left = jwt_lifetime(jwt({'exp': time.time() + 100}))
    assert left is not None and 99 < left <= 100
    assert jwt_lifetime(jwt({'sub': 'x'})) is None
    assert jwt_lifetime(jwt({'exp': 'tomorrow'})) is None
    assert jwt_lifetime(jwt({'exp': True})) is None
    assert jwt_lifetime(jwt(['exp'])) is None
    assert jwt_lifetime('opaque-token') is None
    assert jwt_lifetime('a.!!!.c') is None

async def test_keeper_fetches_once_and_refreshes() -> None:
    """
    The keeper fetches a token when there is none, keeps it while valid,
    and says when a new one is due (the ratio of its lifetime).
    """
    calls = 0

    async def provider() -> Token:
        nonlocal calls
        calls += 1
        return Token('t{}'.format(calls), 10)

    keeper = TokenKeeper(provider, 0.8)
    assert keeper.refresh_in() is None
    assert await keeper.current() == 't1'
    assert await keeper.current() == 't1'
    assert calls == 1
    due = keeper.refresh_in()
    assert due is not None and 7.9 < due <= 8
    assert await keeper.fetch() == 't2'
    keeper.invalidate()
    assert keeper.refresh_in() is None
    assert await keeper.current() == 't3'

async def test_keeper_lifetimes() -> None:
    """
    A str result is a token; its lifetime comes from the JWT's exp claim,
    and an opaque token without expires_in is never refreshed.
    """
    token = jwt({'exp': time.time() + 50})

    async def as_str() -> str:
        return token

    keeper = TokenKeeper(as_str, 0.5)
    assert await keeper.current() == token
    due = keeper.refresh_in()
    assert due is not None and 24 < due <= 25

    async def opaque() -> str:
        return 'opaque'

    keeper = TokenKeeper(opaque, 0.5)
    assert await keeper.current() == 'opaque'
    assert keeper.refresh_in() is None

async def test_keeper_shorter_lifetime() -> None:
    """An announced lifetime longer than the JWT's exp: the exp counts."""
    token = jwt({'exp': time.time() + 20})

    async def provider() -> Token:
        return Token(token, expires_in=3600)

    keeper = TokenKeeper(provider, 0.5)
    await keeper.current()
    due = keeper.refresh_in()
    assert due is not None and 9 < due <= 10

async def test_keeper_provider_errors() -> None:
    """A failing provider, or one returning no token: OAuth2Error."""
    async def fails() -> Token:
        raise RuntimeError('vault sealed')

    with pytest.raises(OAuth2Error, match='the token provider failed: RuntimeError: vault'):
        await TokenKeeper(fails, 0.8).current()

    async def nothing() -> object:
        return None

    with pytest.raises(OAuth2Error, match='returned NoneType, not a Token'):
        await TokenKeeper(nothing, 0.8).current()  # type: ignore[arg-type]

def test_client_credentials_checks() -> None:
    """Bad endpoint or credentials: typed errors before any request."""
    with pytest.raises(ValueError, match='http or https URL'):
        ClientCredentials('ftp://idp/token', 'id', 'secret')
    with pytest.raises(ValueError, match='http or https URL'):
        ClientCredentials('/token', 'id', 'secret')
    with pytest.raises(ValueError, match='must not hold credentials'):
        ClientCredentials('https://u:p@idp/token', 'id', 'secret')
    with pytest.raises(TypeError, match='client_secret must be a non-empty str'):
        ClientCredentials('https://idp/token', 'id', '')
    with pytest.raises(TypeError, match='parameters must map str to str'):
        ClientCredentials('https://idp/token', 'id', 's', parameters={'a': 1})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match='timeout must be positive'):
        ClientCredentials('https://idp/token', 'id', 's', timeout=0)
    with pytest.raises(ValueError, match="client_auth must be 'basic' or 'post'"):
        ClientCredentials('https://idp/token', 'id', 's', client_auth='jwt')  # type: ignore[arg-type]
    provider = ClientCredentials('https://idp/token', 'id', 'top-secret')
    assert repr(provider) == "ClientCredentials('https://idp/token', client_id='id')"

async def test_client_options() -> None:
    """The oauth2 option's checks, and update_secret with it."""
    async def provider() -> str:
        return 'token'

    url = 'rabbitmq-stream://localhost/'
    with pytest.raises(TypeError, match='oauth2 must be a token provider'):
        streams_client(url, oauth2='token')  # type: ignore[arg-type]
    with pytest.raises(ValueError, match='with SASL PLAIN, not EXTERNAL'):
        streams_client(url, oauth2=provider, sasl_mechanism='EXTERNAL')
    with pytest.raises(ValueError, match='token_refresh must be between 0 and 1'):
        streams_client(url, oauth2=provider, token_refresh=1)
    client = streams_client(url, oauth2=provider)
    with pytest.raises(ValueError, match='renews its OAuth 2 token itself'):
        await client.update_secret('other')
