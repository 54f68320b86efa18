"""
The benchmark scripts of ``perf/`` do not import each other: what they
share (scenarios, publishers, consumers, the Java client's runners) lives
in the ``perf/_*.py`` modules, and no module of ``perf/`` takes part in an
import circle.  Checked on the source with :py:mod:`ast` (imports inside
functions count too), nothing is imported.
"""

import ast
from pathlib import Path

import pytest

PERF = Path(__file__).resolve().parents[2] / 'perf'


def perf_modules() -> dict[str, Path]:
    return {path.stem: path for path in sorted(PERF.glob('*.py'))}


def imported(path: Path) -> set[str]:
    """The top-level names of the modules a source file imports."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.partition('.')[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.partition('.')[0])
    return names


def perf_imports() -> dict[str, set[str]]:
    """Which modules of ``perf/`` every module of ``perf/`` imports."""
    modules = perf_modules()
    return {name: imported(path) & (modules.keys() - {name}) for name, path in modules.items()}


def test_perf_modules_found() -> None:
    names = perf_modules().keys()
    assert {'bench_publish', 'bench_consume', 'bench_java'} <= names


@pytest.mark.parametrize(
    'name', sorted(n for n in perf_modules() if n.startswith('bench_')),
)
def test_bench_scripts_do_not_import_each_other(name: str) -> None:
    benches = {n for n in perf_imports()[name] if n.startswith('bench_')}
    assert not benches, 'perf/{}.py imports {}'.format(
        name, ', '.join('perf/{}.py'.format(n) for n in sorted(benches)),
    )


def test_helpers_do_not_import_bench_scripts() -> None:
    found = {
        name: sorted(n for n in deps if n.startswith('bench_'))
        for name, deps in perf_imports().items() if not name.startswith('bench_')
    }
    assert {name: deps for name, deps in found.items() if deps} == {}


def test_no_import_circle() -> None:
    graph = perf_imports()
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            cycle = (*path[path.index(name):], name)
            pytest.fail('import circle in perf/: {}'.format(' -> '.join(cycle)))
        if name in done:
            return
        for dep in sorted(graph[name]):
            visit(dep, (*path, name))
        done.add(name)

    for name in sorted(graph):
        visit(name, ())
