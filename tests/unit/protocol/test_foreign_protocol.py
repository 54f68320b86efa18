"""
A server that answers the handshake in another protocol (another port of
RabbitMQ, or TLS) is named, not reported as a malformed frame.
"""

import pytest

from rbfly.error import FrameDecodeError
from rbfly.streams.protocol.connection import ConnectionCore
from rbfly.streams.protocol.errors import ForeignProtocol

def started() -> ConnectionCore:
    core = ConnectionCore()
    core.start(0.0)
    core.data_to_send()
    return core

@pytest.mark.parametrize('head, protocol, text', [
    (b'AMQP\x00\x00\x09\x01', 'AMQP 0-9-1', 'AMQP 0-9-1 port'),
    (b'AMQP\x00\x01\x00\x00', 'AMQP 1.0', 'AMQP 1.0 port'),
    (b'HTTP/1.1 400 Bad Request\r\n\r\n', 'HTTP', 'HTTP server'),
    (b'\x15\x03\x03\x00\x02\x02\x46', 'TLS', 'rabbitmq-stream+tls://'),
])
@pytest.mark.parametrize('whole', [True, False])
def test_named(head: bytes, protocol: str, text: str, whole: bool) -> None:
    """Whole, or a byte at a time, the server's protocol is named."""
    core = started()
    with pytest.raises(ForeignProtocol) as info:
        if whole:
            core.receive_data(head, 0.0)
        else:
            for i in range(len(head)):
                core.receive_data(head[i:i + 1], 0.0)
    # (a byte at a time, the error comes at the 4th: the AMQP version is unknown)
    assert info.value.protocol == (protocol if whole else protocol.split(maxsplit=1)[0])
    if whole:
        assert text in str(info.value)
    assert isinstance(info.value, FrameDecodeError)  # what was raised before
    if protocol.startswith('AMQP'):
        assert 'listens on port 5552' in str(info.value)

def test_other_bytes_stay_a_frame_error() -> None:
    """Bytes of no known protocol raise the frame error."""
    with pytest.raises(FrameDecodeError) as info:
        started().receive_data(b'\x7f\xff\xff\xff', 0.0)
    assert not isinstance(info.value, ForeignProtocol)
