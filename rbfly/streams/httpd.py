"""
A minimal HTTP/1.1 server for the few read-only endpoints an operator
scrapes: the lag exporter's ``/metrics`` and ``/lag.json`` (``rbfly group
serve``) and a client's health (:py:func:`rbfly.streams.probes.serve_probes`).

Made on ``asyncio.start_server``, without a dependency: each
request is a ``GET`` (or ``HEAD``) of a path answered by a route, a
function returning a :py:class:`Response`; one response per connection
(``Connection: close``). What is not such a request is answered, never
raised: a malformed request gets 400, an unknown path 404, another method
405, a request line or headers over ``MAX_HEAD`` bytes (16 KiB) 431, a
client sending nothing for ``READ_TIMEOUT`` seconds (10) is closed, and
a route that fails gets 500 (logged). Cancellation ends the server.
"""

from __future__ import annotations

import asyncio
import dataclasses as dtc
import logging
import typing as tp
from collections.abc import Callable, Mapping
from http import HTTPStatus

logger = logging.getLogger(__name__)

MAX_HEAD = 16 * 1024
"""Bytes at most of a request's line and headers."""

READ_TIMEOUT = 10.0
"""Seconds a client has to send its request."""

@dtc.dataclass(frozen=True, slots=True)
class Response:
    """
    An answer to a request.

    :ivar status: Its status code.
    :ivar body: Its body.
    :ivar content_type: The body's media type.
    """
    status: int
    body: str
    content_type: str = 'text/plain; charset=utf-8'

Route: tp.TypeAlias = Callable[[], Response]
"""The answer to a path, made when the path is asked for."""

class BadRequest(Exception):
    """A request that is not one (its response's status, and why)."""
    def __init__(self, status: HTTPStatus, reason: str) -> None:
        super().__init__(reason)
        self.status = status

def parse_head(head: bytes) -> tuple[str, str]:
    """
    The method and path of a request's head (its line and headers, up to
    the blank line); the query string is dropped.

    :raises BadRequest: When it is not an HTTP/1.x request.
    """
    line = head.split(b'\r\n', 1)[0]
    parts = line.split(b' ')
    if len(parts) != 3 or not parts[2].startswith(b'HTTP/1.'):
        raise BadRequest(HTTPStatus.BAD_REQUEST, 'not an HTTP/1.x request line')
    try:
        method, target = parts[0].decode('ascii'), parts[1].decode('ascii')
    except UnicodeDecodeError:
        raise BadRequest(HTTPStatus.BAD_REQUEST, 'request line not in ASCII') from None
    if not target.startswith('/'):
        raise BadRequest(HTTPStatus.BAD_REQUEST, 'the target is not a path')
    return method, target.split('?', 1)[0]

def answer(routes: Mapping[str, Route], head: bytes) -> tuple[Response, bool]:
    """
    The response to a request's head, and whether to send its body (not
    for ``HEAD``).
    """
    try:
        method, path = parse_head(head)
    except BadRequest as ex:
        return Response(ex.status, '{}\n'.format(ex)), True
    if method not in ('GET', 'HEAD'):
        return Response(HTTPStatus.METHOD_NOT_ALLOWED, 'only GET and HEAD\n'), True
    route = routes.get(path)
    if route is None:
        return Response(HTTPStatus.NOT_FOUND, 'no such path: {}; try {}\n'.format(
            path, ', '.join(sorted(routes)))), method == 'GET'
    try:
        return route(), method == 'GET'
    except Exception:  # the route's: the server goes on
        logger.exception('route %s failed', path)
        return Response(HTTPStatus.INTERNAL_SERVER_ERROR, 'internal error\n'), method == 'GET'

def encode(response: Response, body: bool = True) -> bytes:
    """The bytes of a response (with ``Connection: close``)."""
    data = response.body.encode('utf-8')
    try:
        phrase = HTTPStatus(response.status).phrase
    except ValueError:
        phrase = 'Status'
    head = (
        'HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n'
        'Cache-Control: no-store\r\nConnection: close\r\n\r\n'
    ).format(response.status, phrase, response.content_type, len(data))
    return head.encode('ascii') + (data if body else b'')

async def _serve_one(
        routes: Mapping[str, Route], reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
) -> None:
    try:
        try:
            async with asyncio.timeout(READ_TIMEOUT):
                head = await reader.readuntil(b'\r\n\r\n')
        except asyncio.LimitOverrunError:
            response, body = Response(
                HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, 'request head too large\n'), True
        except asyncio.IncompleteReadError as ex:
            if not ex.partial:
                return  # connected and closed: a TCP probe
            response, body = Response(HTTPStatus.BAD_REQUEST, 'incomplete request\n'), True
        except TimeoutError:
            return
        else:
            response, body = answer(routes, head)
        writer.write(encode(response, body))
        await writer.drain()
    except (ConnectionError, OSError) as ex:
        logger.debug('HTTP client gone: %s', ex)
    finally:
        writer.close()

async def start(
        routes: Mapping[str, Route], host: str, port: int,
) -> asyncio.Server:
    """
    Listen on ``host`` and ``port`` (0: any free port; see the server's
    ``sockets``) and answer each request with its path's route.

    :raises OSError: When the address cannot be listened on.
    """
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _serve_one(routes, reader, writer)
    return await asyncio.start_server(serve, host, port, limit=MAX_HEAD)

def listen_address(text: str) -> tuple[str, int]:
    """
    ``HOST:PORT`` (``:PORT``: every interface; ``[::1]:PORT`` for IPv6)
    as a host and a port.

    :raises ValueError: When it is not such an address.
    """
    host, sep, port = text.rpartition(':')
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ValueError('{!r}: give HOST:PORT, e.g. 0.0.0.0:9585 or :9585'.format(text))
    host = host[1:-1] if host.startswith('[') and host.endswith(']') else host
    return host or '0.0.0.0', int(port)

__all__ = [
    'MAX_HEAD', 'READ_TIMEOUT', 'BadRequest', 'Response', 'Route', 'answer', 'encode',
    'listen_address', 'parse_head', 'start',
]
