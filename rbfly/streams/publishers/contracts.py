"""
What others call on a publisher: the client's parts
(:py:class:`PublisherControl`: restore it on a new connection, end it, ask
how it stands) and the publishers wrapping one, a super stream's
partitions and a serializing class (:py:class:`EntryPoints`: the entry
points taking messages). Each publisher class implements them through
:py:class:`~rbfly.streams.publishers.base.PublisherTrait` and its own
entry points. Split from :py:mod:`rbfly.streams.publishers.base` (which
exports these names too): a reader of a part or a wrapper finds here all
it may call.
"""

from __future__ import annotations

import typing as tp

from ..lifecycle import ResourceState

class PublisherControl(tp.Protocol):
    """
    What the client's parts do to a publisher, beside the records'
    fields (:py:mod:`rbfly.streams.aio.records`): restore it on a new
    connection, end it, and ask how it stands. Every publisher class
    implements it through
    :py:class:`~rbfly.streams.publishers.base.PublisherTrait`; the parts call
    nothing else of a publisher but what its user calls.
    """
    @property
    def stream(self) -> str:
        """The stream the publisher sends to."""

    @property
    def unconfirmed(self) -> int:
        """Messages sent and not confirmed yet."""

    @property
    def ended(self) -> bool:
        """Whether the publisher is closed, or failed for good."""

    @property
    def state(self) -> ResourceState:
        """The publisher's state."""

    @property
    def confirmed_at(self) -> float | None:
        """When its last timed confirmation came (monotonic clock)."""

    @property
    def waiting_since(self) -> float | None:
        """When the message whose confirmation is timed now was sent (monotonic clock)."""

    def restore(self, sequence: int) -> None:
        """Continue on a new connection, the broker having stored up to ``sequence``."""

    def fail(self, error: Exception) -> None:
        """End the publisher with an error; its waiting callers get it."""

    async def finish(self) -> None:
        """The application leaves the publisher's context normally."""

    def send_pending(self) -> None:
        """Send what the publisher accepted and did not send yet."""

    def close(self) -> None:
        """Refuse further messages (the context ends)."""

    async def wait_ready(self, timeout: float) -> None:
        """Wait, ``timeout`` seconds at most, until declared on a connection again."""

class EntryPoints(tp.Protocol):
    """
    The entry points taking messages of the publisher classes, as a super
    stream publisher calls them on its partitions' publishers, and a
    serializing publisher on its class's
    (:py:mod:`rbfly.streams.publishers.serializing`). Each class has some
    of them: ``send`` (:py:class:`~rbfly.streams.Publisher`,
    :py:class:`~rbfly.streams.PublisherPipelined`,
    :py:class:`~rbfly.streams.PublisherBin`), ``batch`` and ``flush`` (the
    batch publishers), ``send_many`` (all); one a class lacks raises
    ``AttributeError`` when called, as on the publisher itself. The result
    of ``send`` and ``send_many`` is the class's: ``None``, or a
    publishing id (:py:class:`~rbfly.streams.PublisherPipelined`).
    """
    @property
    def stream(self) -> str:
        """The stream the publisher sends to."""

    def send(self, message: object, /, *args: object, **kw: object) -> tp.Awaitable[int | None]:
        """Send a message."""

    def send_many(self, messages: tp.Iterable[object], /) -> tp.Awaitable[int | None]:
        """Send messages."""

    def batch(self, message: object, /, *args: object, **kw: object) -> object:
        """Add a message to the batch (an awaitable, or ``None``)."""

    def flush(self) -> tp.Awaitable[None]:
        """Send the batch and wait for its confirmation."""

__all__ = ['EntryPoints', 'PublisherControl']
