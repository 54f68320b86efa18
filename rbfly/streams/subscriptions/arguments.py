"""
The arguments an application steers a read with (pause, resume and seek
of a reader's progress, :py:mod:`rbfly.streams.subscriptions.progress`),
checked before anything changes: an error names what was wrong and what
to pass instead.
"""

from __future__ import annotations

import typing as tp

from ..offset import Offset

def check_streams(streams: tp.Sequence[str], known: tp.Sequence[str] | None) -> None:
    """
    Check the streams named to pause, resume or seek.

    :param known: The streams read (``None``: not known yet, before the
        read subscribed; any name passes then).
    :raises TypeError: When no stream is named, or a name is not a
        ``str``.
    :raises ValueError: When a stream is not read.
    """
    if not streams or not all(isinstance(s, str) for s in streams):
        raise TypeError('name the streams (str): the stream, or the partitions of a'
                        ' super stream, got {!r}'.format(streams))
    if known is not None and (unknown := [s for s in streams if s not in known]):
        raise ValueError('not read here: {}; the streams read: {}'.format(
            ', '.join(map(repr, unknown)), ', '.join(map(repr, known))))

def seek_offset(offset: Offset | int) -> Offset:
    """
    The offset to seek to: an :py:class:`~rbfly.streams.Offset`, or an
    int for ``Offset.offset``.

    :raises TypeError: For another type (a ``bool`` too).
    :raises ValueError: For an int out of range.
    """
    if isinstance(offset, Offset):
        return offset
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise TypeError('offset must be an Offset or an int, got {!r}'.format(offset))
    return Offset.offset(offset)

__all__ = ['check_streams', 'seek_offset']
