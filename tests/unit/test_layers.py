"""
Architecture guard: imports point down the layers only, and no two
modules import each other, directly or around a circle.

::

    rbfly.streams.blocking             the blocking facade (over the client)
    rbfly.streams.client, extras       the facade (and its reading side,
                                       consuming); public extras (pipe, tracing,
                                       otel, compression)
      rbfly.streams.facade             the facade's methods, by concern (the
                                       client exposes them as its own)
      rbfly.streams.parts              the client's parts
        rbfly.streams.publishers       user-API objects: publishers,
        rbfly.streams.subscriptions      and subscriptions (two rooms)
          rbfly.streams.aio            asyncio adapter
            rbfly.streams.protocol     sans-IO core: frames, Publish, chunks
              vocabulary               errors, codes, offsets, types, events,
                                       options' values; wire and AMQP codecs,
                                       serializers

A rule lists what a layer's modules may import from rbfly. Every import
counts: at the top of a module, in its functions, and under ``if
TYPE_CHECKING:`` (an annotation's import still ties two modules together:
they change together). The modules are read, not imported, so a test fails
on an upward import before anything runs; ``.pyx`` and ``.pxd`` files are
read for their ``import`` and ``cimport`` lines too.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / 'rbfly'

# the bottom: the wire and AMQP codecs, and the streams' vocabulary, which
# every layer may use and which imports nothing but itself
VOCABULARY = (
    'rbfly._wire', 'rbfly.amqp', 'rbfly.error', 'rbfly.types',
    'rbfly.streams.codes', 'rbfly.streams.error', 'rbfly.streams.types',
    'rbfly.streams.offset', 'rbfly.streams.names', 'rbfly.streams.events',
    'rbfly.streams.backoff', 'rbfly.streams.lifecycle', 'rbfly.streams.metrics',
    'rbfly.streams.semconv',
    'rbfly.streams.url', 'rbfly.streams.decorator', 'rbfly.streams.serializers',
    'rbfly.streams.health',
)

CORE = ('rbfly.streams.protocol', *VOCABULARY)
ADAPTER = ('rbfly.streams.aio', *CORE)
PUBLISHERS = ('rbfly.streams.publishers', *ADAPTER)
SUBSCRIPTIONS = ('rbfly.streams.subscriptions', *ADAPTER)
# OAuth 2 tokens (HTTP, asyncio): the parts' and the facade's, not the core's
OAUTH2 = 'rbfly.streams.oauth2'
PARTS = ('rbfly.streams.parts', 'rbfly.streams.publishers', 'rbfly.streams.subscriptions',
         OAUTH2, *ADAPTER)

# the public extras: at the facade's level, used by nothing of the client
EXTRAS = ('rbfly.streams.pipe', 'rbfly.streams.tracing', 'rbfly.streams.otel',
          'rbfly.streams.compression', 'rbfly.streams.admin', 'rbfly.streams.lag',
          'rbfly.streams.probes')
# a minimal HTTP server of the extras (the lag exporter): nothing of rbfly
HTTPD = 'rbfly.streams.httpd'
# the facade's reading side: the subscribe methods' options and iterators
CONSUMING = 'rbfly.streams.consuming'
# the facade's methods by concern, each class over the parts it uses
SECTIONS = 'rbfly.streams.facade'
FACADE = ('rbfly.streams.client', SECTIONS, CONSUMING, *PARTS)
# what the extras may import: the facade, the objects below the parts
ABOVE_PARTS = ('rbfly.streams.client', 'rbfly.streams.publishers',
               'rbfly.streams.subscriptions', *ADAPTER)

# layer (a module or a package) -> what its modules may import; the most
# specific prefix wins; the package's own __init__ (lazy exports), the CLI
# and the fake broker (rbfly.testing) sit above everything
RULES: dict[str, tuple[str, ...]] = {
    **{name: VOCABULARY for name in VOCABULARY},
    'rbfly.streams.protocol': CORE,
    'rbfly.streams.aio': ADAPTER,
    'rbfly.streams.publishers': PUBLISHERS,
    'rbfly.streams.subscriptions': SUBSCRIPTIONS,
    'rbfly.streams.parts': PARTS,
    'rbfly.streams.client': FACADE,
    CONSUMING: PARTS,
    SECTIONS: (SECTIONS, CONSUMING, *PARTS),
    OAUTH2: VOCABULARY,
    **{name: (name, HTTPD, *ABOVE_PARTS) for name in EXTRAS},
    HTTPD: (),
    # the blocking facade: the async facade run on a loop thread
    'rbfly.streams.blocking': ('rbfly.streams.blocking', *FACADE),
}

def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix('').parts)
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

def python_imports(path: Path, module: str) -> set[str]:
    """
    Modules a Python module imports, anywhere in it, type-only imports
    included (a name imported from a package counts as its module too).
    """
    is_package = path.name == '__init__.py'
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = resolve(module, is_package, node.level, node.module)
            found.add(base)
            found.update('{}.{}'.format(base, a.name) for a in node.names)
    return found

PYX_IMPORT = re.compile(r'^\s*(?:from\s+(\.*)([\w.]*)\s+c?import|c?import\s+([\w.]+))', re.M)

def cython_imports(path: Path, module: str) -> set[str]:
    found = set()
    for dots, name, plain in PYX_IMPORT.findall(path.read_text()):
        found.add(resolve(module, False, len(dots), name or None) if not plain else plain)
    return found

def imports(path: Path, root: Path = ROOT) -> set[str]:
    module = module_name(path, root)
    names = cython_imports(path, module) if path.suffix in ('.pyx', '.pxd') \
        else python_imports(path, module)
    return {n for n in names if n.split('.')[0] == 'rbfly'}

def sources(package: Path = PACKAGE) -> list[Path]:
    return sorted(p for ext in ('*.py', '*.pyx', '*.pxd') for p in package.rglob(ext))

def within(name: str, prefixes: Iterable[str]) -> bool:
    return any(name == p or name.startswith(p + '.') for p in prefixes)

def rule(module: str) -> tuple[str, ...] | None:
    """What ``module`` may import (``None``: no rule, above the layers)."""
    layers = [layer for layer in RULES if within(module, (layer,))]
    return RULES[max(layers, key=len)] if layers else None

def wrong_imports(module: str, names: set[str]) -> list[str]:
    allowed = rule(module)
    if allowed is None:
        return []
    return sorted(n for n in names if n != 'rbfly' and not within(n, allowed)
                  and not within(n, (module,)))

@pytest.mark.parametrize('path', sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_down(path: Path) -> None:
    """A module imports only from its own layer and the layers below it."""
    module = module_name(path)
    wrong = wrong_imports(module, imports(path))
    assert not wrong, '{} imports {} (allowed: {})'.format(module, wrong, rule(module))

def graph(package: Path, root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports (a ``.pyx`` and its
    ``.pxd`` are one module; an imported name is mapped to its module)."""
    files = sources(package)
    modules = {module_name(p, root) for p in files}
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for path in files:
        module = module_name(path, root)
        for name in imports(path, root):
            target = name
            while target and target not in modules:  # a name in a module
                target = target.rpartition('.')[0]
            if target and target != module and not within(module, (target,)):
                edges[module].add(target)
    return edges

