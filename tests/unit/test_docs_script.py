"""
``scripts/docs.sh`` works from a fresh clone, as the README says: it sets
its venv up itself (it failed at once with ``.venv/bin/python: No such
file or directory``), and ``doc/conf.py`` refuses a tree whose Cython
extensions are not built with one line saying what to run (autodoc gave
165 import warnings). Both run here on copies, with stand-ins for what
they call, so no venv is made and no Sphinx is needed.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

def test_docs_sets_itself_up(tmp_path: Path) -> None:
    """docs.sh runs scripts/setup.sh doc, with its venv, before it uses the venv."""
    scripts = tmp_path / 'scripts'
    scripts.mkdir()
    shutil.copy(ROOT / 'scripts' / 'docs.sh', scripts / 'docs.sh')
    setup = scripts / 'setup.sh'
    setup.write_text('#!/bin/sh\necho "setup.sh $* with $RBFLY_VENV" >&2\nexit 3\n')
    setup.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != 'RBFLY_VENV'}
    done = subprocess.run(['bash', str(scripts / 'docs.sh')], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (3, '')
    assert done.stderr == 'setup.sh doc with {}\n'.format(tmp_path / '.venv')

def test_conf_refuses_unbuilt_tree(tmp_path: Path) -> None:
    """
    doc/conf.py of a tree whose extensions are not built (here: a copy,
    its rbfly the one installed elsewhere) stops with a ConfigError that
    names scripts/setup.sh doc.
    """
    (tmp_path / 'doc').mkdir()
    for name in ('doc/conf.py', 'setup.py', 'pyproject.toml'):
        shutil.copy(ROOT / name, tmp_path / name)
    stub = tmp_path / 'stub' / 'sphinx'
    stub.mkdir(parents=True)
    (stub / '__init__.py').write_text('')
    (stub / 'errors.py').write_text('class ConfigError(Exception):\n    pass\n')
    code = (
        'import runpy, sys\n'
        'from sphinx.errors import ConfigError\n'
        'try:\n'
        '    runpy.run_path(sys.argv[1])\n'
        'except ConfigError as ex:\n'
        '    print(ex)\n'
        'else:\n'
        '    print("no error")\n'
    )
    done = subprocess.run(
        [sys.executable, '-c', code, str(tmp_path / 'doc' / 'conf.py')],
        env={**os.environ, 'PYTHONPATH': str(tmp_path / 'stub')}, cwd=tmp_path,
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith('the Cython extensions of {} are not built (rbfly.'.format(
        tmp_path))
    assert done.stdout.endswith(': run scripts/setup.sh doc, or build the docs with'
                                ' scripts/docs.sh, which does\n')
