"""
The layout of ``perf/``: a folder a benchmark (``perf/publish/``, ...), run
by ``python -m perf.<name>`` through the one shared ``main()``; what the
benchmarks share in ``perf/common/``; the report's tools in
``perf/report/``.

Checked on the source with :py:mod:`ast` (imports inside functions count
too): no benchmark imports another one's folder, ``perf/common/`` imports
no benchmark and no report tool, the report's tools import no benchmark,
and no module of ``perf/`` takes part in an import circle.  Then, in
child processes as the benchmarks start them: every benchmark's modules
import with the standard library alone (a child in the RbFly 0.10 venv
imports them there, without rstream, aiokafka or matplotlib), and the
command of a child run starts a benchmark's package.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from perf.common import ROOT
from perf.common.child import module_command

PERF = ROOT / 'perf'
SHARED = ('common', 'report')
BENCHMARKS = (
    'codec', 'concurrent', 'consume', 'floor', 'handlers', 'instructions', 'java_client',
    'official', 'publish', 'recovery', 'scale', 'serializers', 'workloads',
)
THIRD_PARTY = ('rbfly', 'rstream', 'aiokafka', 'msgpack', 'matplotlib', 'proton', 'uvloop')


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix('').parts
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def perf_modules() -> dict[str, Path]:
    """The modules of ``perf/`` by name (not its venvs, nor the Java cache)."""
    return {
        module_name(path): path for path in sorted(PERF.rglob('*.py'))
        if not any(part.startswith('.') for part in path.relative_to(PERF).parts)
    }


def imported(path: Path) -> set[str]:
    """The names a source file imports, ``from a import b`` as ``a`` and ``a.b``."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, '{}: a relative import'.format(path)
            assert node.module is not None
            names.add(node.module)
            names.update('{}.{}'.format(node.module, alias.name) for alias in node.names)
    return names


def perf_imports() -> dict[str, set[str]]:
    """Which modules of ``perf/`` every module of ``perf/`` imports."""
    modules = perf_modules()
    return {
        name: {n for n in imported(path) if n in modules} - {name}
        for name, path in modules.items()
    }


def area(module: str) -> str:
    """``publish`` of ``perf.publish.bench``; ``perf`` of the package itself."""
    return module.split('.')[1] if module.count('.') else module


def test_layout() -> None:
    """A folder a benchmark, each run by ``python -m`` through the shared ``main()``."""
    folders = {p.name for p in PERF.iterdir() if (p / '__init__.py').exists()}
    assert folders == {*SHARED, *BENCHMARKS}
    for name in BENCHMARKS:
        main = (PERF / name / '__main__.py').read_text()
        assert 'from perf.{}.bench import BENCHMARK'.format(name) in main
        assert 'sys.exit(main(BENCHMARK))' in main


@pytest.mark.parametrize('name', BENCHMARKS)
def test_benchmarks_do_not_import_each_other(name: str) -> None:
    found = {
        dep for module, deps in perf_imports().items() if area(module) == name
        for dep in deps if area(dep) not in (name, 'common', 'perf')
    }
    assert not found, 'perf/{}/ imports {}'.format(name, ', '.join(sorted(found)))


@pytest.mark.parametrize('name,allowed', [('common', {'common'}), ('report', {'report', 'common'})])
def test_shared_modules_import_no_benchmark(name: str, allowed: set[str]) -> None:
    found = {
        '{} -> {}'.format(module, dep) for module, deps in perf_imports().items()
        if area(module) == name for dep in deps if area(dep) not in {*allowed, 'perf'}
    }
    assert not found, sorted(found)


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


def test_benchmarks_import_with_the_standard_library() -> None:
    """What a child in the RbFly 0.10 venv imports needs nothing installed."""
    modules = sorted(
        m for m in perf_modules() if area(m) in BENCHMARKS and not m.endswith('.__main__')
    )
    code = (
        'import importlib, sys; sys.path.append({!r});'
        ' [importlib.import_module(m) for m in {!r}];'
        ' print(" ".join(sorted({{m.partition(".")[0] for m in sys.modules}} & {!r})))'
    ).format(str(ROOT), modules, set(THIRD_PARTY))
    p = subprocess.run(
        [sys.executable, '-I', '-c', code], capture_output=True, text=True, check=True,
        cwd='/',
    )
    assert p.stdout.split() == []


def test_child_command_runs_a_benchmark() -> None:
    """A child's command starts the benchmark's package from outside the work tree."""
    p = subprocess.run(
        [*module_command(Path(sys.executable), 'perf.floor'), '--help'],
        capture_output=True, text=True, check=True, cwd='/',
    )
    assert p.stdout.startswith('usage: python -m perf.floor ')
