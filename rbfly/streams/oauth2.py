"""
OAuth 2 tokens as the client's secret.

A RabbitMQ broker with the OAuth 2 authentication backend takes an access
token (a JWT) as the password of SASL PLAIN, and closes a connection when
its token expires. With ``streams_client(..., oauth2=provider)`` the client
asks the provider for a token before it opens a connection, and for a new
one when ``refresh_ratio`` (0.8) of the token's lifetime has passed; it
hands the new token to every open connection (SaslAuthenticate after Open,
RabbitMQ 3.13+, as :py:meth:`~rbfly.streams.StreamsClient.update_secret`
does), so that publishers and subscriptions run past any number of
expiries without a reconnection.

A provider is any coroutine function that returns a :py:class:`Token` (or
the token as a string). :py:class:`ClientCredentials` is the OAuth 2
client credentials grant (RFC 6749, section 4.4), what services use to get
tokens for themselves: it posts to the authorization server's token
endpoint with the client's id and secret (HTTP Basic authentication).

The lifetime is the response's ``expires_in`` or, when shorter, the time
left until the ``exp`` claim of a JWT (the broker closes the connection
then); without either, the token is not refreshed. Tokens and
client secrets never appear in reprs, logs or exception texts.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses as dtc
import json
import logging
import math
import ssl as _ssl
import time
import typing as tp
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from time import monotonic

from .error import OAuth2Error

logger = logging.getLogger(__name__)

DEFAULT_REFRESH_RATIO = 0.8
"""Share of a token's lifetime after which the client gets a new one."""

RETRY_DELAYS = (1.0, 2.0, 5.0, 10.0)
"""
Seconds between attempts when getting a new token failed, up to 0.x
(kept for programs that read it); the client now waits as
:py:data:`rbfly.streams.parts.credentials.TOKEN_RETRY` says.
"""


@dtc.dataclass(frozen=True)
class Token:
    """
    An access token.

    :ivar value: The token, sent as the password.
    :ivar expires_in: Seconds it stays valid from when it was issued;
        ``None`` when not known.
    """
    value: str = dtc.field(repr=False)
    expires_in: float | None = None

TokenProvider: tp.TypeAlias = Callable[[], Awaitable['Token | str']]
"""A coroutine function returning a new token."""

