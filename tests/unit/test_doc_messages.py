"""
The error messages quoted in doc/troubleshooting.rst and doc/versions.rst
are the ones the code produces: each is found in rbfly's source, so that
a reworded error breaks this test until the page follows.

A quoted message is a literal (double backquotes) with a space in it: in
troubleshooting.rst, of an entry's term; in versions.rst, of the code
block and of the third column of the table of features; but a command
(``rbfly stream info``, ``rabbitmq-plugins enable ...``). A literal of
one CamelCase word names a class of rbfly (``RequestTimeout``).

A message is found when its text is covered by the fixed text of the
source's format strings (string literals, implicit concatenation joined;
``{...}`` and ``%s`` fields match any text), each matched as a whole, in
order; what is left uncovered must be values (a stream's name, a port, a
number: no two words in a row), ``...`` (text the page leaves out), or
what Python or pytest say themselves (FOREIGN).
"""

import ast
import functools
import io
import itertools
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FOREIGN = (
    # the operating system's, through Python's OSError
    'Connect call failed', 'Name or service not known',
    # Python's and pytest's own
    'TypeError: string indices must be integers', "'str' object is not subscriptable",
    'async def functions are not natively supported',
)
"""What the pages quote that is not rbfly's."""

FIELD = re.compile(r'\{[^{}]*\}|%[-#0 +]*\d*(?:\.\d+)?[sdrfx]')
"""A field of a format string (``str.format``, f-string, or ``%`` as logging's)."""

MIN_FIXED = 8
"""Formats with less fixed text than this (``'{}: {}'``) cover nothing."""

LITERAL = re.compile(r'``(.+?)``')

COMMAND = re.compile(r'(rbfly|rabbitmq-plugins|pip) ')
"""A literal quoting a command to run, not a message."""

def _strings(path: Path) -> list[str]:
    """The string literals of a source file, adjacent ones joined."""
    joined: list[str] = []
    current: list[str] = []
    readline = io.StringIO(path.read_text()).readline
    try:
        for token in tokenize.generate_tokens(readline):
            if token.type == tokenize.STRING:
                current.append(_value(token.string))
            elif token.type not in (tokenize.NL, tokenize.COMMENT):
                if current:
                    joined.append(''.join(current))
                    current = []
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # a Cython construct tokenize refuses: the strings before it are kept
    if current:
        joined.append(''.join(current))
    return joined

def _value(token: str) -> str:
    """A string token's text, fields left as written (f-strings too)."""
    prefix = re.match(r'[a-zA-Z]*', token).group()  # type: ignore[union-attr]
    if 'b' in prefix.lower():
        return ''
    try:
        value = ast.literal_eval(token[len(prefix):] if 'f' in prefix.lower() else token)
    except (ValueError, SyntaxError):
        return ''
    return value if isinstance(value, str) else ''

@functools.cache
def formats() -> list[re.Pattern[str]]:
    """Every format string of rbfly's source, as a pattern of its fixed pieces."""
    patterns = []
    files = [*ROOT.glob('rbfly/**/*.py'), *ROOT.glob('rbfly/**/*.pyx')]
    for string in {s for f in files for s in _strings(f)}:
        text = string.replace('{{', '\0').replace('}}', '\1')
        pieces = [p.replace('\0', '{').replace('\1', '}') for p in FIELD.split(text)]
        if sum(len(p) for p in pieces) < MIN_FIXED:
            continue
        patterns.append(re.compile('(.*?)'.join('({})'.format(re.escape(p)) for p in pieces),
                                   re.DOTALL))
    return patterns

def uncovered(message: str) -> list[str]:
    """The runs of a message that no format of the source covers."""
    covered = [False] * len(message)
    for foreign in (*FOREIGN, '...'):
        for m in re.finditer(re.escape(foreign), message):
            covered[m.start():m.end()] = [True] * (m.end() - m.start())
    for pattern in formats():
        for m in pattern.finditer(message):
            # the fixed pieces are the odd groups (1, 3, 5...)
            for group in range(1, (pattern.groups or 0) + 1, 2):
                start, end = m.span(group)
                covered[start:end] = [True] * (end - start)
    left = ''.join('\0' if c else ch for c, ch in zip(covered, message, strict=True))
    runs = [run for run in left.split('\0') if run]
    return [run for run in runs if re.search(r'[A-Za-z]{2,}\s+[A-Za-z]{2,}', run)]

def _terms(text: str) -> list[str]:
    """The terms of the definition lists of a page (a line followed by an indented one)."""
    lines = text.splitlines()
    return [line for line, after in itertools.pairwise(lines)
            if line and not line[0].isspace() and after.startswith('    ')
            and not line.startswith('..')]

def _version_cells(text: str) -> list[str]:
    """The code block's lines and the third cells of the table of versions.rst."""
    cells = re.findall(r'^    (FeatureNotSupported: .+)$', text, re.MULTILINE)
    rows = re.split(r'^   \* - ', text, flags=re.MULTILINE)[2:]  # after the header row
    for row in rows:
        columns = re.split(r'^     - ', row.split('\n\n')[0], flags=re.MULTILINE)
        assert len(columns) == 3, row
        cells.extend('``{}``'.format(c) for c in LITERAL.findall(columns[2]))
    return ['``{}``'.format(c) if not c.startswith('``') else c for c in cells]

def quoted(page: str) -> list[str]:
    """The literals a page quotes as rbfly's messages or names."""
    text = (ROOT / 'doc' / page).read_text()
    places = _terms(text) if page == 'troubleshooting.rst' else _version_cells(text)
    return [m for place in places for m in LITERAL.findall(place)]

MESSAGES = [(page, m) for page in ('troubleshooting.rst', 'versions.rst')
            for m in quoted(page) if ' ' in m and not COMMAND.match(m)]
NAMES = sorted({m for page in ('troubleshooting.rst', 'versions.rst')
                for m in quoted(page) if re.fullmatch('[A-Z][a-z]+[A-Z][A-Za-z]+', m)})

def test_pages_quote() -> None:
    """The pages are read as this test expects (a page reshaped would check nothing)."""
    pages = {page for page, _ in MESSAGES}
    assert pages == {'troubleshooting.rst', 'versions.rst'}
    assert len([m for page, m in MESSAGES if page == 'troubleshooting.rst']) >= 25
    assert len([m for page, m in MESSAGES if page == 'versions.rst']) >= 10
    assert 'RequestTimeout' in NAMES

@pytest.mark.parametrize('page, message', MESSAGES)
def test_message_in_source(page: str, message: str) -> None:
    """Each message quoted is what rbfly's source writes."""
    assert uncovered(message) == [], '{} quotes a message rbfly no longer writes'.format(page)

@pytest.mark.parametrize('name', NAMES)
def test_name_in_source(name: str) -> None:
    """Each class or function named is defined in rbfly."""
    files = [*ROOT.glob('rbfly/**/*.py'), *ROOT.glob('rbfly/**/*.pyx')]
    definition = re.compile(r'^\s*(?:class|def|cdef class) {}\b'.format(re.escape(name)),
                            re.MULTILINE)
    assert any(definition.search(f.read_text()) for f in files)

@pytest.mark.parametrize('message', [
    # a word changed in the middle, at the end, at the start of a message
    'ConnectionLost: unable to connect to localhost:5552: [Errno 111] Connect call failed',
    "rbfly: error: stream 'orders' exists with other settings than --max-age 7D",
    'MessageTooLarge: message of 5 bytes does not fit into a frame of at most 4 octets',
])
def test_reworded_found_out(message: str) -> None:
    """A message that is not the source's leaves a run of words uncovered."""
    assert uncovered(message) != []
