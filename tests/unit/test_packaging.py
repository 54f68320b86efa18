"""
What a user installs: the extras of pyproject.toml are the user's only
(the development tools are PEP 735 dependency groups, which scripts/setup.sh
installs), a wheel built by ``pip install .`` is stripped (setup.py), and
scripts/wheel.sh needs no venv made beforehand.
"""

import runpy
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
USER_EXTRAS = {'uvloop', 'compression', 'otel', 'admin'}
DEV_GROUPS = {'test', 'lint', 'perf', 'fuzz', 'doc', 'wheel'}

def pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / 'pyproject.toml').read_text())

def test_extras_are_for_users() -> None:
    """Test that no development tool is published as an extra of rbfly."""
    project = pyproject()['project']
    assert isinstance(project, dict)
    assert set(project['optional-dependencies']) == USER_EXTRAS

def test_dependency_groups() -> None:
    """Test that the development tools are dependency groups, installed by setup.sh."""
    groups = pyproject()['dependency-groups']
    assert isinstance(groups, dict) and set(groups) == DEV_GROUPS
    setup = (ROOT / 'scripts' / 'setup.sh').read_text()
    assert "pip install -q -U 'pip>=25.1'" in setup  # the first pip with --group
    assert 'DEV_GROUPS=test,lint,fuzz,perf' in setup and '--group "$g"' in setup

@pytest.mark.parametrize('environ, platform, compile_args, link_args', [
    ({}, 'linux', ['-O2', '-g0'], ['-s']),
    ({'RBFLY_STRIP': '0'}, 'linux', ['-O2'], []),
    ({'RBFLY_DEBUG': '1'}, 'linux', ['-O0', '-g'], []),
    ({}, 'darwin', ['-O2', '-g0'], []),
    ({}, 'win32', ['-O2'], []),
])
def test_build_flags(
        environ: dict[str, str], platform: str, compile_args: list[str], link_args: list[str],
) -> None:
    """Test that the extensions are built stripped unless asked otherwise."""
    build_flags = runpy.run_path(str(ROOT / 'setup.py'), run_name='setup')['build_flags']
    assert build_flags(environ, platform) == (compile_args, link_args)

def test_wheel_script_creates_its_venv() -> None:
    """Test that scripts/wheel.sh creates the venv and installs what it builds with."""
    script = (ROOT / 'scripts' / 'wheel.sh').read_text()
    create = script.index('-m venv "$VENV"')
    assert create < script.index("'setuptools>=77' 'cython>=3.0.11,<3.3'") < script.index(
        '-m build -q')