class ClientCredentials:
    """
    OAuth 2 client credentials grant: a token for the client itself.

    :param token_endpoint: URL of the authorization server's token
        endpoint (``https://...``; ``http://`` only for tests).
    :param client_id: The client's id.
    :param client_secret: The client's secret (never shown in repr).
    :param scope: Scopes to ask for, space separated (e.g.
        ``rabbitmq.read:*/*``); default: the server's.
    :param parameters: Further form parameters of the request (e.g.
        ``audience``).
    :param ssl: TLS context for an ``https`` endpoint; default: the
        system's certificate authorities.
    :param timeout: Seconds to wait for the endpoint.
    :param client_auth: How the client authenticates to the endpoint
        (RFC 6749, section 2.3.1): ``'basic'`` (default; HTTP Basic, as
        the Java client does) or ``'post'`` (``client_id`` and
        ``client_secret`` in the form, for servers that accept only that).
    """
    def __init__(
            self,
            token_endpoint: str,
            client_id: str,
            client_secret: str,
            *,
            scope: str | None = None,
            parameters: Mapping[str, str] | None = None,
            ssl: _ssl.SSLContext | None = None,
            timeout: float = 30,
            client_auth: tp.Literal['basic', 'post'] = 'basic',
    ) -> None:
        parts = urllib.parse.urlsplit(token_endpoint) if isinstance(token_endpoint, str) else None
        if parts is None or parts.scheme not in ('http', 'https') or not parts.hostname:
            raise ValueError('token_endpoint must be an http or https URL, got {!r}'.format(
                token_endpoint,
            ))
        if parts.username is not None or parts.password is not None:
            raise ValueError('token_endpoint must not hold credentials; use client_id'
                             ' and client_secret')
        for name, value in (('client_id', client_id), ('client_secret', client_secret)):
            if not isinstance(value, str) or not value:
                raise TypeError('{} must be a non-empty str'.format(name))
        if scope is not None and not isinstance(scope, str):
            raise TypeError('scope must be a str, got {!r}'.format(type(scope).__name__))
        form = dict(parameters or {})
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in form.items()):
            raise TypeError('parameters must map str to str')
        if not timeout > 0:
            raise ValueError('timeout must be positive, got {!r}'.format(timeout))
        if client_auth not in ('basic', 'post'):
            raise ValueError("client_auth must be 'basic' or 'post', got {!r}".format(
                client_auth,
            ))
        form['grant_type'] = 'client_credentials'
        if scope is not None:
            form['scope'] = scope
        self.token_endpoint = token_endpoint
        self.client_id = client_id
        self._headers = {
            'Content-Type': 'application/x-www-form-urlencoded',
            'Accept': 'application/json',
        }
        if client_auth == 'post':
            form['client_id'] = client_id
            form['client_secret'] = client_secret
        else:
            # RFC 6749, 2.3.1: both form-encoded before Basic authentication
            pair = '{}:{}'.format(
                urllib.parse.quote_plus(client_id), urllib.parse.quote_plus(client_secret),
            )
            self._headers['Authorization'] = 'Basic ' + base64.b64encode(pair.encode()).decode()
        self._body = urllib.parse.urlencode(form).encode()
        self._ssl = ssl
        self._timeout = timeout

    def __repr__(self) -> str:
        return 'ClientCredentials({!r}, client_id={!r})'.format(
            self.token_endpoint, self.client_id,
        )

    async def __call__(self) -> Token:
        """
        Ask the token endpoint for a token.

        :raises OAuth2Error: When the endpoint cannot be reached, refuses,
            or answers without a token.
        """
        # urllib blocks: run it in a thread, leaving the event loop free
        return await asyncio.to_thread(self._request)

    def _request(self) -> Token:
        # imported here: urllib.request brings http.client, email and more
        # (about 40 ms), which a client without OAuth 2 never needs
        import urllib.error
        import urllib.request
        request = urllib.request.Request(
            self.token_endpoint, data=self._body, method='POST', headers=self._headers,
        )
        where = 'token endpoint {}'.format(self.token_endpoint)
        try:
            with urllib.request.urlopen(request, timeout=self._timeout, context=self._ssl) as r:
                body = r.read()
        except urllib.error.HTTPError as ex:
            raise OAuth2Error('{} refused the client {!r}: HTTP {}{}'.format(
                where, self.client_id, ex.code, _error_text(ex.read()),
            )) from None
        except (urllib.error.URLError, OSError) as ex:
            reason = getattr(ex, 'reason', ex)
            raise OAuth2Error('cannot reach {}: {}'.format(where, reason)) from None
        try:
            data = json.loads(body)
        except ValueError:
            raise OAuth2Error('{} answered with no JSON document'.format(where)) from None
        return token_from_response(data, where)

def token_from_response(data: object, where: str) -> Token:
    """
    Token of a token endpoint's JSON answer (RFC 6749, section 5.1).

    :raises OAuth2Error: When the answer holds no token.
    """
    if not isinstance(data, dict):
        raise OAuth2Error('{} answered with no JSON object'.format(where))
    value = data.get('access_token')
    if not isinstance(value, str) or not value:
        raise OAuth2Error('{} answered without an access_token{}'.format(
            where, _error_text(data),
        ))
    kind = data.get('token_type', 'bearer')
    if not isinstance(kind, str) or kind.lower() != 'bearer':
        raise OAuth2Error('{} issued a token of type {!r}, not a bearer token'.format(
            where, kind,
        ))
    expires = data.get('expires_in')
    if expires is not None:
        try:
            expires = float(expires)
        except (TypeError, ValueError):
            raise OAuth2Error('{} answered with expires_in {!r}, not a number'.format(
                where, expires,
            )) from None
        if not math.isfinite(expires) or expires <= 0:
            raise OAuth2Error('{} issued a token that expires in {!r} seconds'.format(
                where, expires,
            ))
    return Token(value, expires)

def jwt_lifetime(token: str) -> float | None:
    """
    Seconds left until the ``exp`` claim of a JWT (the claim is read, not
    verified: the broker verifies the token); ``None`` for a token that is
    no JWT or has no ``exp``.
    """
    parts = token.split('.')
    if len(parts) != 3:
        return None
    payload = parts[1]
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + '=' * (-len(payload) % 4)))
    except (binascii.Error, ValueError):
        return None
    exp = claims.get('exp') if isinstance(claims, dict) else None
    if isinstance(exp, bool) or not isinstance(exp, int | float):
        return None
    return float(exp) - time.time()

