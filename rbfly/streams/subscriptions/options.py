"""
How a subscription reads its chunks (:py:class:`ReadOptions`): the
frozen record the subscriptions part builds once from the application's
and the client's options, and hands to each
:py:class:`~rbfly.streams.subscriptions.subscription.Subscription` it
makes (a record of its own, so that the parts building subscriptions
need not import the subscription's machinery to say how it reads).
"""

from __future__ import annotations

import dataclasses as dtc

from ..protocol._chunk import DEFAULT_MAX_CHUNK_UNCOMPRESSED
from .flow import FlowStrategy

@dtc.dataclass(frozen=True, slots=True)
class ReadOptions:
    """
    How a subscription reads its chunks: one frozen record, built once by
    the subscriptions part from the application's and the client's
    options.

    :ivar amqp: Decode messages as AMQP 1.0.
    :ivar credit: Chunks the broker may send ahead at the start, and at
        least.
    :ivar buffer_bytes: Bytes the subscription may hold in chunks.
    :ivar spin: Seconds to keep polling for the next chunk before
        sleeping, when chunks come in quick succession (0: never).
    :ivar crc_check: Verify each chunk's CRC32 (a mismatch ends the
        subscription with :py:class:`~rbfly.error.ChunkError`).
    :ivar skip_bad_crc: Skip a chunk failing its CRC (with a warning)
        instead.
    :ivar max_uncompressed: Bytes a sub-entry batch may decompress to.
    :ivar flow: Flow strategy counting chunks (its ``credit`` replaces
        ``credit``; ``buffer_bytes`` does not apply), or ``None``: the
        byte-bounded policy (see :py:mod:`rbfly.streams.subscriptions.flow` and
        :py:mod:`rbfly.streams.subscriptions.credit`).
    :ivar on_decode_error: With ``amqp``, what to do with a message that
        is not AMQP 1.0: ``'raise'``, ``'skip'`` or ``'raw'`` (see
        ``decode_chunk`` of :py:mod:`rbfly.streams.protocol`'s ``_chunk``),
        or ``'policy'``: as ``'raw'``, for concurrent handlers, whose error
        policy gets it (the chunk's ``undecodable``).
    """
    amqp: bool = True
    credit: int = 16
    buffer_bytes: int = 8 * 1024 * 1024
    spin: float = 0.0
    crc_check: bool = True
    skip_bad_crc: bool = False
    max_uncompressed: int = DEFAULT_MAX_CHUNK_UNCOMPRESSED
    flow: FlowStrategy | None = None
    on_decode_error: str = 'raise'

DEFAULT_READ = ReadOptions()
"""The options of a subscription read with the defaults (immutable, shared)."""
