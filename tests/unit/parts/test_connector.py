"""
The node a connection is open to, from the broker's Open response.
"""

import types
import typing as tp

import pytest

from rbfly.streams.aio.connection import StreamsProtocol
from rbfly.streams.parts.connector import node_of

def protocol(properties: dict[str, str]) -> StreamsProtocol:
    return tp.cast(StreamsProtocol, types.SimpleNamespace(connection_properties=properties))


@pytest.mark.parametrize(('properties', 'node'), [
    ({'advertised_host': 'h', 'advertised_port': '5552'}, ('h', 5552)),
    ({'advertised_host': 'h'}, None),
    ({'advertised_port': '5552'}, None),
    ({'advertised_host': 'h', 'advertised_port': 'x'}, None),
    # digits int() does not take: a superscript, more than 4,300 of them
    ({'advertised_host': 'h', 'advertised_port': '\u00b2'}, None),
    ({'advertised_host': 'h', 'advertised_port': '9' * 5000}, None),
])
def test_node_of(properties: dict[str, str], node: tuple[str, int] | None) -> None:
    """A port the broker advertises that is not a number names no node."""
    assert node_of(protocol(properties)) == node
