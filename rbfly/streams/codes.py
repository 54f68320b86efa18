"""
Response codes of the RabbitMQ Streams protocol: vocabulary shared by the
sans-IO core (:py:mod:`rbfly.streams.protocol`, which re-exports it) and
the errors (:py:mod:`rbfly.streams.error`).

It lives below both, importing nothing, so that importing the errors does
not load the protocol's codec (17 modules before, 5 now).
"""

from enum import IntEnum

class ResponseCode(IntEnum):
    """
    Response codes of the RabbitMQ Streams protocol.

    Codes 0x14 and 0x15 are defined by the broker (``rabbit_stream.hrl``,
    RabbitMQ 3.13.0) but are missing from the table of PROTOCOL.adoc; the
    broker sends them when a secret update changes the SASL mechanism or the
    user name.
    """

    OK = 0x01
    STREAM_DOES_NOT_EXIST = 0x02
    SUBSCRIPTION_ID_ALREADY_EXISTS = 0x03
    SUBSCRIPTION_ID_DOES_NOT_EXIST = 0x04
    STREAM_ALREADY_EXISTS = 0x05
    STREAM_NOT_AVAILABLE = 0x06
    SASL_MECHANISM_NOT_SUPPORTED = 0x07
    AUTHENTICATION_FAILURE = 0x08
    SASL_ERROR = 0x09
    SASL_CHALLENGE = 0x0A
    SASL_AUTHENTICATION_FAILURE_LOOPBACK = 0x0B
    VIRTUAL_HOST_ACCESS_FAILURE = 0x0C
    UNKNOWN_FRAME = 0x0D
    FRAME_TOO_LARGE = 0x0E
    INTERNAL_ERROR = 0x0F
    ACCESS_REFUSED = 0x10
    PRECONDITION_FAILED = 0x11
    PUBLISHER_DOES_NOT_EXIST = 0x12
    NO_OFFSET = 0x13
    SASL_CANNOT_CHANGE_MECHANISM = 0x14
    SASL_CANNOT_CHANGE_USERNAME = 0x15

__all__ = ['ResponseCode']
