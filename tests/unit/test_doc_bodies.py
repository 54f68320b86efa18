"""
The code of ``doc/bodies.rst`` (how to narrow a message body) passes
``mypy --strict``, and its conversions work.
"""

import re
from pathlib import Path

import pytest

from ._mypy import mypy_strict

ROOT = Path(__file__).parents[2]

def blocks() -> list[str]:
    text = (ROOT / 'doc' / 'bodies.rst').read_text()
    return [
        '\n'.join(line[4:] for line in m.group(1).splitlines()) + '\n'
        for m in re.finditer(r'::\n\n((?:    .*\n|\n)+)', text)
    ]

def test_blocks_pass_mypy_strict(tmp_path: Path) -> None:
    paths = []
    for i, code in enumerate(blocks()):
        path = tmp_path / 'block{}.py'.format(i)
        path.write_text(code)
        paths.append(path)
    assert len(paths) == 3
    status, out = mypy_strict(*paths)
    assert status == 0, out

def test_conversions() -> None:
    namespace: dict[str, object] = {}
    for code in blocks()[1:]:
        exec(code, namespace)  # the documentation's own code
    order_number = namespace['order_number']
    to_order = namespace['to_order']
    assert order_number({'order': 3, 'item': 'book'}) == 3  # type: ignore[operator]
    assert order_number('3') is None  # type: ignore[operator]
    assert to_order({'order': 3, 'item': 'book'}) == namespace['Order'](3, 'book')  # type: ignore[operator]
    with pytest.raises(ValueError, match='not an order'):
        to_order({'order': '3'})  # type: ignore[operator]
