"""
Opening a connection to a broker: a TCP (or TLS) connection carrying a
:py:class:`~rbfly.streams.aio.connection.StreamsProtocol`, its socket buffers
set before connecting when asked, and the handshake done; every way it can
fail becomes :py:class:`~rbfly.streams.error.ConnectionLost` naming the
address (or the credentials' error). A server that closes a connection
without answering is told apart by what this process knows of its
address (:py:class:`Answers`): a broker that answered there before, or a
port that may not be a stream port at all.
"""

from __future__ import annotations

import asyncio
import socket
import typing as tp

from ...error import ProtocolError
from ..error import ConnectionLost
from ..protocol.connection import ConnectionCore
from ..protocol.errors import ForeignProtocol
from .connection import StreamsProtocol, Unanswered

OTHER_PORTS = {
    5672: 'the AMQP 0-9-1 and 1.0 port',
    5671: 'the AMQP 0-9-1 and 1.0 TLS port',
    15672: "the management plugin's HTTP port",
    15671: "the management plugin's HTTPS port",
    15692: "the Prometheus plugin's HTTP port",
    1883: 'the MQTT port',
    8883: 'the MQTT TLS port',
    61613: 'the STOMP port',
    25672: 'the port of clustering and the CLI tools',
    4369: "epmd's port",
}
"""
RabbitMQ's other default ports: a server that closes a connection there
without answering is named (RabbitMQ Streams listens on 5552, 5551 with
TLS).
"""

class Answers:
    """
    The addresses where a broker answered the stream protocol in this
    process: when last (the loop's clock) and its version. A connection
    that an address which answered before then closes without a word was
    refused by that broker (out of file descriptors, shutting down), and is
    not blamed on the port.

    :param limit: Addresses kept (the oldest answer is forgotten first):
        a client's brokers and a cluster's nodes are a few.
    """
    def __init__(self, limit: int = 1024) -> None:
        self.limit = limit
        self._last: dict[tuple[str, int], tuple[float, str]] = {}

    def record(self, host: str, port: int, now: float, version: str) -> None:
        """A broker of ``version`` answered at ``host:port`` at ``now``."""
        key = (host, port)
        self._last.pop(key, None)
        if len(self._last) >= self.limit:
            del self._last[next(iter(self._last))]
        self._last[key] = (now, version)

    def last(self, host: str, port: int) -> tuple[float, str] | None:
        """When a broker last answered at ``host:port``, and its version (``None``: never)."""
        return self._last.get((host, port))

    def forget(self, host: str, port: int) -> None:
        """Forget ``host:port`` (another server listens there now, e.g. a test's)."""
        self._last.pop((host, port), None)

ANSWERS = Answers()
"""The addresses that answered in this process (:py:func:`open_connection`)."""

def unanswered(where: str, port: int, last: tuple[float, str] | None, now: float) -> str:
    """
    What to say of a server at ``where`` that closed a connection without
    answering, ``last``: when a broker last answered there and its version
    (:py:meth:`Answers.last`), ``now`` on the same clock.
    """
    if last is not None:
        when, version = last
        return (
            '{}: the server closed the connection without answering, though a broker'
            ' (RabbitMQ {}) answered on this address {:.0f}s before: the broker accepts'
            ' connections and drops them, as one out of file descriptors does (see its log;'
            ' RabbitMQ recommends a limit of at least 65536 open files) or one shutting'
            ' down'.format(where, version, max(0.0, now - when))
        )
    text = '{}: the server closed the connection without answering (is it a RabbitMQ' \
        ' Streams port? the stream plugin listens on 5552)'.format(where)
    other = OTHER_PORTS.get(port)
    if other is not None:
        text += '; port {} is {} of RabbitMQ'.format(port, other)
    return text

