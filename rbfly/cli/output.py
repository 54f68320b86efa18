"""How messages and stream facts are printed: text for people, JSON lines for programs."""

from __future__ import annotations

import base64
import datetime as dt
import json
import sys
import typing as tp

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

def message_json(msg: MessageCtx) -> str:
    """A message as one JSON line: offset, timestamp, body, its sections."""
    record: dict[str, object] = {
        'offset': msg.stream_offset,
        'timestamp': dt.datetime.fromtimestamp(msg.stream_timestamp, dt.UTC).isoformat(),
        'body': jsonable(msg.body),
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

def message_text(msg: MessageCtx) -> str:
    """A message's body as text (bytes decoded as UTF-8, bad bytes replaced)."""
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
    'Progress', 'jsonable', 'message_json', 'message_text', 'plural',
    'print_facts', 'print_table', 'shown_offset',
]
