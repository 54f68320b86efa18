"""
``--no-skips`` (``tests/skips.py``, what ``scripts/pythons.sh`` runs the
other Pythons' tests with): a skip for a reason not allowed fails the
run, naming the test and the reason; an allowed one does not.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.skips import ALLOWED_SKIPS

ROOT = Path(__file__).resolve().parents[2]

TESTS = '''
import pytest

def test_skips():
    pytest.skip({reason!r})

def test_passes():
    pass
'''

def run(tmp_path: Path, reason: str, *options: str) -> tuple[int, str]:
    (tmp_path / 'test_made_up.py').write_text(TESTS.format(reason=reason))
    # a guard against a hang, not a time limit: pytest's start takes over
    # 120 s under aarch64 emulation on a loaded machine (scripts/arm64.sh)
    proc = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '-p', 'tests.skips',
         *options, str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr

def test_skip_fails_the_run(tmp_path: Path) -> None:
    code, out = run(tmp_path, 'msgpack not installed', '--no-skips')
    assert code == pytest.ExitCode.TESTS_FAILED, out
    assert 'skipped, not allowed (--no-skips)' in out
    assert 'test_made_up.py::test_skips: msgpack not installed' in out

def test_allowed_skip_passes(tmp_path: Path) -> None:
    [reason] = ALLOWED_SKIPS
    code, out = run(tmp_path, reason, '--no-skips')
    assert code == pytest.ExitCode.OK, out
    assert '1 passed, 1 skipped' in out

def test_without_the_option_a_skip_passes(tmp_path: Path) -> None:
    code, out = run(tmp_path, 'msgpack not installed')
    assert code == pytest.ExitCode.OK, out
