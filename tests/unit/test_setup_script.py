"""
``scripts/setup.sh`` stops when the Cython extensions fail to build: the
ones an earlier build left in place would still import, and the tests
would run old code. It runs here with a venv whose ``python`` is a small
script (every call succeeds but the build's, as told), so nothing is
installed or built.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FAKE_PYTHON = '''#!/bin/sh
# the venv's python: the build (setup.py build_ext) as $FAKE_BUILD says
case " $* " in
  *" build_ext "*)
    echo "rbfly/amqp/_decoder.c:1:10: fatal error: no such file"
    echo "error: command '/usr/bin/gcc' failed with exit code 1"
    exit "$FAKE_BUILD" ;;
esac
cat > /dev/null 2>&1 || true  # a script on stdin
exit 0
'''

def run_setup(tmp_path: Path, build_status: int) -> subprocess.CompletedProcess[str]:
    venv = tmp_path / 'venv'
    (venv / 'bin').mkdir(parents=True)
    python = venv / 'bin' / 'python'
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    env = dict(os.environ, RBFLY_VENV=str(venv), PYTHON=sys.executable,
               FAKE_BUILD=str(build_status))
    return subprocess.run(
        ['bash', str(ROOT / 'scripts' / 'setup.sh')], env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )

@pytest.mark.parametrize('build_status', [1, 0])
def test_build_failure_stops_setup(tmp_path: Path, build_status: int) -> None:
    """A failed build fails the script, showing the compiler's error; a good one goes on."""
    proc = run_setup(tmp_path, build_status)
    if build_status:
        assert proc.returncode == 1, proc.stderr
        assert "command '/usr/bin/gcc' failed" in proc.stderr
        assert 'compiling the Cython extensions failed' in proc.stderr
        assert 'ready' not in proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr
        assert 'ready: ' in proc.stderr
