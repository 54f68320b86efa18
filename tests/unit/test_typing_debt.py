"""
A ratchet on typing debt in ``rbfly/streams``: the ``Any`` names (``tp.Any``
and any other spelling: tokens of the sources, not their comments or
docstrings) of its ``.py`` and ``.pyi`` files, and the ``type: ignore``
comments of its publishers, stay at or below the counts written here.
They grew unnoticed once (``tp.Any`` from 50 to 105 lines in a
renovation, six ``type: ignore`` in the super stream publisher for want
of a common protocol of the partitions' publishers); each was lowered
when the code was fixed (191 and 7 before, 143 and 1 after).

When a count falls, lower its ceiling here to the new count (the test
says so): the ratchet keeps what was won. A count above its ceiling
means new code typed loosely: type it (``object``, a protocol, a
``TypedDict``) rather than raising the ceiling.

And serializers attach to a publisher as a class, made once per class
(:py:mod:`rbfly.streams.publishers.serializing`): no method of a
publisher is replaced on its instance, and ``serializers.py`` sets no
attribute of one.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

STREAMS = Path(__file__).resolve().parents[2] / 'rbfly' / 'streams'

MAX_ANY = 143
"""Ceiling of the ``Any`` names in ``rbfly/streams`` (``*.py``, ``*.pyi``)."""

MAX_IGNORES = 1
"""Ceiling of the ``type: ignore`` comments in ``rbfly/streams/publishers``."""

def any_names(path: Path) -> int:
    """The ``Any`` names of a source (tokens: comments and strings do not count)."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return sum(1 for t in tokens if t.type == tokenize.NAME and t.string == 'Any')

def ignores(path: Path) -> int:
    """The ``type: ignore`` comments of a source."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return sum(
        1 for t in tokens if t.type == tokenize.COMMENT and 'type: ignore' in t.string
    )

def sources(folder: Path, *suffixes: str) -> list[Path]:
    return sorted(p for p in folder.rglob('*') if p.suffix in suffixes)

def ratchet(what: str, counts: dict[Path, int], ceiling: int, name: str) -> None:
    total = sum(counts.values())
    worst = sorted(counts.items(), key=lambda item: -item[1])[:5]
    assert total <= ceiling, '{} {} in rbfly/streams, above the ceiling {}; most in: {}'.format(
        total, what, ceiling,
        ', '.join('{} ({})'.format(p.relative_to(STREAMS), n) for p, n in worst),
    )
    assert total == ceiling, '{} {} now, fewer than the ceiling {}: lower {} in {} to {}'.format(
        total, what, ceiling, name, Path(__file__).name, total,
    )

def test_any_ratchet() -> None:
    """The ``Any`` names of ``rbfly/streams`` do not grow back."""
    counts = {p: any_names(p) for p in sources(STREAMS, '.py', '.pyi')}
    assert counts, 'no sources found under {}'.format(STREAMS)
    ratchet('Any names', counts, MAX_ANY, 'MAX_ANY')

def test_type_ignore_ratchet() -> None:
    """The ``type: ignore`` comments of the publishers do not grow back."""
    counts = {p: ignores(p) for p in sources(STREAMS / 'publishers', '.py', '.pyi')}
    assert counts, 'no sources found under {}'.format(STREAMS / 'publishers')
    ratchet('type: ignore comments', counts, MAX_IGNORES, 'MAX_IGNORES')

def test_counts_see_what_they_count(tmp_path: Path) -> None:
    """The counters count code, not comments or docstrings."""
    path = tmp_path / 'm.py'
    path.write_text(
        '"""Any docstring: Any."""\n'
        'import typing as tp\n'
        'from typing import Any\n'
        'x: tp.Any = 1  # Any comment\n'
        'y = tp.cast(Any, x)  # type: ignore[misc]\n'
    )
    assert any_names(path) == 3
    assert ignores(path) == 1

def test_serializers_set_no_publisher_attribute() -> None:
    """
    ``serializers.py`` replaces no method on a publisher: no ``setattr``,
    no assignment to an attribute of an object it was given (its own,
    ``self.x``, aside).
    """
    path = STREAMS / 'serializers.py'
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ('setattr', 'vars'):
            found.append('{}() at line {}'.format(node.func.id, node.lineno))
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute) and not (
                    isinstance(target.value, ast.Name) and target.value.id == 'self'):
                found.append('{} at line {}'.format(ast.unparse(target), target.lineno))
    assert found == [], 'serializers.py sets attributes of other objects: {}'.format(found)
