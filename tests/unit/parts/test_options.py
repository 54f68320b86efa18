"""
The client's options (:py:class:`~rbfly.streams.parts.options.ClientOptions`):
each check names its option, flags are coerced to bools, the record is
frozen, and the facade's signature is the options' own.
"""

from __future__ import annotations

import dataclasses as dtc
import inspect
import typing as tp

import pytest

from rbfly.streams import Backoff, StreamsClient, streams_client
from rbfly.streams.parts.options import (
    DEFAULT_BACKOFF,
    DEFAULT_REQUEST_TIMEOUT,
    ClientOptions,
)
from rbfly.streams.url import parse_uri
from rbfly.testing import client_options

INFO = parse_uri('rabbitmq-stream://guest:guest@localhost')

BAD_OPTIONS: dict[str, tuple[dict[str, tp.Any], type[Exception], str]] = {
    'credit 0': ({'credit': 0}, ValueError, 'credit'),
    'credit over 65535': ({'credit': 0x10000}, ValueError, 'credit'),
    'buffer_bytes 0': ({'buffer_bytes': 0}, ValueError, 'buffer_bytes'),
    'spin negative': ({'spin': -0.001}, ValueError, 'spin'),
    'spin over 1s': ({'spin': 1.5}, ValueError, 'spin'),
    'read_pause negative': ({'read_pause': -0.001}, ValueError, 'read_pause'),
    'read_pause over 0.1s': ({'read_pause': 0.2}, ValueError, 'read_pause'),
    'read_pause str': ({'read_pause': '1ms'}, ValueError, 'read_pause'),
    'request_timeout 0': ({'request_timeout': 0}, ValueError, 'request_timeout'),
    'request_timeout negative': ({'request_timeout': -1.0}, ValueError, 'request_timeout'),
    'publishers_per_connection 0': (
        {'publishers_per_connection': 0}, ValueError, 'publishers_per_connection',
    ),
    'publishers_per_connection 257': (
        {'publishers_per_connection': 257}, ValueError, 'publishers_per_connection',
    ),
    'publishers_per_connection bool': (
        {'publishers_per_connection': True}, ValueError, 'publishers_per_connection',
    ),
    'publishers_per_connection float': (
        {'publishers_per_connection': 2.0}, ValueError, 'publishers_per_connection',
    ),
    'subscriptions_per_connection 0': (
        {'subscriptions_per_connection': 0}, ValueError, 'subscriptions_per_connection',
    ),
    'subscriptions_per_connection str': (
        {'subscriptions_per_connection': '8'}, ValueError, 'subscriptions_per_connection',
    ),
    'connection_name not str': ({'connection_name': b'app'}, TypeError, 'connection_name'),
    'on_connection not callable': ({'on_connection': 'log'}, TypeError, 'on_connection'),
    'address_resolver not callable': (
        {'address_resolver': {'a': 'b'}}, TypeError, 'address_resolver',
    ),
    'sasl_mechanism unknown': ({'sasl_mechanism': 'GSSAPI'}, ValueError, 'sasl_mechanism'),
    'sasl_mechanism lower case': ({'sasl_mechanism': 'plain'}, ValueError, 'sasl_mechanism'),
    'reconnect not Backoff': ({'reconnect': 1.0}, TypeError, 'reconnect'),
    'oauth2 not callable': ({'oauth2': 'token'}, TypeError, 'oauth2'),
    'frame_max negative': ({'frame_max': -1}, ValueError, 'frame_max'),
    'frame_max beyond u32': ({'frame_max': 2 ** 32}, ValueError, 'frame_max'),
    'heartbeat str': ({'heartbeat': '60'}, ValueError, 'heartbeat'),
    'connect_timeout zero': ({'connect_timeout': 0}, ValueError, 'connect_timeout'),
    'token_refresh 0': ({'token_refresh': 0}, ValueError, 'token_refresh'),
    'token_refresh 1': ({'token_refresh': 1.0}, ValueError, 'token_refresh'),
    'token_refresh bool': ({'token_refresh': True}, ValueError, 'token_refresh'),
}

@pytest.mark.parametrize(('kw', 'error', 'name'), BAD_OPTIONS.values(), ids=BAD_OPTIONS.keys())
def test_bad_option(kw: dict[str, tp.Any], error: type[Exception], name: str) -> None:
    """An option out of range or of the wrong type is refused, and named."""
    with pytest.raises(error, match=name) as info:
        ClientOptions(**kw)
    assert type(info.value) is error

@pytest.mark.parametrize(('kw', 'error', 'name'), BAD_OPTIONS.values(), ids=BAD_OPTIONS.keys())
def test_bad_option_through_facade(
        kw: dict[str, tp.Any], error: type[Exception], name: str,
) -> None:
    """The facade refuses the same options, with the same error."""
    with pytest.raises(error, match=name):
        StreamsClient(INFO, **kw)

