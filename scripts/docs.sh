#!/usr/bin/env bash
# docs.sh - build the documentation (doc/ -> doc/_build/html) with every
# warning an error (-n: every cross-reference must resolve; -W), and check
# that the reference documents every public name: each name of
# rbfly.streams.__all__ and rbfly.amqp.__all__ has an entry; then check the
# pages at 1280 px (scripts/docs_layout.py: with a headless Chromium, no
# code block clipped, every figure readable and linked to its full size;
# screenshots of the landing page and the quick start in _shots/).
#
# Works from a fresh clone: it first runs scripts/setup.sh doc, which makes
# the venv when there is none, installs Sphinx and the Furo theme (the `doc`
# dependency group) beside the other groups, and compiles the Cython
# extensions in this tree, which autodoc imports (doc/conf.py puts the tree
# first on the path, and stops with one line naming scripts/setup.sh when
# its extensions are not built, rather than 165 autodoc import warnings).
# A second run installs nothing and recompiles only what changed. The pages
# need no network: the Python names they link to come from a small
# inventory written by doc/conf.py.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${RBFLY_VENV:-.venv}
case "$VENV" in /*) ;; *) VENV=$PWD/$VENV ;; esac
py=$VENV/bin/python
OUT=doc/_build/html

RBFLY_VENV=$VENV scripts/setup.sh doc

# the theme is pinned (as in the `doc` dependency group of pyproject.toml): its
# layout is what scripts/docs_layout.py measures at 1280 px (code blocks as wide
# as their text, figures at their scale), which another version may change
FURO=2025.12.19
if ! "$py" -c 'import sphinx, furo, sys; sys.exit(furo.__version__ != sys.argv[1])' "$FURO" \
    2>/dev/null; then
  echo "[docs] installing sphinx and furo $FURO into $VENV" >&2
  "$py" -m pip install -q 'sphinx>=7' "furo==$FURO"
fi
# -E: read every page again, so no warning hides in a cached environment
"$py" -m sphinx -E -q -n -W --keep-going -b html doc "$OUT"
"$py" - "$OUT/objects.inv" <<'PY'
import importlib
import importlib.util
import sys

from sphinx.util.inventory import InventoryFile

with open(sys.argv[1], 'rb') as f:
    inventory = InventoryFile.load(f, '', lambda base, uri: uri)
documented = {name for entries in inventory.values() for name in entries}

def names(module: str, name: str) -> set[str]:
    """Where the reference may document it: under the module that exports
    it, or (a re-export) under the module that defines it, its public
    package, or the module a lazy export imports it from."""
    package = importlib.import_module(module)
    home = getattr(getattr(package, name), '__module__', None) or module
    public = '.'.join(p for p in home.split('.') if not p.startswith('_'))
    source = getattr(package, '_EXPORTS', {}).get(name)
    origin = importlib.util.resolve_name(source, module) if source else module
    return {'{}.{}'.format(m, name) for m in (module, home, public, origin)}

missing = [
    '{}.{}'.format(module, name)
    for module in ('rbfly.streams', 'rbfly.amqp')
    for name in importlib.import_module(module).__all__
    if not names(module, name) & documented
]
if missing:
    sys.exit('[docs] not in the reference: {}'.format(', '.join(missing)))
print('[docs] built {}; every public name documented'.format(sys.argv[1].rsplit('/', 1)[0]))
PY
# as a reader at 1280 px sees it: no clipped code block, figures readable
# and linked to their full size (a headless Chromium, when installed)
# (installed as root when missing, under the brokers' apt lock: test.sh runs
# docs.sh beside brokers.sh; under CI=true the check fails without it)
if ! command -v chromium >/dev/null && [ "$(id -u)" = 0 ]; then
  LOG_TAG=docs
  # shellcheck source=lib/common.sh
  . scripts/lib/common.sh
  HOST_APT_LOCK=${BROKERS_DIR:-/var/cache/rbfly-brokers}/run/apt.lock
  HOST_APT_LOG=${BROKERS_DIR:-/var/cache/rbfly-brokers}/log/host-apt.log
  host_apt_install chromium
fi
"$py" scripts/docs_layout.py "$OUT"
