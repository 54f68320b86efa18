"""
Errors raised by the RabbitMQ Streams protocol codec, and by a response
that does not answer its request.

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


class UnexpectedResponse(ProtocolError):
    """
    The broker answered a request with a response of another class (e.g.
    a `DeleteResponse` under the correlation id of a `Create`): it is not
    the request's answer, and none of its fields is read.

    :ivar request: Class of the request.
    :ivar expected: Class of the request's response.
    :ivar received: Class of what came.
    :ivar context: What the request was about (may be empty).
    """

    def __init__(self, request: type, expected: type, received: type, context: str = '') -> None:
        super().__init__('the broker answered {} with {}, not {}{}'.format(
            request.__name__, received.__name__, expected.__name__,
            ' ({})'.format(context) if context else '',
        ))
        self.request = request
        self.expected = expected
        self.received = received
        self.context = context


__all__ = ['ProtocolEncodeError', 'UnexpectedResponse']
