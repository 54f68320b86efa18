"""
Encoder and decoder of RabbitMQ Streams commands.

Frame structure, quoted from PROTOCOL.adoc::

    Frame => Size (Request | Response | Command)
      Size => uint32 (size without the 4 bytes of the size element)
    Request => Key Version (CorrelationId) Content
    Response => Key Version CorrelationId ResponseCode
    Command => Key Version Content

:py:func:`encode` returns a whole frame, size prefix included, ready to be
written to a socket. :py:func:`decode` takes one frame without its size
prefix, as split by :py:class:`~rbfly.streams.protocol.frames.FrameReader`.
Decoding covers every command, requests included, so that tests and a fake
broker can read what a client sends.

The grammar of each command is quoted in
:py:mod:`~rbfly.streams.protocol.request_codec` and
:py:mod:`~rbfly.streams.protocol.response_codec`.
"""

from dataclasses import dataclass

from ...error import FrameDecodeError
from .commands import Command, CommandBase, Request
from .constants import KEY_MASK, RESPONSE_FLAG, Key
from .errors import ProtocolEncodeError
from .reader import Reader
from .request_codec import TABLE as REQUESTS
from .response_codec import TABLE as RESPONSES
from .tables import Decoder, EncodeBody
from .writer import Writer

_ENCODERS: dict[type[CommandBase], tuple[bool, EncodeBody]] = {
    cls: (correlated, enc) for cls, correlated, enc, _ in REQUESTS + RESPONSES
}
_DECODERS: dict[tuple[int, int], tuple[str, Decoder]] = {
    (cls.KEY, cls.VERSION): (cls.__name__, dec) for cls, _, _, dec in REQUESTS + RESPONSES
}
_KEYS: dict[int, str] = {}
for (_key, _version), (_name, _decoder) in _DECODERS.items():
    _KEYS.setdefault(_key, _name)  # version 1 class names the key, e.g. Publish


@dataclass(frozen=True, slots=True)
class DecodedFrame:
    """
    Decoded command with the correlation id of its frame.

    :param command: Decoded command.
    :param correlation_id: Correlation id of a request or of a response;
        `None` for a command without one (e.g. `Deliver`, `Tune`,
        `CreditResponse`). A response also has it in its
        `correlation_id` field.
    """

    command: Command
    correlation_id: int | None


def encode(command: Command | Request[CommandBase], correlation_id: int | None = None) -> bytes:
    """
    Encode a command into a frame, including its `uint32` size prefix.

    :param command: Command to encode; every request class (a
        `Request`, as
        :py:meth:`~rbfly.streams.protocol.connection.ConnectionCore.request`
        takes it) is in the `Command` union too.
    :param correlation_id: Correlation id of a request; it must be given
        for a request and must not be given for any other command
        (responses carry their own), so that a missing or misplaced id is
        caught before it reaches the broker.
    :raises ProtocolEncodeError: If the command is not a command class, the
        correlation id does not fit the command, or a field value does not
        fit its wire type.
    """
    cls = type(command)
    entry = _ENCODERS.get(cls)
    if entry is None:
        raise ProtocolEncodeError(f'not a RabbitMQ Streams command: {cls!r}')
    correlated, body = entry
    name = cls.__name__
    if correlated and correlation_id is None:
        raise ProtocolEncodeError(f'{name} needs a correlation id')
    if not correlated and correlation_id is not None:
        raise ProtocolEncodeError(f'{name} takes no correlation id argument')

    w = Writer()
    w.u16(command.KEY, 'key')
    w.u16(command.VERSION, 'version')
    if correlation_id is not None:
        w.u32(correlation_id, name + ' correlation id')
    try:
        body(w, command)
    except ProtocolEncodeError:
        raise
    except (TypeError, ValueError, AttributeError) as ex:
        # a field of the wrong shape, e.g. a publish message given as bytes
        # instead of a (publishing id, bytes) pair
        raise ProtocolEncodeError(f'cannot encode {name}: {ex}') from ex
    return w.frame()


def decode_frame(frame: bytes | bytearray | memoryview) -> DecodedFrame:
    """
    Decode a frame, without its size prefix, into a command and its
    correlation id.

    Fields of variable size (`Deliver` chunks, `Publish` messages) are
    views of `frame`, not copies; keep `frame` unchanged while they are
    used.

    :param frame: Frame starting with its key and version.
    :raises FrameDecodeError: If the key or the version is not known, a
        field is truncated or invalid, or bytes are left after the last
        field.
    """
    r = Reader(frame)
    key = r.u16('key')
    version = r.u16('version')
    entry = _DECODERS.get((key, version))
    if entry is None:
        raise r.error(_unknown(key, version), 0)
    name, decoder = entry
    command, correlation_id = decoder(r)
    r.expect_end(name)
    return DecodedFrame(command, correlation_id)


def decode(frame: bytes | bytearray | memoryview) -> Command:
    """
    Decode a frame, without its size prefix, into a command.

    Use :py:func:`decode_frame` to get the correlation id of a request as
    well, e.g. to answer `ConsumerUpdate` or `Close` sent by the broker.

    :raises FrameDecodeError: See :py:func:`decode_frame`.
    """
    return decode_frame(frame).command


def _unknown(key: int, version: int) -> str:
    name = _KEYS.get(key)
    if name is not None:
        return f'unsupported version {version} of {name} (key 0x{key:04x})'
    try:
        label = Key(key & KEY_MASK).name
    except ValueError:
        return f'unknown command key 0x{key:04x}'
    kind = 'response' if key & RESPONSE_FLAG else 'request'
    return f'unknown command key 0x{key:04x} ({label} has no {kind})'


__all__ = ['DecodedFrame', 'FrameDecodeError', 'decode', 'decode_frame', 'encode']
