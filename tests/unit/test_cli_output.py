"""
How ``rbfly tail`` prints bodies: decoded by their content type (JSON,
MessagePack when the package is installed), else as they are.
"""

import sys

import msgpack
import pytest

from rbfly.amqp import AMQPProperties, MessageCtx
from rbfly.cli.output import BodyDecoder, message_json, message_text
from rbfly.types import Symbol

def typed(body: object, content_type: str | None, offset: int = 7) -> MessageCtx:
    properties = AMQPProperties(content_type=None if content_type is None else Symbol(content_type))
    return MessageCtx(body, properties=properties, stream_offset=offset)  # type: ignore[arg-type]

@pytest.mark.parametrize('body, content_type, expected', [
    (b'{"a": [1, 2]}', 'application/json', {'a': [1, 2]}),
    (b'"x"', 'application/json; charset=utf-8', 'x'),
    (b'{"n": 1}', 'application/vnd.order+json', {'n': 1}),
    (msgpack.packb({'m': 1}), 'application/msgpack', {'m': 1}),
    (msgpack.packb([1]), 'application/x-msgpack', [1]),
    (b'a,1', 'text/csv', b'a,1'),  # printed as text
    (b'{"a": 1}', None, b'{"a": 1}'),  # no content type: as it is
    ({'amqp': 'map'}, 'application/json', {'amqp': 'map'}),  # not a data section
])
def test_decoded(body: object, content_type: str | None, expected: object) -> None:
    notes: list[str] = []
    assert BodyDecoder(notes.append)(typed(body, content_type)) == expected
    assert notes == []

def test_string_content_type() -> None:
    """A content type sent as a string (another client), not a symbol."""
    msg = MessageCtx(b'[1]', properties=AMQPProperties(content_type='application/json'))  # type: ignore[arg-type]
    assert BodyDecoder(print)(msg) == [1]

@pytest.mark.parametrize('body, content_type', [
    (b'{"broken": ', 'application/json'),
    (b'\xff', 'application/json'),
    (b'\xc1', 'application/msgpack'),
])
def test_not_what_it_says(body: bytes, content_type: str) -> None:
    """A body that does not decode: as it is, and a note naming its offset."""
    notes: list[str] = []
    assert BodyDecoder(notes.append)(typed(body, content_type, 12)) == body
    [note] = notes
    assert note.startswith('message at offset 12: body not {} ('.format(content_type))
    assert note.endswith('): printed as it is')

def test_msgpack_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without msgpack, MessagePack bodies as they are, and one note."""
    monkeypatch.setitem(sys.modules, 'msgpack', None)
    notes: list[str] = []
    decode = BodyDecoder(notes.append)
    data = b'\x81\xa1m\x01'
    assert [decode(typed(data, 'application/msgpack')) for _ in range(3)] == [data] * 3
    assert notes == ['msgpack is not installed: MessagePack bodies printed as they are'
                     ' (pip install msgpack)']

def test_printed() -> None:
    """The decoded body is printed in place of the message's."""
    msg = typed(b'{"a": 1}', 'application/json')
    body = BodyDecoder(print)(msg)
    assert message_text(msg, body) == '{"a": 1}'
    assert message_text(msg) == '{"a": 1}'  # the bytes as UTF-8
    assert '"body": {"a": 1}' in message_json(msg, body)
    assert '"body": "{\\"a\\": 1}"' in message_json(msg)
