#!/usr/bin/env bash
# lint.sh - ruff, mypy --strict (with stubtest for the Cython stubs) and
# cython-lint; the configuration lives in pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${RBFLY_VENV:-.venv}
export PATH="$PWD/$VENV/bin:$PATH"  # cython-lint runs pycodestyle
status=0
"$VENV/bin/ruff" check rbfly tests perf examples || status=1
"$VENV/bin/mypy" || status=1
# the .pyi stubs of the Cython modules must match what the modules export
"$VENV/bin/python" -m mypy.stubtest --allowlist .stubtest-allowlist \
  rbfly.amqp._encoder rbfly.amqp._decoder rbfly.amqp._message rbfly.streams._chunk rbfly.streams._frames rbfly.streams._publish || status=1
"$VENV/bin/cython-lint" $(git ls-files '*.pyx' '*.pxd' 2>/dev/null || find rbfly -name '*.py[xd]') || status=1
exit $status