def _error_text(body: object) -> str:
    """
    The ``error`` and ``error_description`` of an OAuth 2 error answer
    (RFC 6749, section 5.2), to name what was wrong.
    """
    if isinstance(body, bytes):
        try:
            body = json.loads(body)
        except ValueError:
            return ''
    if not isinstance(body, dict):
        return ''
    error, description = body.get('error'), body.get('error_description')
    text = ''
    if isinstance(error, str):
        text += ' ({}'.format(error[:100])
        if isinstance(description, str):
            text += ': {}'.format(description[:200])
        text += ')'
    return text

class TokenKeeper:
    """
    The client's current token: fetched when a connection needs one and
    there is none (or it expired), refreshed before it expires.

    :param provider: Where tokens come from.
    :param refresh_ratio: Share of a token's lifetime after which a new one
        is due.
    """
    def __init__(self, provider: TokenProvider, refresh_ratio: float) -> None:
        self.provider = provider
        self.refresh_ratio = refresh_ratio
        self._token: str | None = None
        self._expires_at: float | None = None  # monotonic
        self._refresh_at: float | None = None
        self._lock: asyncio.Lock | None = None

    @classmethod
    def checked(
            cls, provider: TokenProvider, refresh_ratio: float, mechanism: str | None,
    ) -> TokenKeeper:
        """
        Keeper of a client's tokens, after checking its options.

        :raises TypeError: When the provider is not callable.
        :raises ValueError: When the SASL mechanism is not PLAIN, or the
            ratio is not between 0 and 1.
        """
        if not callable(provider):
            raise TypeError('oauth2 must be a token provider (e.g. ClientCredentials)')
        if mechanism not in (None, 'PLAIN'):
            raise ValueError('an OAuth 2 token is sent with SASL PLAIN, not {}'.format(
                mechanism,
            ))
        if isinstance(refresh_ratio, bool) or not isinstance(refresh_ratio, int | float) \
                or not 0 < refresh_ratio < 1:
            raise ValueError('token_refresh must be between 0 and 1, got {!r}'.format(
                refresh_ratio,
            ))
        return cls(provider, refresh_ratio)

    async def current(self) -> str:
        """
        A token valid now: the one held, or a new one.

        :raises OAuth2Error: When the provider fails.
        """
        if self._valid():
            assert self._token is not None
            return self._token
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if not self._valid():
                await self.fetch()
        assert self._token is not None
        return self._token

    def _valid(self) -> bool:
        return self._token is not None and (
            self._expires_at is None or monotonic() < self._expires_at
        )

    async def fetch(self) -> str:
        """
        Get a new token from the provider and keep it.

        :raises OAuth2Error: When the provider fails or returns no token.
        """
        start = monotonic()
        try:
            result = await self.provider()
        except OAuth2Error:
            raise
        except Exception as ex:
            raise OAuth2Error('the token provider failed: {}: {}'.format(
                type(ex).__name__, ex,
            )) from ex
        if isinstance(result, str):
            result = Token(result)
        if not isinstance(result, Token) or not isinstance(result.value, str) or not result.value:
            raise OAuth2Error('the token provider returned {}, not a Token or a non-empty'
                              ' str'.format(type(result).__name__))
        # the shorter of the announced lifetime and the JWT's own: the
        # broker closes the connection at the token's exp
        known = [t for t in (result.expires_in, jwt_lifetime(result.value)) if t is not None]
        lifetime = min(known) if known else None
        self._token = result.value
        if lifetime is None:
            self._expires_at = self._refresh_at = None
            logger.info('got a token with no known lifetime; it is not refreshed')
        else:
            self._expires_at = start + lifetime
            self._refresh_at = start + lifetime * self.refresh_ratio
            logger.info('got a token valid for %.1f s', lifetime)
        return result.value

    def invalidate(self) -> None:
        """The broker refused the token: the next connection gets a new one."""
        self._token = self._expires_at = self._refresh_at = None

    def refresh_in(self) -> float | None:
        """Seconds until a new token is due; ``None`` when never."""
        if self._refresh_at is None:
            return None
        return max(0.0, self._refresh_at - monotonic())

__all__ = [
    'DEFAULT_REFRESH_RATIO', 'RETRY_DELAYS', 'ClientCredentials', 'Token', 'TokenKeeper',
    'TokenProvider', 'jwt_lifetime', 'token_from_response',
]
