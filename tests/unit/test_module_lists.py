"""
Lists kept by hand beside the modules they name stay in step with them:
the benchmarks the docstring of ``perf/`` lists, the modules those of
``soak/``, ``soak/consumer_group/``, ``rbfly/streams/publishers/`` and
``rbfly/streams/facade/`` list, the three lists of
``rbfly/streams/__init__.py`` (the names imported for type checkers, the
lazy exports, ``__all__``), and the files the sources name. A benchmark
added without a line in the docstring, a name exported at run time that
a type checker does not see (``ConfirmTimeout`` and ``RequestTimeout``
were), or a comment naming a check that is not there fails here.
"""

import ast
import re
from pathlib import Path

import pytest

import rbfly.streams

ROOT = Path(__file__).resolve().parents[2]

def docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text())) or ''

def test_perf_lists_every_benchmark() -> None:
    """Each ``perf/<name>/bench.py`` is named in ``perf/__init__.py``, and nothing else."""
    benchmarks = {p.parent.name for p in (ROOT / 'perf').glob('*/bench.py')}
    text = docstring(ROOT / 'perf' / '__init__.py')
    listed = set(re.findall(r'^``perf\.(\w+)``$', text, re.MULTILINE))
    assert benchmarks, 'no benchmark found under perf/'
    assert listed == benchmarks, 'not listed: {}; listed, not a benchmark: {}'.format(
        sorted(benchmarks - listed), sorted(listed - benchmarks))

@pytest.mark.parametrize('folder', ['soak', 'soak/consumer_group'])
def test_soak_lists_its_modules(folder: str) -> None:
    """Each module of ``soak/`` (of ``soak/consumer_group/``) is named in its docstring."""
    package = ROOT / folder
    modules = {p.stem for p in package.glob('*.py')} - {'__init__', '__main__'}
    listed = set(re.findall(r'^``(\w+)``$', docstring(package / '__init__.py'), re.MULTILINE))
    assert modules and listed == modules, 'not listed: {}; listed, not a module: {}'.format(
        sorted(modules - listed), sorted(listed - modules))

def test_publishers_lists_its_modules() -> None:
    """
    Each Python module of ``rbfly/streams/publishers/`` is named in its
    package's docstring (its ``_``-prefixed C modules are not counted).
    """
    folder = ROOT / 'rbfly' / 'streams' / 'publishers'
    modules = {p.stem for p in folder.glob('[!_]*.py')}
    text = docstring(folder / '__init__.py')
    listed = set(re.findall(
        r'^- :py:mod:`~rbfly\.streams\.publishers\.(\w+)`', text, re.MULTILINE,
    ))
    assert modules and listed == modules, 'not listed: {}; listed, not a module: {}'.format(
        sorted(modules - listed), sorted(listed - modules))

def test_facade_lists_its_modules() -> None:
    """Each module of ``rbfly/streams/facade/`` is named in its package's docstring."""
    folder = ROOT / 'rbfly' / 'streams' / 'facade'
    modules = {p.stem for p in folder.glob('*.py')} - {'__init__'}
    listed = set(re.findall(r'^- :py:mod:`\.(\w+)`', docstring(folder / '__init__.py'),
                            re.MULTILINE))
    assert modules and listed == modules, 'not listed: {}; listed, not a module: {}'.format(
        sorted(modules - listed), sorted(listed - modules))

def type_checking_imports(path: Path) -> dict[str, str]:
    """The names imported under ``if tp.TYPE_CHECKING:``, each with its module (relative)."""
    found: dict[str, str] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and 'TYPE_CHECKING' in ast.unparse(node.test):
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom), ast.unparse(stmt)
                module = '.' * stmt.level + (stmt.module or '')
                for alias in stmt.names:
                    found[alias.asname or alias.name] = module
    return found

def test_streams_exports_in_step() -> None:
    """
    ``rbfly.streams``: the type checkers' imports, the lazy exports and
    ``__all__`` name the same names, each from the same module, and each
    resolves at run time.
    """
    seen = type_checking_imports(ROOT / 'rbfly' / 'streams' / '__init__.py')
    exports: dict[str, str] = rbfly.streams._EXPORTS
    assert set(seen) == set(exports), 'for type checkers only: {}; at run time only: {}'.format(
        sorted(set(seen) - set(exports)), sorted(set(exports) - set(seen)))
    assert sorted(rbfly.streams.__all__) == sorted(exports)
    assert {n: m for n, m in seen.items() if exports[n] != m} == {}
    for name in exports:
        assert getattr(rbfly.streams, name) is not None

SOURCE_PATH = re.compile(
    r'(?<![\w./-])((?:tests|scripts|perf|soak|fuzz|examples|doc|rbfly)/[\w./-]+'
    r'\.(?:py|sh|java|pyx|pxd|pyi|rst|md|toml))\b')

def test_named_files_exist() -> None:
    """
    A file of the project named in a script, a benchmark, a test or the
    package exists: a comment saying what checks something names a check
    that is there (``scripts/docs.sh`` named a test and a script that
    were not).
    """
    missing: list[str] = []
    for folder in ('scripts', 'perf', 'soak', 'fuzz', 'examples', 'tests', 'rbfly'):
        for path in sorted((ROOT / folder).rglob('*')):
            if path.suffix not in ('.py', '.sh', '.java', '.pyx', '.pxd', '.pyi') \
                    or not path.is_file():
                continue
            # (not the peers' virtualenvs the benchmarks make, perf/.venv-*,
            # nor a build's output: the project's own files)
            if any(part.startswith('.') or part in ('build', 'target')
                   for part in path.relative_to(ROOT).parts):
                continue
            for n, line in enumerate(path.read_text().splitlines(), 1):
                missing.extend(
                    '{}:{}: {}'.format(path.relative_to(ROOT), n, name)
                    for name in SOURCE_PATH.findall(line) if not (ROOT / name).exists()
                )
    assert missing == []
