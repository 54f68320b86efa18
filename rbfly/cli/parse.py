"""
Parsing what a person types: durations, sizes, offsets.

Pure functions, tested without a broker; each raises ``ValueError`` with a
message naming what was wrong (argparse shows it as a usage error).
"""

from __future__ import annotations

import datetime as dt
import re

from ..streams.offset import Offset

_DURATION = re.compile(r'^(\d+)([smhdD]|Y|M)$')
_SIZE = re.compile(r'^(\d+(?:\.\d+)?)\s*([kKMGT]?i?B|B)?$')
_SIZES = {
    None: 1, 'B': 1,
    'kB': 10**3, 'KB': 10**3, 'MB': 10**6, 'GB': 10**9, 'TB': 10**12,
    'KiB': 2**10, 'kiB': 2**10, 'MiB': 2**20, 'GiB': 2**30, 'TiB': 2**40,
}

def duration(text: str) -> str:
    """
    A retention age as the broker takes it (``max-age``): a number and a
    unit, ``s``, ``m``, ``h``, ``D`` (or ``d``), ``M`` (months), ``Y``.
    """
    m = _DURATION.match(text.strip())
    if not m or int(m.group(1)) == 0:
        raise ValueError('duration {!r}: give a positive number and a unit:'
                         ' 30s, 15m, 1h, 7d, 6M, 1Y'.format(text))
    value, unit = m.groups()
    return value + ('D' if unit == 'd' else unit)

def size(text: str) -> int:
    """Bytes: ``500MB``, ``10GB``, ``1GiB``, ``1000`` (decimal or binary units)."""
    m = _SIZE.match(text.strip())
    if not m or m.group(2) not in _SIZES:
        raise ValueError('size {!r}: give bytes, e.g. 1000, 500MB, 10GB, 1GiB'.format(text))
    value = float(m.group(1)) * _SIZES[m.group(2)]
    if value < 1 or value != int(value):
        raise ValueError('size {!r}: a whole number of bytes, at least 1'.format(text))
    return int(value)

def offset(text: str) -> Offset:
    """
    Where to start reading: ``first``, ``last``, ``next``, an offset
    (``1234``), or an ISO 8601 time (``2026-11-23T10:00:00``, UTC unless it
    says otherwise).
    """
    word = text.strip().lower()
    if word in ('first', 'last', 'next'):
        return {'first': Offset.FIRST, 'last': Offset.LAST, 'next': Offset.NEXT}[word]
    if word.isdigit():
        return Offset.offset(int(word))
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError('offset {!r}: give first, last, next, an offset (a whole number)'
                         ' or an ISO 8601 time'.format(text)) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return Offset.timestamp(when.timestamp())

__all__ = ['duration', 'offset', 'size']
