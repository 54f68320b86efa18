"""
Sans-IO core of the RabbitMQ Streams protocol.

Bytes in, commands out, and back: no asyncio, no sockets, no clock.

- :py:mod:`.constants`: keys, response codes, offset types, defaults.
- :py:mod:`.commands`: one typed dataclass per command.
- :py:mod:`.codec`: :py:func:`~.codec.encode`, :py:func:`~.codec.decode`,
  :py:func:`~.codec.decode_frame`.
- :py:mod:`.frames`: :py:class:`~.frames.FrameReader`, splitting a byte
  stream into frames.

Example::

    >>> from rbfly.streams.protocol import FrameReader, Heartbeat, decode, encode
    >>> reader = FrameReader()
    >>> reader.feed(encode(Heartbeat()))
    >>> [decode(frame) for frame in reader]
    [Heartbeat()]
"""

from .codec import DecodedFrame, decode, decode_frame, encode
from .commands import *  # noqa: F403
from .commands import __all__ as _commands
from .constants import (
    DEFAULT_FRAME_MAX,
    DEFAULT_HEARTBEAT,
    DEFAULT_MAX_RECEIVED_FRAME_SIZE,
    INITIAL_FRAME_MAX,
    KEY_MASK,
    MAX_REFERENCE_LENGTH,
    NO_LEADER,
    RESPONSE_FLAG,
    Key,
    OffsetSpecType,
    ResponseCode,
)
from .errors import ProtocolEncodeError, UnexpectedResponse
from .frames import FrameReader

__all__ = [  # noqa: PLE0604
    'DEFAULT_FRAME_MAX',
    'DEFAULT_HEARTBEAT',
    'DEFAULT_MAX_RECEIVED_FRAME_SIZE',
    'INITIAL_FRAME_MAX',
    'KEY_MASK',
    'MAX_REFERENCE_LENGTH',
    'NO_LEADER',
    'RESPONSE_FLAG',
    'DecodedFrame',
    'FrameReader',
    'Key',
    'OffsetSpecType',
    'ProtocolEncodeError',
    'ResponseCode',
    'UnexpectedResponse',
    'decode',
    'decode_frame',
    'encode',
    *_commands,
]
