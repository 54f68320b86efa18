"""
How the client proves who it is: the brokers it may connect to with their
user and password, the SASL mechanism, OAuth 2 tokens and their renewal,
and replacing the secret on open connections.

:py:class:`Credentials` is the only owner of the secret: a connection asks
it for a login when it opens (:py:meth:`Credentials.login`), and a new
secret (:py:meth:`Credentials.update_secret`, or a renewed token) is sent
to the open connections from here.
"""

from __future__ import annotations

import asyncio
import dataclasses as dtc
import logging
import typing as tp

from ..backoff import Backoff
from ..error import ConnectionLost, FeatureNotSupported, OAuth2Error
from ..oauth2 import TokenKeeper, TokenProvider
from ..protocol.commands import SaslAuthenticate
from ..protocol.connection import sasl_plain
from ..url import ConnectionInfo
from .tasks import Background

if tp.TYPE_CHECKING:
    from ..aio.connection import StreamsProtocol

logger = logging.getLogger('rbfly.streams.client')

TOKEN_RETRY = Backoff(initial=1.0, maximum=10.0, multiplier=2.0, jitter=0.0)
"""Delays between attempts to renew an OAuth 2 token while its provider fails."""

OpenConnections: tp.TypeAlias = tp.Callable[[], list['StreamsProtocol']]

@dtc.dataclass(frozen=True)
class Login:
    """What a new connection authenticates with."""
    username: str
    password: str
    mechanism: str

class Credentials:
    """
    The brokers of a client and how it authenticates to them.

    :param infos: Where and how to connect, a broker or the nodes of a
        cluster (tried in turn).
    :param mechanism: SASL mechanism asked for (``None``: EXTERNAL with a
        TLS context and no user name, else PLAIN).
    :param oauth2: Where OAuth 2 tokens come from (they are sent as the
        password).
    :param token_refresh: Share of a token's lifetime after which a new
        one is due.
    :param tasks: Where the token renewal runs.
    :param connections: The client's open connections, for a renewed token.
    """
    def __init__(
            self,
            infos: tp.Sequence[ConnectionInfo],
            mechanism: str | None,
            oauth2: TokenProvider | None,
            token_refresh: float,
            tasks: Background,
            connections: OpenConnections,
    ) -> None:
        if not infos:
            raise ValueError('no broker to connect to')
        self.infos = list(infos)
        self.info = self.infos[0]
        self._mechanism = mechanism
        self._tokens = None if oauth2 is None else TokenKeeper.checked(
            oauth2, token_refresh, mechanism,
        )
        self._tasks = tasks
        self._connections = connections
        self._renewal: asyncio.Task[None] | None = None

    async def login(self, info: ConnectionInfo) -> Login:
        """
        The user, secret and SASL mechanism of a new connection to a broker.

        :raises OAuth2Error: When no token can be had.
        """
        tokens = self._tokens
        if tokens is not None:
            # the token is the password; the broker takes the user from it
            return Login(info.username or '', await tokens.current(), 'PLAIN')
        external = info.ssl is not None and info.username is None
        return Login(
            info.username or 'guest',
            info.password if info.password is not None else 'guest',
            self._mechanism or ('EXTERNAL' if external else 'PLAIN'),
        )

    def refused(self) -> None:
        """The broker refused a login: a token is revoked, or expired early."""
        if self._tokens is not None:
            self._tokens.invalidate()

    def opened(self) -> None:
        """A connection opened: keep its token fresh from now on."""
        renewal = self._renewal
        if self._tokens is not None and (renewal is None or renewal.done()):
            self._renewal = self._tasks.spawn(self._keep_token(), cancel_at_close=True)

    async def _keep_token(self) -> None:
        """
        Get a new OAuth 2 token when the current one is due for renewal,
        and hand it to every open connection (retrying while the provider
        fails; the broker closes the connections of an expired token, and
        they reconnect with a new one).
        """
        tokens = self._tokens
        assert tokens is not None
        delays = TOKEN_RETRY.delays()
        while (delay := tokens.refresh_in()) is not None:
            await asyncio.sleep(delay)
            try:
                token = await tokens.fetch()
            except OAuth2Error as ex:
                retry = next(delays, TOKEN_RETRY.maximum)
                logger.warning('cannot renew the OAuth 2 token (next attempt in %.0f s): %s',
                               retry, ex)
                await asyncio.sleep(retry)
                continue
            delays = TOKEN_RETRY.delays()
            command = SaslAuthenticate('PLAIN', sasl_plain(self.info.username or '', token))
            protocols = [p for p in self._connections() if p.broker_version >= (3, 13)]
            for error in await authenticate_again(
                    protocols, command, 'renewing the OAuth 2 token'):
                logger.error('the broker refused the renewed OAuth 2 token: %s', error)

    async def update_secret(
            self, secret: str, connect: tp.Callable[[], tp.Awaitable[StreamsProtocol]],
    ) -> None:
        """
        Replace the password on the open connections, the client's own
        (from ``connect``) first: when the broker refuses the secret there,
        nothing changes.

        :raises AuthenticationFailure: When the broker refuses the secret.
        :raises FeatureNotSupported: When the client authenticates with a
            TLS certificate, or the broker is older than 3.13.
        """
        if not isinstance(secret, str):
            raise TypeError('secret must be a str, got {!r}'.format(type(secret).__name__))
        if self._tokens is not None:
            raise ValueError('the client renews its OAuth 2 token itself (the oauth2 option)')
        info = self.info
        mechanism = self._mechanism
        if mechanism not in (None, 'PLAIN') or (
                mechanism is None and info.ssl is not None and info.username is None):
            raise FeatureNotSupported(
                'updating the secret needs SASL PLAIN; the client authenticates'
                ' with SASL {}'.format(mechanism or 'EXTERNAL (a TLS certificate)'),
            )
        protocol = await connect()
        protocol.require((3, 13), 'updating the secret')
        username = info.username or 'guest'
        command = SaslAuthenticate('PLAIN', sasl_plain(username, secret))
        await protocol.request(command, 'updating the secret of user {!r}'.format(username))
        self.infos = [
            dtc.replace(i, password=secret) if i.username == info.username else i
            for i in self.infos
        ]
        self.info = dtc.replace(info, password=secret)
        others = [p for p in self._connections() if p is not protocol]
        errors = await authenticate_again(others, command, 'updating the secret')
        if errors:
            raise errors[0]

async def authenticate_again(
        protocols: list[StreamsProtocol], command: SaslAuthenticate, context: str,
) -> list[Exception]:
    """
    Send a new secret to open connections; return the brokers' errors (a
    connection lost meanwhile is no error: it connects again with the new
    secret).
    """
    results = await asyncio.gather(
        *(p.request(command, context) for p in protocols), return_exceptions=True,
    )
    errors = []
    for result in results:
        if isinstance(result, ConnectionLost):
            continue
        if isinstance(result, Exception):
            errors.append(result)
        elif isinstance(result, BaseException):  # cancelled: never swallowed
            raise result
    return errors

__all__ = ['TOKEN_RETRY', 'Credentials', 'Login', 'authenticate_again']
