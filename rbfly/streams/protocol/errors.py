"""
Errors raised by the RabbitMQ Streams protocol codec, and by a response
that does not answer its request.

Decoding errors use :py:class:`rbfly.error.FrameDecodeError`; this module
adds the encoding counterpart, so that a bad value given by an application
is reported by name before any byte reaches the broker.
"""

from ...error import FrameDecodeError, ProtocolError

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


class ForeignProtocol(FrameDecodeError):
    """
    The server answered the handshake in another protocol: the client was
    pointed at another port of RabbitMQ (AMQP 0-9-1 on 5672, the
    management plugin's HTTP on 15672) or at a TLS port without TLS.

    :ivar protocol: The protocol the server spoke (``'AMQP 0-9-1'``,
        ``'HTTP'``, ``'TLS'``...).
    """
    protocol: str

    def __init__(self, protocol: str, message: str) -> None:
        ProtocolError.__init__(self, message)
        self.offset = 0
        self.protocol = protocol

def foreign_protocol(head: bytes) -> ForeignProtocol | None:
    """
    The protocol of a server's first bytes, when they are not the stream
    protocol's but another well-known one's (as an error to raise).

    :param head: The first bytes the server sent (8 are enough).
    """
    if head.startswith(b'AMQP'):
        version = {
            b'\x00\x00\x09\x01': '0-9-1', b'\x00\x01\x00\x00': '1.0',
            b'\x03\x01\x00\x00': '1.0 (SASL)', b'\x02\x01\x00\x00': '1.0 (TLS)',
        }.get(head[4:8], '')
        protocol = 'AMQP {}'.format(version) if version else 'AMQP'
        return ForeignProtocol(protocol, (
            'this is an {} port (the server answered with the AMQP protocol header);'
            ' RabbitMQ Streams listens on port 5552 (the rabbitmq_stream plugin)'
        ).format(protocol))
    if head.startswith(b'HTTP'):
        return ForeignProtocol('HTTP', (
            'this is an HTTP server (e.g. the management plugin on port 15672), not'
            ' RabbitMQ Streams, which listens on port 5552 (the rabbitmq_stream plugin)'
        ))
    if len(head) >= 2 and head[0] == 0x15 and head[1] == 0x03:  # a TLS alert record
        return ForeignProtocol('TLS', (
            'this is a TLS port (the server answered with a TLS alert): use'
            ' rabbitmq-stream+tls://'
        ))
    return None
