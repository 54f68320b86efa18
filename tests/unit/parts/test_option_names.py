"""
The options of ``streams_client()`` are typed (a TypedDict unpacked into
its keyword arguments) and checked by name at run time: a misspelt option
fails ``mypy --strict`` and raises a TypeError naming the closest one.
"""

import dataclasses
import inspect
import typing as tp
from pathlib import Path

import pytest

from rbfly.streams import StreamsClient, streams_client
from rbfly.streams.parts.options import OPTION_NAMES, ClientOptionArgs, ClientOptions

from .._mypy import mypy_errors

def test_typed_options_are_the_options() -> None:
    """The TypedDict, the record and the facade's keywords name the same options."""
    fields = {f.name for f in dataclasses.fields(ClientOptions)}
    assert set(ClientOptionArgs.__annotations__) == fields == OPTION_NAMES
    keywords = {
        p.name for p in inspect.signature(StreamsClient).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    assert keywords == fields

@pytest.mark.parametrize('name, suggested', [
    ('heartbet', 'heartbeat'), ('conect_timeout', 'connect_timeout'), ('credits', 'credit'),
])
def test_misspelt_option(name: str, suggested: str) -> None:
    kw: dict[str, tp.Any] = {name: 10}
    with pytest.raises(TypeError, match="unknown option '{}'; did you mean '{}'".format(
            name, suggested)):
        streams_client('rabbitmq-stream://localhost', **kw)

def test_unknown_option_without_close_name() -> None:
    kw: dict[str, tp.Any] = {'zzzzzzzz': 1}
    with pytest.raises(TypeError, match=r"unknown option 'zzzzzzzz' \(the options are those of"):
        streams_client('rabbitmq-stream://localhost', **kw)

SNIPPET = '''
from rbfly.streams import streams_client

client = streams_client('rabbitmq-stream://localhost', heartbeat=10, crc_failure='skip')
bad = streams_client('rabbitmq-stream://localhost', heartbet=10)
wrong = streams_client('rabbitmq-stream://localhost', heartbeat='10')
'''

def test_mypy_finds_misspelt_option(tmp_path: Path) -> None:
    """mypy --strict refuses a misspelt option and a wrongly typed one, and only those."""
    errors = mypy_errors(tmp_path, SNIPPET)
    assert len(errors) == 2, errors
    assert 'snippet.py:5: error: Unexpected keyword argument "heartbet"' in errors[0]
    assert 'snippet.py:6: error:' in errors[1] and '"heartbeat"' in errors[1]
