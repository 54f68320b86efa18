"""
Errors raised by the RabbitMQ Streams protocol codec.

Decoding errors use :py:class:`rbfly.error.FrameDecodeError`; this module
adds the encoding counterpart, so that a bad value given by an application
is reported by name before any byte reaches the broker.
"""

from ...error import ProtocolError

class ProtocolEncodeError(ProtocolError, ValueError):
    """
    A command cannot be encoded into a RabbitMQ Streams frame.

    Raised when a field value is outside of its wire type, for example an
    integer outside of ``0 .. 2**16 - 1`` for a ``uint16`` field, or a
    string longer than 32767 bytes once encoded as UTF-8. The message names
    the command field. It derives from :py:class:`ValueError` as well, so
    that generic validation code can catch it.
    """


__all__ = ['ProtocolEncodeError']
