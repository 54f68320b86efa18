"""
Connection URIs: ``rabbitmq-stream://user:password@host:port/vhost`` and
``rabbitmq-stream+tls://...``.

The virtual host is the URI path without its first slash, percent-decoded:
``/`` and ``/%2F`` both mean the default virtual host ``/``; ``/prod`` means
``prod``. The password is kept out of :py:func:`repr` and of every log line.
"""

from __future__ import annotations

import dataclasses as dtc
import enum
import ssl
from urllib.parse import quote, unquote, urlsplit

class Scheme(enum.Enum):
    """Connection URI scheme."""
    RABBITMQ_STREAM = 'rabbitmq-stream'
    RABBITMQ_STREAM_TLS = 'rabbitmq-stream+tls'

DEFAULT_PORT = {Scheme.RABBITMQ_STREAM: 5552, Scheme.RABBITMQ_STREAM_TLS: 5551}

@dtc.dataclass(frozen=True)
class ConnectionInfo:
    """
    Where and how to connect to a RabbitMQ Streams broker.

    :param scheme: URI scheme (plain or TLS).
    :param host: Broker host name or address.
    :param port: Broker stream port.
    :param virtual_host: Virtual host to open.
    :param username: User name for SASL PLAIN (``None`` with EXTERNAL).
    :param password: Password for SASL PLAIN (never shown in repr).
    :param ssl: TLS context, for the ``rabbitmq-stream+tls`` scheme.
    """
    scheme: Scheme
    host: str
    port: int
    virtual_host: str
    username: str | None = None
    password: str | None = dtc.field(default=None, repr=False)
    ssl: ssl.SSLContext | None = dtc.field(default=None, repr=False)

    def __str__(self) -> str:
        """
        The URI without the password, as :py:func:`parse_uri` reads it
        back: the default virtual host ``/`` is the path ``/`` (not
        ``//``), another one percent-encoded (``a/b`` is ``/a%2Fb``).
        """
        user = '{}@'.format(quote(self.username, safe='')) if self.username else ''
        host = '[{}]'.format(self.host) if ':' in self.host else self.host  # IPv6
        vhost = '' if self.virtual_host == '/' else quote(self.virtual_host, safe='')
        return '{}://{}{}:{}/{}'.format(self.scheme.value, user, host, self.port, vhost)

def parse_uri(uri: str, ssl_context: ssl.SSLContext | None = None) -> ConnectionInfo:
    """
    Parse a connection URI.

    :raises ValueError: When the scheme is unknown, the port invalid, or a
        TLS scheme has no TLS context (and the other way round). The URI is
        not repeated in the message, as it may hold a password.
    """
    try:
        p = urlsplit(uri)
        port = p.port
    except ValueError as ex:
        raise ValueError('invalid connection URI: {}'.format(ex)) from None
    try:
        scheme = Scheme(p.scheme)
    except ValueError:
        raise ValueError(
            'unknown connection URI scheme {!r}; use rabbitmq-stream:// or'
            ' rabbitmq-stream+tls://'.format(p.scheme)
        ) from None
    if scheme is Scheme.RABBITMQ_STREAM_TLS and ssl_context is None:
        raise ValueError('rabbitmq-stream+tls:// needs an SSL context (ssl=...)')
    if scheme is Scheme.RABBITMQ_STREAM and ssl_context is not None:
        raise ValueError('an SSL context needs the rabbitmq-stream+tls:// scheme')
    path = unquote(p.path[1:]) if p.path else ''
    return ConnectionInfo(
        scheme=scheme,
        host=p.hostname or 'localhost',
        port=port if port is not None else DEFAULT_PORT[scheme],
        virtual_host=path or '/',
        username=unquote(p.username) if p.username is not None else None,
        password=unquote(p.password) if p.password is not None else None,
        ssl=ssl_context,
    )

__all__ = ['ConnectionInfo', 'Scheme', 'parse_uri']
