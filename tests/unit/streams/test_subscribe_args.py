"""
The options of the subscribe methods are declared once, as the TypedDict
:py:class:`~rbfly.streams.consuming.SubscribeArgs` unpacked into their
keyword arguments: every method takes the options RbFly took before, with
the same defaults, refuses a misspelt one at the call (naming the closest),
and mypy --strict checks the names and types as for spelt-out keywords.
"""

from __future__ import annotations

import dataclasses as dtc
import inspect
import typing as tp
from collections.abc import AsyncGenerator
from pathlib import Path

import pytest

from rbfly.streams import Offset, StreamsClient, streams_client
from rbfly.streams.consuming import SUBSCRIBE_NAMES, SubscribeArgs, subscribe_options
from rbfly.streams.parts.subscribing import SubscribeOptions
from rbfly.streams.serializers import JSONSerializer
from rbfly.streams.subscriptions._bodies import Bodies
from rbfly.streams.subscriptions.chunks import Chunks
from rbfly.streams.subscriptions.decoded import Decoded
from rbfly.streams.subscriptions.windows import Windows

from .._mypy import mypy_errors

OPTIONS = {
    'offset': Offset.NEXT, 'filter': None, 'timeout': 0, 'amqp': True, 'name': None,
    'single_active': False, 'consumer_update': None, 'store_every': 0, 'store_interval': 5,
    'credit': None, 'buffer_bytes': None, 'resume': None, 'on_state': None, 'flow': None,
    'stop_at_end': False, 'on_decode_error': 'raise', 'on_gap': 'warn',
    'processing_timeout': None,
}
"""The options every subscribe method takes, with their defaults."""

DECODE = {'serializer', 'on_mismatch'}
WINDOW = {'max_messages', 'max_wait'}
METHODS = {
    'subscribe': DECODE, 'subscribe_windows': DECODE | WINDOW, 'subscribe_chunks': set(),
    'subscribe_super_stream': DECODE, 'subscribe_super_stream_windows': DECODE | WINDOW,
    'subscribe_super_stream_chunks': set(),
}
"""The options of each method beside the shared ones."""

@pytest.fixture
def client() -> StreamsClient:
    return streams_client('rabbitmq-stream://guest:guest@localhost')

def test_names_are_the_record_fields() -> None:
    """The TypedDict names the fields of the record the subscriptions part reads."""
    assert set(SubscribeArgs.__annotations__) == SUBSCRIBE_NAMES
    assert SUBSCRIBE_NAMES == {f.name for f in dtc.fields(SubscribeOptions)} == set(OPTIONS)

def test_defaults() -> None:
    """An option not given has the default it had as a keyword argument."""
    options = subscribe_options('subscribe', {})
    assert {f.name: getattr(options, f.name) for f in dtc.fields(options)} == OPTIONS

@pytest.mark.parametrize('method', sorted(METHODS))
def test_signature(method: str) -> None:
    """Each method takes the stream (by position or keyword) and its options by keyword."""
    params = inspect.signature(getattr(StreamsClient, method)).parameters
    first = list(params.values())[1]
    assert first.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    keywords = {p.name for p in params.values() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert keywords == METHODS[method]
    assert params['options'].kind is inspect.Parameter.VAR_KEYWORD

@pytest.mark.parametrize('method', sorted(METHODS))
def test_options_taken(method: str, client: StreamsClient) -> None:
    """Every option is taken by name (nothing subscribes before iteration)."""
    kw: dict[str, tp.Any] = {'offset': Offset.FIRST, 'name': 'group', 'store_every': 10,
                             'timeout': 1.5, 'stop_at_end': True, 'on_decode_error': 'skip'}
    result = getattr(client, method)('stream', **kw)
    if method.endswith('_chunks'):
        assert isinstance(result, Chunks) and isinstance(result, AsyncGenerator)
    elif method.endswith('_windows'):
        assert isinstance(result, Windows)
    else:
        assert isinstance(result, Bodies)

def test_stream_by_keyword(client: StreamsClient) -> None:
    assert isinstance(client.subscribe(stream='s', offset=Offset.FIRST), Bodies)
    assert isinstance(client.subscribe('s', serializer=JSONSerializer()), Decoded)

@pytest.mark.parametrize('method', sorted(METHODS))
def test_misspelt_option(method: str, client: StreamsClient) -> None:
    kw: dict[str, tp.Any] = {'ofset': Offset.FIRST}
    message = (r"^StreamsClient\.{}\(\) got an unexpected keyword argument 'ofset'; "
               r"did you mean 'offset'\?$").format(method)
    with pytest.raises(TypeError, match=message):
        getattr(client, method)('stream', **kw)

def test_option_of_another_method(client: StreamsClient) -> None:
    """A chunk subscription has no serializer, nor a message iterator a window."""
    kw: dict[str, tp.Any] = {'serializer': JSONSerializer()}
    with pytest.raises(TypeError, match=r"subscribe_chunks\(\) got an unexpected keyword argument"):
        client.subscribe_chunks('stream', **kw)
    with pytest.raises(TypeError, match='max_messages'):
        client.subscribe('stream', max_messages=10)  # type: ignore[call-overload]

def test_by_position_refused(client: StreamsClient) -> None:
    """The options stay keyword-only, as before."""
    method: tp.Any = client.subscribe_chunks
    with pytest.raises(TypeError, match='positional'):
        method('stream', Offset.FIRST)

SNIPPET = '''
from rbfly.streams import Offset, streams_client
from rbfly.streams.serializers import JSONSerializer
from rbfly.streams.subscriptions._bodies import Bodies
from rbfly.streams.subscriptions.decoded import Decoded

client = streams_client('rabbitmq-stream://localhost')
bodies: Bodies = client.subscribe('s', offset=Offset.FIRST, name='n', store_every=10)
objects: Decoded = client.subscribe('s', serializer=JSONSerializer(), on_decode_error='skip')
windows = client.subscribe_super_stream_windows('s', max_messages=10, credit=4)
bad = client.subscribe_chunks('s', ofset=Offset.FIRST)
wrong = client.subscribe_windows('s', store_every='10')
'''

def test_mypy_checks_options(tmp_path: Path) -> None:
    """mypy --strict refuses a misspelt option and a wrongly typed one, and only those."""
    errors = mypy_errors(tmp_path, SNIPPET)
    assert len(errors) == 2, errors
    assert 'snippet.py:11: error: Unexpected keyword argument "ofset"' in errors[0]
    assert 'snippet.py:12: error:' in errors[1] and '"store_every"' in errors[1]
