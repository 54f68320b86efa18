"""How messages and stream facts are printed: text for people, JSON lines for programs."""

from __future__ import annotations

import base64
import datetime as dt
import json
import sys
import typing as tp
from collections.abc import Callable

from ..amqp import MessageCtx
from ..streams.parts.groups import BEFORE_FIRST

def jsonable(value: object) -> object:
    """A value JSON can hold: bytes as text when UTF-8, else ``{"base64": ...}``."""
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        try:
            return data.decode('utf-8')
        except UnicodeDecodeError:
            return {'base64': base64.b64encode(data).decode('ascii')}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)

JSON_TYPES = ('application/json',)
"""Content types of JSON bodies (and any ``application/...+json``)."""

MSGPACK_TYPES = ('application/msgpack', 'application/x-msgpack', 'application/vnd.msgpack')
"""Content types of MessagePack bodies."""

class BodyDecoder:
    """
    The body of a message as ``tail`` prints it: a data section of
    content type ``application/json`` (or ``...+json``) decoded as JSON, of
    ``application/msgpack`` decoded with the ``msgpack`` package when it is
    installed (what :py:class:`~rbfly.streams.serializers.JSONSerializer`
    and :py:class:`~rbfly.streams.serializers.MsgpackSerializer` publish);
    any other body as it is.

    A body that does not decode is printed as it is, and a note on stderr
    names its offset; so is a MessagePack body without the package (one
    note).

    :param note: Prints a note (on stderr).
    """
    def __init__(self, note: Callable[[str], None]) -> None:
        self._note = note
        self._json = json.JSONDecoder()
        self._msgpack: Callable[[bytes], object] | None = None
        self._msgpack_missing = False

    def __call__(self, msg: MessageCtx) -> object:
        body = msg.body
        content_type = msg.properties.content_type
        if content_type is None or not isinstance(body, bytes | bytearray | memoryview):
            return body
        name = str(getattr(content_type, 'name', content_type))
        base = name.split(';', 1)[0].strip().lower()
        decode: Callable[[bytes], object] | None = None
        if base in JSON_TYPES or (base.startswith('application/') and base.endswith('+json')):
            decode = self._decode_json
        elif base in MSGPACK_TYPES:
            decode = self._unpack()
        if decode is None:
            return body
        try:
            return decode(bytes(body))
        except (ValueError, TypeError) as ex:  # not what its content type says
            self._note('message at offset {}: body not {} ({}): printed as it is'.format(
                msg.stream_offset, base, str(ex) or type(ex).__name__))
            return body

    def _decode_json(self, data: bytes) -> object:
        return self._json.decode(data.decode('utf-8'))

    def _unpack(self) -> Callable[[bytes], object] | None:
        if self._msgpack is None and not self._msgpack_missing:
            try:
                import msgpack  # type: ignore[import-untyped, unused-ignore]
            except ImportError:
                self._msgpack_missing = True
                self._note('msgpack is not installed: MessagePack bodies printed as they are'
                           ' (pip install msgpack)')
            else:
                self._msgpack = msgpack.unpackb
        return self._msgpack

_BODY: tp.Final = object()

def message_json(msg: MessageCtx, body: object = _BODY) -> str:
    """
    A message as one JSON line: offset, timestamp, body, its sections.

    :param body: The body to print (by default the message's).
    """
    record: dict[str, object] = {
        'offset': msg.stream_offset,
        'timestamp': dt.datetime.fromtimestamp(msg.stream_timestamp, dt.UTC).isoformat(),
        'body': jsonable(msg.body if body is _BODY else body),
    }
    properties = {
        k: v for k, v in (
            (name, getattr(msg.properties, name)) for name in (
                'message_id', 'user_id', 'to', 'subject', 'reply_to', 'correlation_id',
                'content_type', 'content_encoding', 'absolute_expiry_time', 'creation_time',
                'group_id', 'group_sequence', 'reply_to_group_id',
            )
        ) if v is not None
    }
    if properties:
        record['properties'] = jsonable(properties)
    if msg.app_properties:
        record['application_properties'] = jsonable(msg.app_properties)
    return json.dumps(record, ensure_ascii=False)

def message_text(msg: MessageCtx, body: object = _BODY) -> str:
    """
    A message's body as text (bytes decoded as UTF-8, bad bytes replaced;
    other values as JSON).

    :param body: The body to print (by default the message's).
    """
    if body is _BODY:
        body = msg.body
    if isinstance(body, bytes | bytearray | memoryview):
        return bytes(body).decode('utf-8', errors='replace')
    if isinstance(body, str):
        return body
    return json.dumps(jsonable(body), ensure_ascii=False)

def shown_offset(offset: int | None) -> int | None:
    """
    A stored offset as ``group status`` and ``group reset`` print it:
    2**64 - 1, stored "before offset 0" (the group resumes at 0), is -1,
    as the Java client shows it (18446744073709551615 said nothing to a
    reader, and a JSON reader holding numbers as doubles, ``jq``, could
    not hold it).
    """
    return -1 if offset == BEFORE_FIRST else offset

def plural(n: int, word: str) -> str:
    """``1 message``, ``2 messages``, ``0 messages``."""
    return '{} {}{}'.format(n, word, '' if n == 1 else 's')

class Progress:
    """A count on one line of a terminal's stderr (nothing when stderr is not one)."""
    def __init__(self, what: str, every: int = 10_000) -> None:
        self._what = what
        self._every = every
        self._shown = False
        self._on = sys.stderr.isatty()
        self._last = 0

    def update(self, n: int) -> None:
        # shown each time the count passes a multiple of `every` (the counts
        # of a publisher flushing on a timer are not multiples of it)
        last, self._last = self._last, n
        if self._on and n // self._every != last // self._every:
            sys.stderr.write('\r{} {}'.format(n, self._what))
            sys.stderr.flush()
            self._shown = True

    def done(self) -> None:
        if self._shown:
            sys.stderr.write('\r\x1b[K')
            sys.stderr.flush()

def print_facts(facts: dict[str, tp.Any], fmt: str) -> None:
    """``key: value`` lines, or one JSON object."""
    if fmt == 'json':
        print(json.dumps(jsonable(facts)))
    else:
        for key, value in facts.items():
            print('{}: {}'.format(key, value))

def print_table(rows: list[dict[str, tp.Any]], fmt: str) -> None:
    """
    Rows with the same keys: a table with a header line, columns
    aligned (``-`` for ``None``), or a JSON object a line.
    """
    if fmt == 'json':
        for row in rows:
            print(json.dumps(jsonable(row)))
        return
    if not rows:
        return
    header = [key.upper() for key in rows[0]]
    cells = [header] + [['-' if v is None else str(v) for v in row.values()] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header))]
    for line in cells:
        print('  '.join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())

__all__ = [
    'JSON_TYPES', 'MSGPACK_TYPES', 'BodyDecoder', 'Progress', 'jsonable', 'message_json',
    'message_text', 'plural', 'print_facts', 'print_table', 'shown_offset',
]
