"""
Exception hierarchy of rbfly.

Every exception raised by rbfly on purpose derives from :py:class:`RbFlyError`,
so an application can catch the whole library with one clause and still tell
the causes apart by subclass.
"""

class RbFlyError(Exception):
    """
    Base class of all rbfly errors.
    """

class RbFlyBufferError(RbFlyError):
    """
    A buffer is too small for the data to be written into it.

    Raised by :py:func:`rbfly.amqp.encode_amqp` when the message does not fit
    into the buffer given by the caller; the buffer is left unchanged past
    its valid data and the call can be repeated with a larger buffer.
    """

class AMQPError(RbFlyError):
    """
    Base class of AMQP 1.0 codec errors.
    """

class AMQPEncodeError(AMQPError, ValueError):
    """
    A value cannot be encoded as AMQP 1.0 data.

    The message names the value or the type that was wrong, for example an
    integer outside of ``-2**63 .. 2**64 - 1`` or an object of a type without
    an AMQP mapping.
    """

class AMQPDecodeError(AMQPError, ValueError):
    """
    AMQP 1.0 data cannot be decoded.

    :ivar offset: Offset, within the decoded buffer, of the byte where the
        problem was found.
    :ivar reason: What is wrong, without the offset.
    """
    offset: int
    reason: str

    def __init__(self, message: str, offset: int) -> None:
        super().__init__('{} (at offset {})'.format(message, offset))
        self.offset = offset
        self.reason = message

class MessageDecodeError(AMQPDecodeError):
    """
    A message of a stream is not an AMQP 1.0 message (a subscription
    decoding AMQP met a message published as raw bytes, or by a client
    of another format).

    The message names the stream, the message's offset in it and the
    way out: subscribe with ``amqp=False`` to receive raw bodies (``rbfly
    tail --binary``), or with ``on_decode_error='skip'`` or ``'raw'`` to
    skip such messages or receive them as bytes (``rbfly tail
    --on-decode-error skip`` or ``raw``); or subscribe again from
    ``stream_offset + 1``.

    A subclass of :py:class:`AMQPDecodeError`, which subscriptions raised
    before.

    :ivar stream: Stream of the message.
    :ivar stream_offset: Offset of the message in the stream.
    :ivar offset: Byte position, within the message, of the problem.
    """
    stream: str | None
    stream_offset: int

    def __init__(self, reason: str, offset: int, stream: str | None, stream_offset: int) -> None:
        ValueError.__init__(
            self,
            'message at offset {} of stream {!r} is not an AMQP 1.0 message: {} (at byte {}'
            ' of the message); subscribe with amqp=False for raw bodies, or with'
            ' on_decode_error=\'skip\' or \'raw\' (rbfly tail --binary, or'
            ' --on-decode-error skip or raw)'.format(
                stream_offset, stream, reason, offset,
            ),
        )
        self.offset = offset
        self.reason = reason
        self.stream = stream
        self.stream_offset = stream_offset

AMQPDecoderError = AMQPDecodeError
"""Name used by RbFly 0.10; kept as an alias."""

class ProtocolError(RbFlyError):
    """
    Base class of RabbitMQ Streams protocol errors found on the client side.
    """

class FrameDecodeError(ProtocolError, ValueError):
    """
    A frame received from the broker is malformed.

    :ivar offset: Offset of the problem within the frame.
    """
    offset: int

    def __init__(self, message: str, offset: int) -> None:
        super().__init__('{} (at offset {})'.format(message, offset))
        self.offset = offset

class ChunkError(ProtocolError, ValueError):
    """
    A chunk of stream data delivered by the broker is malformed (bad magic,
    CRC mismatch, lengths past the end, an unsupported compression).

    :ivar offset: Offset of the problem within the chunk.
    """
    offset: int

    def __init__(self, message: str, offset: int) -> None:
        super().__init__('{} (at offset {})'.format(message, offset))
        self.offset = offset

class ChunkCrcError(ChunkError):
    """
    A chunk's data does not match its CRC32: corrupted between the broker's
    disk and the client. None of its messages is handed out.
    """

class ChunkTooLarge(ChunkError):
    """
    A chunk's compressed sub-batches decompress past the client's cap
    (``max_chunk_uncompressed``, the Java client's
    ``maxUncompressedSizePerChunk``): a decompression bomb, or a cap too
    low for the stream. Nothing past the cap is allocated.

    :ivar limit: The cap, in bytes.
    """
    limit: int

    def __init__(self, message: str, offset: int, limit: int) -> None:
        super().__init__(message, offset)
        self.limit = limit

class NoMessageContext(RbFlyError, LookupError):
    """
    :py:func:`rbfly.streams.get_message_ctx` was called where no message
    is being processed: outside the iteration of a subscription (and of
    the tasks it created). A :py:class:`LookupError`, as raised before.
    """

class MessageTooLarge(RbFlyError, ValueError):
    """
    A message is too large to fit into a frame of the size negotiated with
    the broker (the smaller of the broker's ``stream.frame_max`` and the
    client's ``frame_max`` option; the message says the value); raised
    before anything is sent.
    """

__all__ = [
    'AMQPDecodeError',
    'AMQPDecoderError',
    'AMQPEncodeError',
    'AMQPError',
    'ChunkCrcError',
    'ChunkError',
    'ChunkTooLarge',
    'FrameDecodeError',
    'MessageDecodeError',
    'MessageTooLarge',
    'NoMessageContext',
    'ProtocolError',
    'RbFlyBufferError',
    'RbFlyError',
]
