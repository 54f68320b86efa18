"""
Types of the dispatch tables of the command codec.

Each codec module lists, per command class, whether the caller gives a
correlation id, its encoder and its decoder;
:py:mod:`rbfly.streams.protocol.codec` builds one dictionary for encoding,
keyed by class, and one for decoding, keyed by ``(key, version)``, so that
dispatch is one lookup per frame.
"""

from collections.abc import Callable
from typing import Any

from .commands import Command
from .reader import Reader
from .writer import Writer

Decoded = tuple[Command, int | None]
"""Decoded command and its correlation id, if the frame has one."""

Decoder = Callable[[Reader], Decoded]
"""Function reading the fields after the key and version."""

EncodeBody = Callable[[Writer, Any], None]
"""
Function writing the fields after the key, version and the correlation id
given by the caller. `Any` stands for the command class of the table row;
it does not leak out of the codec.
"""

Entry = tuple[type[Any], bool, EncodeBody, Decoder]
"""Table row: command class, correlated, encoder, decoder."""

__all__ = ['Decoded', 'Decoder', 'EncodeBody', 'Entry']
