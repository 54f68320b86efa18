"""
A publisher's options: one frozen record, checked by the client before the
publisher is made (see
:py:func:`rbfly.streams.parts.publishing.publisher_options`) and given to
the publisher's constructor.
"""

from __future__ import annotations

import dataclasses as dtc
import typing as tp

if tp.TYPE_CHECKING:
    from ..serializers import Codec

@dtc.dataclass(frozen=True, slots=True)
class PublisherOptions:
    """
    Options of one publisher; ``None`` keeps the publisher class's default.

    :ivar confirm_timeout: Seconds after which a message not confirmed
        fails with :py:class:`~rbfly.streams.ConfirmTimeout` (``None``: it
        waits until confirmed).
    :ivar retry_on_recovery: Whether unconfirmed messages are sent again
        after a reconnection (``False`` given; ``None``: the class's
        default, true for the publisher classes of rbfly).
    :ivar window: Messages that may wait for confirmation (pipelined
        publisher).
    :ivar window_bytes: Bytes of message bodies that may wait for
        confirmation (pipelined publisher).
    :ivar enqueue_timeout: Seconds ``send`` may wait for room in the window
        (pipelined publisher).
    :ivar linger: Seconds a message may wait in the buffer (pipelined
        publisher).
    :ivar sub_entry_size: Messages per sub-entry batch (batch publishers).
    :ivar compression: Compression code of the sub-entry batches.
    :ivar serializer: The codec encoding the application's objects
        (``None``: messages are sent as given).
    """
    confirm_timeout: float | None = None
    retry_on_recovery: bool | None = None
    window: int | None = None
    window_bytes: int | None = None
    enqueue_timeout: float | None = None
    linger: float | None = None
    sub_entry_size: int | None = None
    compression: int = 0
    serializer: Codec | None = None

DEFAULT_OPTIONS = PublisherOptions()
"""The options of a publisher given none."""

__all__ = ['DEFAULT_OPTIONS', 'PublisherOptions']
