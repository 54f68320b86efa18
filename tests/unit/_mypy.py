"""
Run ``mypy --strict`` from a test, on code that uses rbfly: the tests that
check what a user's type checker says of rbfly's typed API (the option
names, the documentation's code) run it one way.
"""

import contextlib
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]

def mypy_strict(*paths: Path) -> tuple[int, str]:
    """
    Run ``mypy --strict`` with the project's configuration on ``paths``;
    its exit status and its output.

    It runs from the checkout's root, so that the rbfly it checks against
    is the checkout's, wherever pytest runs; the test is skipped where
    mypy is not installed.
    """
    api = pytest.importorskip('mypy.api')
    with contextlib.chdir(ROOT):
        out, err, status = api.run([
            '--strict', '--no-incremental', '--config-file', str(ROOT / 'pyproject.toml'),
            *(str(p) for p in paths),
        ])
    return status, out + err

def mypy_errors(tmp_path: Path, code: str) -> list[str]:
    """
    The error lines of ``mypy --strict`` on ``code``, written as
    ``snippet.py`` in ``tmp_path``; the test fails if mypy found none.
    """
    source = tmp_path / 'snippet.py'
    source.write_text(code)
    status, out = mypy_strict(source)
    assert status == 1, out
    return [line for line in out.splitlines() if ': error:' in line]