GOOD_OPTIONS: dict[str, dict[str, tp.Any]] = {
    'credit bounds': {'credit': 1},
    'credit top': {'credit': 0xffff},
    'spin 0': {'spin': 0},
    'spin 1': {'spin': 1},
    'read_pause 0': {'read_pause': 0},
    'no request timeout': {'request_timeout': None},
    'one per connection': {'publishers_per_connection': 1, 'subscriptions_per_connection': 1},
    'protocol limit': {'publishers_per_connection': 256, 'subscriptions_per_connection': 256},
    'every mechanism': {'sasl_mechanism': 'ANONYMOUS'},
    'callables': {'on_connection': print, 'address_resolver': lambda h, p: (h, p)},
    'connection name': {'connection_name': 'app'},
    'reconnect': {'reconnect': Backoff(attempts=3)},
}

@pytest.mark.parametrize('kw', GOOD_OPTIONS.values(), ids=GOOD_OPTIONS.keys())
def test_good_options(kw: dict[str, tp.Any]) -> None:
    options = ClientOptions(**kw)
    for name, value in kw.items():
        assert getattr(options, name) is value

def test_defaults() -> None:
    options = ClientOptions()
    assert options.reconnect is DEFAULT_BACKOFF
    assert options.request_timeout == DEFAULT_REQUEST_TIMEOUT
    assert (options.crc_check, options.replicas_only, options.publishers_on_leader) \
        == (True, False, False)
    assert options.per_connection('publishers') == 256
    assert options.per_connection('subscriptions') == 256

@pytest.mark.parametrize('flag', ['crc_check', 'replicas_only', 'publishers_on_leader'])
@pytest.mark.parametrize(('value', 'expected'), [(0, False), (1, True), ('', False), ([1], True)])
def test_flags_coerced(flag: str, value: object, expected: bool) -> None:
    options = ClientOptions(**{flag: value})  # type: ignore[arg-type]
    assert getattr(options, flag) is expected

def test_frozen() -> None:
    options = ClientOptions()
    with pytest.raises(dtc.FrozenInstanceError):
        options.credit = 5  # type: ignore[misc]
    assert options.credit == ClientOptions().credit

def test_request_deadline() -> None:
    assert ClientOptions(request_timeout=None).request_deadline == DEFAULT_REQUEST_TIMEOUT
    assert ClientOptions(request_timeout=2.5).request_deadline == 2.5

def test_per_connection() -> None:
    options = ClientOptions(publishers_per_connection=3, subscriptions_per_connection=7)
    assert options.per_connection('publishers') == 3
    assert options.per_connection('subscriptions') == 7

def test_unknown_option() -> None:
    """The facade takes only the options: an unknown one is a TypeError naming it."""
    kw: dict[str, tp.Any] = {'no_such_option': 1}
    with pytest.raises(TypeError, match='StreamsClient') as info:
        StreamsClient(INFO, **kw)
    assert 'no_such_option' in str(info.value)
    with pytest.raises(TypeError, match='no_such_option'):
        streams_client('rabbitmq-stream://localhost', **kw)

def test_facade_signature() -> None:
    """
    The facade's keyword arguments are the options, by name and default;
    nothing else but the brokers.
    """
    params = inspect.signature(StreamsClient.__init__).parameters
    fields = dtc.fields(ClientOptions)
    assert list(params)[:2] == ['self', 'connection_info']
    assert [p for p in params if p not in ('self', 'connection_info')] \
        == [f.name for f in fields]
    for f in fields:
        param = params[f.name]
        assert param.kind is inspect.Parameter.KEYWORD_ONLY, f.name
        assert param.default == f.default, f.name
        if f.default is not None and not isinstance(f.default, bool | int | float):
            assert param.default is f.default, f.name

def test_facade_builds_options() -> None:
    """The facade's options are those given, checked once."""
    resolver = lambda h, p: (h, p + 1)
    client = StreamsClient(
        INFO, credit=4, replicas_only=1,  # type: ignore[arg-type]
        address_resolver=resolver, reconnect=Backoff(attempts=2),
    )
    options = client_options(client)
    assert (options.credit, options.replicas_only) == (4, True)
    assert options.address_resolver is resolver
    assert options.reconnect == Backoff(attempts=2)

def test_no_busy_waiting_by_default() -> None:
    """Polling for chunks and confirmations (``spin``) is opt-in: it keeps a core busy."""
    assert ClientOptions().spin == 0
    assert client_options(streams_client('rabbitmq-stream://localhost')).spin == 0
    assert client_options(streams_client('rabbitmq-stream://localhost', spin=0.0005)).spin == 0.0005
