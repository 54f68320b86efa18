"""
A publisher's options: as the application gives them, typed once as the
``TypedDict`` :py:class:`PublisherArgs` (the keyword arguments of
:py:meth:`~rbfly.streams.StreamsClient.publisher`,
:py:meth:`~rbfly.streams.StreamsClient.super_stream_publisher` and the
blocking facade's publishers: ``**options: Unpack[PublisherArgs]``, so that
mypy and an editor check each name and type), and as one frozen record,
checked by the client before the publisher is made (see
:py:func:`rbfly.streams.parts.publishing.publisher_options`) and given to
the publisher's constructor.

A new option of a publisher is added to :py:class:`PublisherArgs` (or
:py:class:`BasicPublisherArgs`, when every publisher class takes it),
described in :py:meth:`~rbfly.streams.StreamsClient.publisher`, and read
by :py:func:`~rbfly.streams.parts.publishing.publisher_options`.
"""

from __future__ import annotations

import dataclasses as dtc
import difflib
import typing as tp
from collections.abc import Mapping

from ..lifecycle import StateListener
from ..types import BloomFilterExtract

if tp.TYPE_CHECKING:
    from ..serializers import Codec, Serializer

class BasicPublisherArgs(tp.TypedDict, total=False):
    """
    The options every publisher class takes, as keyword arguments of
    :py:meth:`~rbfly.streams.StreamsClient.publisher` (each described,
    with its default, there).
    """
    name: str | None
    filter_extract: BloomFilterExtract | None
    confirm_timeout: float | None
    dedup: bool
    retry_on_recovery: bool
    on_state: StateListener | None
    serializer: Serializer | Codec | None

class PublisherArgs(BasicPublisherArgs, total=False):
    """
    The options of a publisher: those of every publisher class, and those
    of some (the pipelined publisher's window, the batch publishers'
    sub-entry batches); a publisher class given an option it does not take
    raises ``ValueError``.
    """
    window: int | None
    window_bytes: int | None
    enqueue_timeout: float | None
    linger: float | None
    sub_entry_size: int | None
    compression: int | str

PUBLISHER_NAMES: tp.Final = frozenset(PublisherArgs.__annotations__)
"""The names of the options of a publisher."""

def check_names(where: str, options: Mapping[str, object], names: tp.AbstractSet[str]) -> None:
    """
    Refuse an option a method does not take, as Python refuses an
    unexpected keyword argument, naming the closest one (the options
    travel in a dictionary, where a misspelt name would otherwise be lost,
    or fail far from the call).

    :param where: The method given the options, as Python names it
        (``StreamsClient.publisher``).
    :param names: The options it takes.
    :raises TypeError: For an unknown option.
    """
    unknown = sorted(options.keys() - names)
    if unknown:
        close = difflib.get_close_matches(unknown[0], names, 1)
        raise TypeError('{}() got an unexpected keyword argument {!r}{}'.format(
            where, unknown[0], '; did you mean {!r}?'.format(close[0]) if close else '',
        ))

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

__all__ = [
    'DEFAULT_OPTIONS', 'PUBLISHER_NAMES', 'BasicPublisherArgs', 'PublisherArgs', 'PublisherOptions',
    'check_names',
]
