"""
The other Pythons' runs (``scripts/pythons.sh``), checked without their
chroots: the environment and the pytest arguments its functions give
(``scripts/lib/pythons.sh``, run with bash), and what its tools' list
must hold. There, a missing broker skipped (no ``CI``), and mypy and the
serializers' packages were not installed, so six unit tests skipped
silently.
"""

import ast
import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.skips import ALLOWED_SKIPS

ROOT = Path(__file__).resolve().parents[2]
FIRST_PARTY = {'rbfly', 'tests', 'perf', 'soak', 'fuzz', 'examples', 'setup'}

def lib(*command: str, env: dict[str, str] | None = None) -> list[str]:
    """The lines a function of scripts/lib/pythons.sh prints."""
    script = ('set -euo pipefail; LOG_TAG=test; . scripts/lib/common.sh;'
              ' . scripts/lib/pythons.sh; "$@"')
    proc = subprocess.run(
        ['bash', '-c', script, 'bash', *command], cwd=ROOT, capture_output=True, text=True,
        env=env, timeout=30, check=True,
    )
    return proc.stdout.splitlines()

def array(name: str) -> list[str]:
    return lib('eval', 'printf "%s\\n" "${' + name + '[@]}"')

def test_ci_is_true_there() -> None:
    """A missing broker fails the tests there, unless CI says otherwise."""
    env = {k: v for k, v in os.environ.items() if k != 'CI'}
    assert 'CI=true' in lib('py_env', env=env)
    assert 'CI=false' in lib('py_env', env={**env, 'CI': 'false'})

def test_unit_arguments() -> None:
    args = lib('py_pytest_args', 'unit', 'not zstd and not lz4')
    skipped = array('PY_SKIP_UNIT')
    assert '--no-skips' in args
    assert ['--ignore={}'.format(f) for f in skipped] == [a for a in args if a.startswith('--i')]
    assert all((ROOT / f).is_file() for f in skipped), skipped
    assert args[-3:] == ['-k', 'not zstd and not lz4', 'tests/unit']

def test_core_arguments() -> None:
    """The broker restart test is deselected (it needs the host's script), not skipped."""
    args = lib('py_pytest_args', 'core', '')
    assert '--no-skips' in args
    assert '--deselect=tests/integration/test_recovery.py::test_broker_restart' in args
    assert args[args.index('-k') + 1] == 'not uvloop'
    assert 'async def test_broker_restart(' in (
        ROOT / 'tests' / 'integration' / 'test_recovery.py').read_text()
    core = array('PY_CORE')
    assert core and all(f in args and (ROOT / f).is_file() for f in core)

def unit_sources() -> list[Path]:
    """The unit tests run there and the test helpers they load."""
    skipped = {ROOT / f for f in array('PY_SKIP_UNIT')}
    return [p for p in sorted((ROOT / 'tests' / 'unit').rglob('*.py')) if p not in skipped] \
        + sorted((ROOT / 'tests').glob('*.py'))

def imported(path: Path) -> set[str]:
    """The top-level modules a file imports (at any depth, and by importorskip)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name.split('.')[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split('.')[0])
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == 'pytest.importorskip' \
                and isinstance(node.args[0], ast.Constant):
            found.add(str(node.args[0].value).split('.')[0])
    return found

def requirement(spec: str) -> str:
    return re.split(r'[<>=!~ ]', spec)[0].lower().replace('_', '-')

def test_tools_hold_every_import() -> None:
    """Each package the unit tests run there import is in PY_TOOLS (or PY_TOOLS_BINARY)."""
    tools = {requirement(s) for s in array('PY_TOOLS') + array('PY_TOOLS_BINARY')}
    distributions = importlib.metadata.packages_distributions()
    missing = []
    for path in unit_sources():
        for module in sorted(imported(path) - FIRST_PARTY - set(sys.stdlib_module_names)):
            names = {d.lower().replace('_', '-') for d in distributions.get(module, [module])}
            if not names & tools:
                missing.append('{}: {} ({})'.format(path.relative_to(ROOT), module,
                                                    ', '.join(sorted(names))))
    assert missing == [], 'not in PY_TOOLS of scripts/lib/pythons.sh: {}'.format(missing)

def test_tools_hold_the_extras_imported_when_used() -> None:
    """
    The packages of the optional extras that rbfly imports only when used
    (httpx, by rbfly.streams.admin), which unit tests use: in PY_TOOLS too
    (the other Pythons' unit tests of the admin API failed without httpx).
    """
    tools = {requirement(s) for s in array('PY_TOOLS') + array('PY_TOOLS_BINARY')}
    text = (ROOT / 'pyproject.toml').read_text()
    admin = re.search(r'^admin = \[(.*?)\]', text, re.M | re.S)
    assert admin is not None, 'pyproject.toml has no admin extra'
    needed = {requirement(s.strip().strip('"')) for s in admin.group(1).split(',') if s.strip()}
    assert needed and needed <= tools, needed - tools

def test_skips_allowed() -> None:
    """Each ``pytest.skip`` of the unit tests run there gives a reason --no-skips allows."""
    found = []
    # tests/missing.py skips for a missing broker only without CI (py_env sets it)
    for path in [p for p in unit_sources() if p != ROOT / 'tests' / 'missing.py']:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == 'pytest.skip' and not (
                    node.args and isinstance(node.args[0], ast.Constant)
                    and node.args[0].value in ALLOWED_SKIPS):
                found.append('{}:{}: {}'.format(path.relative_to(ROOT), node.lineno,
                                                ast.unparse(node)))
    assert found == []
