"""
Checks of the names the user gives: streams, publishers, consumers, offset
references and super streams (the protocol's short strings, at most 255
bytes of UTF-8).
"""

from __future__ import annotations

MAX_STREAM_NAME = 255
"""Longest name, in bytes of UTF-8 (a protocol short string)."""

def check_name(what: str, name: str) -> None:
    """
    :raises ValueError: When ``name`` (of a ``what``) is not a non-empty
        str of at most :py:data:`MAX_STREAM_NAME` bytes.
    """
    if not isinstance(name, str) or not name:
        raise ValueError('{} name must be a non-empty str, got {!r}'.format(what, name))
    if len(name.encode('utf-8')) > MAX_STREAM_NAME:
        raise ValueError('{} name longer than {} bytes: {!r}...'.format(
            what, MAX_STREAM_NAME, name[:32]
        ))

__all__ = ['MAX_STREAM_NAME', 'check_name']
