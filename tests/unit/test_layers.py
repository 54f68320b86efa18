"""
Architecture guard: imports point down the layers only.

::

    rbfly.streams.client            the facade (user API)
      rbfly.streams.parts.*         the client's parts
        rbfly.streams.{publisher,subscriber,...}  user-API objects
          rbfly.streams.aio.*       asyncio adapter
            rbfly.streams.protocol.*  sans-IO core: frames, Publish, chunks
              rbfly._wire, rbfly.amqp, rbfly.error, rbfly.types,
              rbfly.streams.error   wire and AMQP codecs, errors

Each rule lists what a layer's modules may import from rbfly at run time
(imports under ``if TYPE_CHECKING:`` are for annotations only, and free).
The modules are read, not imported, so a test fails on an upward import
before anything runs; ``.pyx`` files are read for their ``import`` and
``cimport`` lines too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / 'rbfly'

# the bottom layers, which every layer may use
CODECS = (
    'rbfly._wire', 'rbfly.amqp', 'rbfly.error', 'rbfly.types', 'rbfly.streams.codes',
    'rbfly.streams.error',
)

# leaf value modules of the user API that the adapter uses: they import
# nothing of rbfly's but the bottom layers (checked below)
VALUES = ('rbfly.streams.backoff', 'rbfly.streams.events')

RULES: dict[str, tuple[str, ...]] = {
    'rbfly.streams.protocol': ('rbfly.streams.protocol', *CODECS),
    'rbfly.streams.aio': ('rbfly.streams.aio', 'rbfly.streams.protocol', *VALUES, *CODECS),
    'rbfly.streams.backoff': CODECS,
    'rbfly.streams.events': CODECS,
}

# what may import the facade and the parts: nothing but the facade itself
# and the package's lazy exports
ABOVE_PARTS = ('rbfly.streams.client', 'rbfly.streams')

def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix('').parts)
    if parts[-1] == '__init__':
        parts.pop()
    return '.'.join(parts)

def resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ''
    base = module.split('.')
    if not is_package:
        base.pop()
    if level > 1:
        base = base[:-(level - 1)]
    return '.'.join(base + ([name] if name else []))

def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Attribute) and test.attr == 'TYPE_CHECKING') \
        or (isinstance(test, ast.Name) and test.id == 'TYPE_CHECKING')

def python_imports(path: Path) -> set[str]:
    """
    Modules a Python module imports at run time, at its top or in its
    functions (a name imported from a package counts as its module too).
    """
    module = module_name(path)
    is_package = path.name == '__init__.py'
    found: set[str] = set()

    class Visitor(ast.NodeVisitor):
        def visit_If(self, node: ast.If) -> None:
            if _type_checking(node):
                for child in node.orelse:
                    self.visit(child)
            else:
                self.generic_visit(node)

        def visit_Import(self, node: ast.Import) -> None:
            found.update(a.name for a in node.names)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            base = resolve(module, is_package, node.level, node.module)
            found.add(base)
            found.update('{}.{}'.format(base, a.name) for a in node.names)

    Visitor().visit(ast.parse(path.read_text(), str(path)))
    return found

PYX_IMPORT = re.compile(r'^\s*(?:from\s+(\.*)([\w.]*)\s+c?import|c?import\s+([\w.]+))', re.M)

def cython_imports(path: Path) -> set[str]:
    module = module_name(path)
    found = set()
    for dots, name, plain in PYX_IMPORT.findall(path.read_text()):
        found.add(resolve(module, False, len(dots), name or None) if not plain else plain)
    return found

def imports(path: Path) -> set[str]:
    names = cython_imports(path) if path.suffix in ('.pyx', '.pxd') else python_imports(path)
    return {n for n in names if n.split('.')[0] == 'rbfly'}

def sources() -> list[Path]:
    return sorted(p for ext in ('*.py', '*.pyx', '*.pxd') for p in PACKAGE.rglob(ext))

def within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + '.') for p in prefixes)

def _rule(module: str) -> tuple[str, ...] | None:
    for layer, allowed in RULES.items():
        if within(module, (layer,)):
            return allowed
    return None

@pytest.mark.parametrize('path', sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_down(path: Path) -> None:
    """A module imports only from its own layer and the layers below it."""
    module = module_name(path)
    names = imports(path)
    allowed = _rule(module)
    if allowed is not None:
        wrong = sorted(n for n in names if not within(n, allowed) and n != 'rbfly')
        assert not wrong, '{} imports {} (allowed: {})'.format(module, wrong, allowed)
    if not within(module, ('rbfly.streams.parts', *ABOVE_PARTS)) or module == 'rbfly.streams':
        up = sorted(n for n in names if within(n, ('rbfly.streams.parts', 'rbfly.streams.client')))
        assert not up, '{} imports the client layer: {}'.format(module, up)
    if within(module, ('rbfly.streams.parts',)):
        up = sorted(n for n in names if within(n, ('rbfly.streams.client',)))
        assert not up, '{} imports the facade: {}'.format(module, up)

def test_guard_sees_an_upward_import(tmp_path: Path) -> None:
    """The guard itself: an upward import in the core is found."""
    core = PACKAGE / 'streams' / 'protocol'
    bad = core / '_guard_probe.py'
    bad.write_text('from ..client import StreamsClient\nfrom ..aio.protocol import x\n')
    try:
        names = imports(bad)
        assert names >= {'rbfly.streams.client', 'rbfly.streams.aio.protocol'}
        allowed = _rule(module_name(bad))
        assert allowed is not None
        assert [n for n in names if not within(n, allowed)]
    finally:
        bad.unlink()

def test_type_checking_imports_are_free() -> None:
    path = PACKAGE / 'streams' / 'aio' / 'manager.py'
    source = path.read_text()
    assert 'if tp.TYPE_CHECKING:' in source and '..publisher' in source
    assert 'rbfly.streams.publishers.awaited' not in imports(path)
