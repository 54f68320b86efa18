"""
Constants of the RabbitMQ Streams protocol.

Frame structure, quoted from PROTOCOL.adoc ("Frame Structure")::

    Frame => Size (Request | Response | Command)
      Size => uint32 (size without the 4 bytes of the size element)

    Request => Key Version (CorrelationId) Content
    Response => Key Version CorrelationId ResponseCode
    Command => Key Version Content

      Key => uint16
      Version => uint16
      CorrelationId => uint32
      ResponseCode => uint16

"Keys are uint16, but the actual value is defined on the last 15 bits, the
most significant bit being used to make the difference between a request
(0) and a response (1)."

Offset specification, quoted from PROTOCOL.adoc ("Subscribe",
"ConsumerUpdate")::

    OffsetSpecification => OffsetType Offset
    OffsetType => uint16 // 0 (none), 1 (first), 2 (last), 3 (next),
                         // 4 (offset), 5 (timestamp)
    Offset => uint64 (for offset) | int64 (for timestamp)
"""

from enum import IntEnum

from ..codes import ResponseCode

RESPONSE_FLAG = 0x8000
"""Most significant bit of a key; set for a response to a request."""

KEY_MASK = 0x7FFF
"""Mask of the command identifier in a key."""

DEFAULT_FRAME_MAX = 1048576
"""
Server default of the maximum frame size in bytes (1 MiB,
``DEFAULT_FRAME_MAX`` in ``rabbit_stream.hrl``).
"""

DEFAULT_HEARTBEAT = 60
"""Server default of the heartbeat interval in seconds."""

INITIAL_FRAME_MAX = 8192
"""
Maximum size of a frame sent to the server before `Open` succeeds
(``stream.initial_frame_max``, RabbitMQ 4.3.5), whatever `Tune` negotiated.
"""

PRE_OPEN_FRAME_MAX = 64 * 1024
"""
Largest frame accepted from the server before the connection is open (the
handshake's answers are a few hundred bytes): a server that is not a
RabbitMQ stream port (an HTTP server, say, whose "HTTP" reads as a size of
1.2 GB), or a hostile one, cannot make the client buffer megabytes before
it authenticated.
"""

DEFAULT_MAX_RECEIVED_FRAME_SIZE = 1024 * 1024 * 1024
"""
Default limit of the size of a frame accepted from the broker once the
connection is open (1 GiB).

A `Deliver` frame carries a whole Osiris chunk, as big as the broker wrote
it, and the broker does not bound it by the negotiated `frame_max`, so the
limit is not the negotiated value: RabbitMQ 3.10.8 and 4.3.6 delivered a
chunk of 71 MB on connections that negotiated 1 MiB
(``tests/integration/test_big_chunks.py``, 2026-11-28). A chunk holds the
writes waiting for the broker's writer, up to 8,192 of them (a message or
a sub-entry batch each): 16 KiB messages published at full speed made
chunks of 67 MB on RabbitMQ 3.10.8 (measured, 2026-11-25), above the 64
MiB this limit was before, and rbfly could not read back a stream it had
written. The limit guards against an absurd size prefix only; the bytes of
a frame are buffered as they arrive, not allocated in advance.
"""

NO_LEADER = 0xFFFF
"""
Leader reference of stream metadata when the stream has no leader; the
broker writes ``-1`` into the ``uint16`` field.
"""

MAX_REFERENCE_LENGTH = 256
"""
Maximum length of a publisher or offset reference ("max 256 characters" in
PROTOCOL.adoc).
"""


class Key(IntEnum):
    """
    Command keys of the RabbitMQ Streams protocol, without the response bit.
    """

    DECLARE_PUBLISHER = 0x0001
    PUBLISH = 0x0002
    PUBLISH_CONFIRM = 0x0003
    PUBLISH_ERROR = 0x0004
    QUERY_PUBLISHER_SEQUENCE = 0x0005
    DELETE_PUBLISHER = 0x0006
    SUBSCRIBE = 0x0007
    DELIVER = 0x0008
    CREDIT = 0x0009
    STORE_OFFSET = 0x000A
    QUERY_OFFSET = 0x000B
    UNSUBSCRIBE = 0x000C
    CREATE = 0x000D
    DELETE = 0x000E
    METADATA = 0x000F
    METADATA_UPDATE = 0x0010
    PEER_PROPERTIES = 0x0011
    SASL_HANDSHAKE = 0x0012
    SASL_AUTHENTICATE = 0x0013
    TUNE = 0x0014
    OPEN = 0x0015
    CLOSE = 0x0016
    HEARTBEAT = 0x0017
    ROUTE = 0x0018
    PARTITIONS = 0x0019
    CONSUMER_UPDATE = 0x001A
    EXCHANGE_COMMAND_VERSIONS = 0x001B
    STREAM_STATS = 0x001C
    CREATE_SUPER_STREAM = 0x001D
    DELETE_SUPER_STREAM = 0x001E
    RESOLVE_OFFSET_SPEC = 0x001F


class OffsetSpecType(IntEnum):
    """
    Type of an offset specification on the wire (the spec's
    ``OffsetType``; named apart from the user API's
    :py:class:`rbfly.streams.OffsetType`, which has no ``NONE`` and adds
    ``REFERENCE``, resolved by the client).

    `NONE` is valid only in a `ConsumerUpdate` response, where the client
    lets the broker keep its own offset; `Subscribe` and
    `ResolveOffsetSpec` accept 1 to 5.
    """

    NONE = 0
    FIRST = 1
    LAST = 2
    NEXT = 3
    OFFSET = 4
    TIMESTAMP = 5


__all__ = [
    'DEFAULT_FRAME_MAX',
    'DEFAULT_HEARTBEAT',
    'DEFAULT_MAX_RECEIVED_FRAME_SIZE',
    'INITIAL_FRAME_MAX',
    'KEY_MASK',
    'MAX_REFERENCE_LENGTH',
    'NO_LEADER',
    'PRE_OPEN_FRAME_MAX',
    'RESPONSE_FLAG',
    'Key',
    'OffsetSpecType',
    'ResponseCode',
]