def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found

def test_no_import_circle() -> None:
    """
    No import circle anywhere in rbfly/, the fake broker included, type-only
    imports counted (a module's import of a package it is in is not an
    edge: the package's ``__init__`` is loaded first anyway).
    """
    assert circles(graph(PACKAGE, ROOT)) == []

def test_guard_sees_an_upward_import(tmp_path: Path) -> None:
    """
    The guard itself: an upward import in the core is found, a type-only
    one too, and a circle between two modules (a probe package written
    under ``tmp_path``, not into the source tree).
    """
    core = tmp_path / 'rbfly' / 'streams' / 'protocol'
    core.mkdir(parents=True)
    bad = core / '_guard_probe.py'
    bad.write_text(
        'import typing as tp\n'
        'from ..client import StreamsClient\n'
        'if tp.TYPE_CHECKING:\n'
        '    from ..aio.connection import x\n'
        'from . import _other\n',
    )
    (core / '_other.py').write_text('from ._guard_probe import y\n')
    names = imports(bad, tmp_path)
    assert names >= {'rbfly.streams.client', 'rbfly.streams.aio.connection'}
    wrong = wrong_imports(module_name(bad, tmp_path), names)
    assert wrong == ['rbfly.streams.aio.connection', 'rbfly.streams.aio.connection.x',
                     'rbfly.streams.client', 'rbfly.streams.client.StreamsClient']
    assert circles(graph(tmp_path / 'rbfly', tmp_path)) == [[
        'rbfly.streams.protocol._guard_probe', 'rbfly.streams.protocol._other',
    ]]
