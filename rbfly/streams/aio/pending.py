"""
The requests of one connection waiting for their responses
(:py:class:`PendingRequests`), a part of the asyncio adapter
(:py:class:`~rbfly.streams.aio.connection.StreamsProtocol`).
"""

from __future__ import annotations

import asyncio
import logging
import typing as tp

from ..error import error_for_code
from ..protocol.commands import CommandBase, Request
from ..protocol.constants import ResponseCode
from ..protocol.errors import UnexpectedResponse

# the connection's logger, as documented (doc/logging.rst): what is logged
# here is the connection's
logger = logging.getLogger('rbfly.streams.aio.protocol')

class PendingRequests:
    """
    The requests of a connection waiting for their response, by
    correlation id: each with its future (of the request's response
    class), its context (what it is about, for error messages) and the
    request. It resolves a future with its response, fails it with the
    response's error, or fails them all when the connection is lost; the
    request's sender (:py:meth:`StreamsProtocol.request
    <rbfly.streams.aio.connection.StreamsProtocol.request>`) adds and
    discards its own.
    """
    def __init__(self) -> None:
        self._pending: dict[int, tuple[asyncio.Future[tp.Any], str, Request[CommandBase]]] = {}

    def __len__(self) -> int:
        return len(self._pending)

    def add(
            self, correlation_id: int, fut: asyncio.Future[tp.Any], context: str,
            command: Request[CommandBase],
    ) -> None:
        """A request was sent: its response resolves ``fut``."""
        self._pending[correlation_id] = (fut, context, command)

    def discard(self, correlation_id: int) -> None:
        """
        The request's sender no longer waits (answered, timed out,
        cancelled): a late response is ignored.
        """
        self._pending.pop(correlation_id, None)

    def resolve(self, response: object) -> None:
        """
        A response came: its request's future gets it, or the error its
        code means, or :py:class:`UnexpectedResponse` when it is not of
        the class the request names; one no request waits for is logged
        (at DEBUG) and dropped.
        """
        correlation_id = getattr(response, 'correlation_id', None)
        entry = self._pending.get(tp.cast(int, correlation_id))
        if entry is None:
            logger.debug('response without a waiter: %s', type(response).__name__)
            return
        fut, context, command = entry
        if fut.done():
            return
        expected = command.RESPONSE
        if type(response) is not expected:  # (response classes are final: one identity test)
            error = UnexpectedResponse(type(command), expected, type(response), context)
            logger.error('%s', error)
            fut.set_exception(error)
            return
        code = getattr(response, 'code', ResponseCode.OK)
        if code != ResponseCode.OK:
            fut.set_exception(error_for_code(code, context))
        else:
            fut.set_result(response)

    def fail(self, error: Exception) -> None:
        """The connection is lost: every request waiting gets ``error``."""
        for fut, _, _ in self._pending.values():
            if not fut.done():
                fut.set_exception(error)
        self._pending.clear()

__all__ = ['PendingRequests']