async def open_connection(
        host: str,
        port: int,
        core: ConnectionCore,
        ssl: tp.Any = None,
        timeout: float = 30,
        buffers: tuple[int | None, int | None] = (None, None),
        answers: Answers = ANSWERS,
) -> StreamsProtocol:
    """
    Connect to a broker and finish the handshake.

    :param buffers: The socket's receive and send buffer sizes
        (``SO_RCVBUF``, ``SO_SNDBUF``; ``None``: the system's), set before
        connecting, as TCP agrees on its window scale then.
    :param answers: The addresses that answered before (this process's;
        an address that answers is recorded there).

    :raises ConnectionLost: When the broker cannot be reached, does not
        answer in time, or does not speak the stream protocol.
    :raises rbfly.streams.error.AuthenticationError: When the credentials
        are refused.
    """
    loop = asyncio.get_running_loop()
    protocol: StreamsProtocol | None = None
    where = '{}:{}'.format(host, port)
    if not 0 < port < 0x10000:  # Metadata's port is an uint32; the socket would wrap it
        raise ConnectionLost('cannot connect to {}: port out of range 1..65535'.format(where))
    try:
        async with asyncio.timeout(timeout):
            if buffers == (None, None):
                _, protocol = await loop.create_connection(
                    lambda: StreamsProtocol(core), host, port, ssl=ssl,
                )
            else:
                sock = await _connected_socket(host, port, buffers)
                _, protocol = await loop.create_connection(
                    lambda: StreamsProtocol(core), sock=sock, ssl=ssl,
                    server_hostname=host if ssl is not None else None,
                )
            await protocol.opened
    except TimeoutError as ex:  # before OSError: TimeoutError is an OSError
        _abort(protocol)
        raise ConnectionLost('connecting to {} timed out after {}s'.format(
            where, timeout
        )) from ex
    except ForeignProtocol as ex:
        _abort(protocol)
        raise ConnectionLost('{} does not speak the stream protocol: {}'.format(
            where, ex)) from ex
    except ProtocolError as ex:
        _abort(protocol)
        hint = '' if ssl is not None else ' (a TLS port? use rabbitmq-stream+tls://)'
        raise ConnectionLost('{} does not speak the stream protocol{}: {}'.format(
            where, hint, ex
        )) from ex
    except Unanswered as ex:
        _abort(protocol)
        message = unanswered(where, port, answers.last(host, port), loop.time())
        raise ConnectionLost(message) from ex
    except ConnectionLost as ex:
        _abort(protocol)
        other = OTHER_PORTS.get(port)
        if other is None:
            raise
        raise ConnectionLost('{}: {}; port {} is {} of RabbitMQ'.format(
            where, ex, port, other)) from ex
    except (OSError, ValueError) as ex:
        # ValueError: a host name the resolver refuses (a NUL character, an
        # empty label or one too long), as Metadata may carry
        _abort(protocol)
        raise ConnectionLost('cannot connect to {}: {}'.format(where, ex)) from ex
    finally:
        # a broker answered the handshake (its credentials refused too)
        if protocol is not None and protocol.server_properties:
            answers.record(host, port, loop.time(),
                           protocol.server_properties.get('version', 'unknown'))
    return protocol

async def _connected_socket(
        host: str, port: int, buffers: tuple[int | None, int | None],
) -> socket.socket:
    """A TCP socket with the buffer sizes set, connected to the first address that answers."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    error: OSError = OSError('no address for {}'.format(host))
    for family, kind, proto, _, address in infos:
        sock = socket.socket(family, kind, proto)
        try:
            sock.setblocking(False)
            for option, size in zip((socket.SO_RCVBUF, socket.SO_SNDBUF), buffers, strict=True):
                if size is not None:
                    sock.setsockopt(socket.SOL_SOCKET, option, size)
            await loop.sock_connect(sock, address)
        except OSError as ex:
            sock.close()
            error = ex
            continue
        except BaseException:
            sock.close()
            raise
        return sock
    raise error

def _abort(protocol: StreamsProtocol | None) -> None:
    if protocol is not None and protocol.transport is not None:
        protocol.transport.abort()

__all__ = ['ANSWERS', 'Answers', 'open_connection', 'unanswered']
