#!/usr/bin/env bash
# lint.sh - ruff, mypy --strict (with stubtest for the Cython stubs) and
# cython-lint; the configuration lives in pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${RBFLY_VENV:-.venv}
case "$VENV" in /*) ;; *) VENV=$PWD/$VENV ;; esac  # RBFLY_VENV may be absolute
export PATH="$VENV/bin:$PATH"  # cython-lint runs pycodestyle

# The Cython extension modules: the MODULES list of setup.py, the one list of
# them. It is read with ast, setup.py is not run, so nothing needs to be built
# or installed for it. Fails when a .pyx under rbfly/ is not in the list or
# the list names a module without its .pyx (the list is printed anyway).
cython_modules() {
  "$VENV/bin/python" - <<'EOF'
import ast
import sys
from pathlib import Path

source = Path('setup.py')
lists = [
    node.value for node in ast.parse(source.read_text(), str(source)).body
    if isinstance(node, ast.Assign)
    and any(isinstance(t, ast.Name) and t.id == 'MODULES' for t in node.targets)
]
try:
    modules = ast.literal_eval(lists[0]) if len(lists) == 1 else None
except ValueError:
    modules = None
if not isinstance(modules, list | tuple) or not all(isinstance(m, str) for m in modules):
    sys.exit('{}: MODULES must be assigned once, a literal list of module names'.format(source))
print(' '.join(modules))
sources = {'.'.join(p.with_suffix('').parts) for p in Path('rbfly').rglob('*.pyx')}
status = 0
for name in sorted(sources - set(modules)):
    print('{}: MODULES lacks {} ({}.pyx)'.format(source, name, name.replace('.', '/')),
          file=sys.stderr)
    status = 1
for name in sorted(set(modules) - sources):
    print('{}: MODULES names {}, there is no {}.pyx'.format(
        source, name, name.replace('.', '/')), file=sys.stderr)
    status = 1
sys.exit(status)
EOF
}

status=0
"$VENV/bin/ruff" check rbfly tests perf examples fuzz soak || status=1
"$VENV/bin/mypy" || status=1
# the .pyi stubs of all the Cython modules must match what the modules export
modules=$(cython_modules) || status=1
if [ -n "$modules" ]; then
  # shellcheck disable=SC2086  # one argument per module
  "$VENV/bin/python" -m mypy.stubtest --allowlist .stubtest-allowlist $modules || status=1
fi
"$VENV/bin/cython-lint" $(git ls-files '*.pyx' '*.pxd' 2>/dev/null || find rbfly -name '*.py[xd]') || status=1
exit $status
