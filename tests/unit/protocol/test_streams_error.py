"""
Tests of the exceptions of broker response codes.
"""

import pytest

from rbfly.error import RbFlyError
from rbfly.streams import error
from rbfly.streams.error import (
    AuthenticationError,
    AuthenticationFailure,
    NoOffset,
    ResponseError,
    StreamDoesNotExist,
    StreamsError,
    error_for_code,
)
from rbfly.streams.protocol import ResponseCode

ERRORS = {
    0x02: 'StreamDoesNotExist',
    0x03: 'SubscriptionIdAlreadyExists',
    0x04: 'SubscriptionIdDoesNotExist',
    0x05: 'StreamAlreadyExists',
    0x06: 'StreamNotAvailable',
    0x07: 'SaslMechanismNotSupported',
    0x08: 'AuthenticationFailure',
    0x09: 'SaslError',
    0x0A: 'SaslChallenge',
    0x0B: 'SaslAuthenticationFailureLoopback',
    0x0C: 'VirtualHostAccessFailure',
    0x0D: 'UnknownFrame',
    0x0E: 'FrameTooLarge',
    0x0F: 'InternalError',
    0x10: 'AccessRefused',
    0x11: 'PreconditionFailed',
    0x12: 'PublisherDoesNotExist',
    0x13: 'NoOffset',
    0x14: 'SaslCannotChangeMechanism',
    0x15: 'SaslCannotChangeUsername',
}
AUTH = {0x07, 0x08, 0x09, 0x0A, 0x0B, 0x14, 0x15}


def test_every_code_has_a_class() -> None:
    """Test that every response code other than OK has its class."""
    assert set(ERRORS) == {c.value for c in ResponseCode} - {ResponseCode.OK}


@pytest.mark.parametrize(('code', 'name'), sorted(ERRORS.items()))
def test_error_for_code(code: int, name: str) -> None:
    """Test the exception of each known code."""
    ex = error_for_code(code, "stream 'orders'")
    cls = getattr(error, name)
    assert type(ex) is cls
    assert ex.code == code
    assert cls.code == code
    assert ex.context == "stream 'orders'"
    assert str(ex).endswith(f"(response code 0x{code:02x}): stream 'orders'")
    assert isinstance(ex, ResponseError)
    assert isinstance(ex, StreamsError)
    assert isinstance(ex, RbFlyError)
    assert isinstance(ex, AuthenticationError) == (code in AUTH)
    assert name in error.__all__


def test_unknown_code() -> None:
    """Test that an unknown code maps to a generic error naming it."""
    ex = error_for_code(0x63)
    assert type(ex) is ResponseError
    assert ex.code == 0x63
    assert str(ex) == 'Unknown response code (response code 0x63)'


def test_ok_is_not_an_error() -> None:
    """Test that response code OK has no exception."""
    with pytest.raises(ValueError, match='OK is not an error'):
        error_for_code(ResponseCode.OK)


def test_raise_directly() -> None:
    """Test raising an error class with a context only."""
    with pytest.raises(StreamDoesNotExist, match=r'Stream does not exist \(response code 0x02\)'):
        raise StreamDoesNotExist()
    with pytest.raises(NoOffset, match='reference r1'):
        raise NoOffset('reference r1')


def test_message_has_no_credentials() -> None:
    """Test that an authentication error says nothing beyond its context."""
    ex = error_for_code(ResponseCode.AUTHENTICATION_FAILURE, "virtual host '/'")
    assert isinstance(ex, AuthenticationFailure)
    assert str(ex) == "Authentication failure (response code 0x08): virtual host '/'"
