"""
A subscription with a serializer: the objects of its messages, each
decoded by a :py:class:`~rbfly.streams.serializers.Codec` from the
message the bodies iterator (:py:class:`~rbfly.streams.subscriptions._bodies.Bodies`)
set as the current one.

It wraps the bodies iterator rather than changing it: a subscription
without a serializer runs the compiled iterator alone, at its cost.
"""

from __future__ import annotations

import typing as tp
from collections.abc import AsyncGenerator
from types import TracebackType

from ...amqp import get_message_ctx
from ..offset import Offset
from ..serializers import Codec
from ._bodies import Bodies

class Decoded(AsyncGenerator[tp.Any, None]):
    """
    The decoded objects of a subscription's messages (an async generator;
    :py:func:`rbfly.streams.get_message_ctx` gives each one's message,
    with its offset, as for the bodies).

    :param bodies: The subscription's bodies.
    :param codec: Decodes each message.
    :param stream: The stream (or super stream), named in errors when a
        message does not name its own.
    """
    __slots__ = ('_bodies', '_decode', '_stream')

    def __init__(self, bodies: Bodies, codec: Codec, stream: str) -> None:
        self._bodies = bodies
        self._decode = codec.decode
        self._stream = stream

    def __aiter__(self) -> Decoded:
        return self

    async def __anext__(self) -> tp.Any:
        await self._bodies.__anext__()
        return self._decode(get_message_ctx(), self._stream)

    async def asend(self, value: None) -> tp.Any:
        return await self.__anext__()

    async def athrow(
            self,
            typ: type[BaseException] | BaseException,
            val: BaseException | object = None,
            tb: TracebackType | None = None,
    ) -> tp.Any:
        await self._bodies.athrow(typ, val, tb)
        return self._decode(get_message_ctx(), self._stream)

    async def aclose(self) -> None:
        """End the subscription."""
        await self._bodies.aclose()

    def hand_back(self) -> None:
        """The message handed out last goes back (see ``Bodies.hand_back``)."""
        self._bodies.hand_back()

    async def commit(self) -> None:
        """Commit the offset of the message processed (see ``Bodies.commit``)."""
        await self._bodies.commit()

    def pause(self, *streams: str) -> None:
        """Pause ``streams`` (see ``Bodies.pause``)."""
        self._bodies.pause(*streams)

    def resume(self, *streams: str) -> None:
        """Resume paused ``streams`` (see ``Bodies.resume``)."""
        self._bodies.resume(*streams)

    def paused(self) -> frozenset[str]:
        """The streams paused."""
        return self._bodies.paused()

    async def seek(self, stream: str, offset: Offset | int) -> None:
        """Read ``stream`` from ``offset`` on (see ``Bodies.seek``)."""
        await self._bodies.seek(stream, offset)

__all__ = ['Decoded']
