"""
Chunks a subscription (:py:mod:`rbfly.streams.subscriptions.subscription`)
takes that do not decode at the first try: off its fast path, which has
no ``try`` per message.

- A chunk that fails its CRC, when the client skips such chunks
  (``skip_bad_crc``): none of its messages, a warning, a count.
- A chunk with a message that is not AMQP 1.0: decoded again, each
  message under ``try``, to raise an error naming the message, skip it or
  keep its bytes, as ``on_decode_error`` says.
"""

from __future__ import annotations

import logging

from ...amqp import MessageCtx
from ...error import ChunkCrcError, MessageDecodeError
from ..metrics import Counters
from ..protocol._chunk import ChunkInfo, decode_chunk, read_header

# the subscriptions' logger, as documented (doc/logging.rst): the module's former name
logger = logging.getLogger('rbfly.streams.subscriber')

def skipped(
        data: bytes | bytearray | memoryview, error: ChunkCrcError, stream: str,
        counters: Counters,
) -> ChunkInfo:
    """
    A chunk failed its CRC and the client skips such chunks: a warning, a
    count; return its header, the only part used, and only to move past
    it.
    """
    info = read_header(data)  # valid: decoding checks the header before the CRC
    logger.warning('stream %r: chunk at offset %d skipped (%d records): %s',
                   stream, info.first_offset, info.num_records, error)
    counters.chunks_skipped += 1
    return info

def decode_each(
        data: bytes | bytearray | memoryview, start_offset: int, amqp: bool,
        crc_check: bool, stream: str, max_uncompressed: int, on_decode_error: str,
        counters: Counters,
) -> tuple[ChunkInfo, list[MessageCtx]]:
    """
    Decode a chunk again, each message under ``try``: one that is not
    AMQP raises an error naming it, is skipped, or keeps its bytes (the
    error policy of concurrent handlers, ``'policy'``, keeps them).

    :raises rbfly.error.MessageDecodeError: With ``on_decode_error='raise'``
        (counted).
    """
    try:
        return decode_chunk(
            data, start_offset, amqp, crc_check, stream, max_uncompressed,
            'raw' if on_decode_error == 'policy' else on_decode_error,
        )
    except MessageDecodeError:
        counters.undecodable += 1
        raise

__all__ = ['decode_each', 'skipped']
