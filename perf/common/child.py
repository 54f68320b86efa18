"""
A benchmark's run in a child process: RbFly 0.10 in its own venv
(``perf/.venv-rbfly010``, with uvloop), or rbfly in a process of its own
(``--isolate``), one measurement at a time.

The parent runs the benchmark's package (``python -m perf.publish``) with
the venv's Python and ``--child --json FILE`` (:py:func:`run_child`); the
child runs one measurement, writes its result and the rbfly it measured to
``FILE`` (:py:func:`child_main`, called by the shared ``main()``), and the
parent checks that it measured the rbfly it asked for.

The child must import the venv's rbfly, never the work tree's, though
``perf`` lives in the work tree beside ``rbfly/``: it runs with ``-I`` (no
``PYTHONPATH``, no user site-packages, no current directory on
``sys.path``) in a temporary directory, and the work tree is put on
``sys.path`` after site-packages (:py:func:`module_command`), so ``perf``
is found there and ``rbfly`` in the venv.  At import time this module, and
every module a child imports, needs the standard library only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from perf.common import PERF_DIR, ROOT, streams
from perf.common.errors import SkipImplementation, VerificationError
from perf.common.results import JsonDict, env_metadata, log, write_json
from perf.common.streams import (
    BASELINE,
    BASELINE_VERSION,
    loop_info,
    rbfly_module_info,
    run_async,
)

BASELINE_REQUIREMENTS = ('rbfly==0.10.0', 'uvloop>=0.19')
BASELINE_PYTHON = 'python3.11'
BASELINE_VENV = PERF_DIR / '.venv-rbfly010'

BOOT = (
    'import runpy, sys; sys.path.append({root!r});'
    ' runpy.run_module({module!r}, run_name="__main__", alter_sys=True)'
)
"""``python -m module`` with the work tree last on ``sys.path``."""


def module_command(python: Path, module: str) -> list[str]:
    """
    The command line running a benchmark's package (``perf.publish``) as
    ``python -m`` does, with another Python and without the work tree's
    rbfly (see the module's documentation); arguments follow it.
    """
    return [str(python), '-I', '-c', BOOT.format(root=str(ROOT), module=module)]


def _run(cmd: Sequence[str | Path], timeout: float) -> tuple[int, str]:
    try:
        p = subprocess.run(
            [str(c) for c in cmd], capture_output=True, text=True, timeout=timeout,
            cwd=tempfile.gettempdir(), check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as ex:
        raise SkipImplementation('cannot run {}: {}'.format(cmd[0], ex)) from ex
    return p.returncode, (p.stdout + p.stderr).strip()


def baseline_python() -> Path:
    """
    Python of the RbFly 0.10 venv, with rbfly 0.10.0 and uvloop installed
    (the venv is created on first use; every benchmark shares it).
    """
    python = BASELINE_VENV / 'bin' / 'python'
    if not python.exists():
        log('{}: creating {} with {}'.format(BASELINE, BASELINE_VENV, BASELINE_PYTHON))
        rc, out = _run([BASELINE_PYTHON, '-m', 'venv', BASELINE_VENV], 300)
        if rc != 0 or not python.exists():
            raise SkipImplementation('cannot create {}: {}'.format(BASELINE_VENV, out[-500:]))
    check = (
        'import importlib.metadata as m, importlib.util as u;'
        'print(m.version("rbfly"), u.find_spec("uvloop") is not None)'
    )
    rc, out = _run([python, '-E', '-s', '-c', check], 60)
    if rc != 0 or out.split() != [BASELINE_VERSION, 'True']:
        log('{}: installing {} into {}'.format(
            BASELINE, ' '.join(BASELINE_REQUIREMENTS), BASELINE_VENV,
        ))
        rc, out = _run([
            python, '-E', '-s', '-m', 'pip', 'install', '--quiet',
            '--disable-pip-version-check', *BASELINE_REQUIREMENTS,
        ], 1200)
        if rc != 0:
            raise SkipImplementation('cannot install {}: {}'.format(
                ' '.join(BASELINE_REQUIREMENTS), out[-500:],
            ))
    return python


async def run_child(
        python: Path, module: str, args: Sequence[str], timeout: float,
        expect_version: str | None = None,
) -> JsonDict:
    """
    Run a benchmark's package (``module``, e.g. ``perf.publish``) in child
    mode with another Python (for example the RbFly 0.10 venv's) and
    return the JSON document of :py:func:`child_main`.

    The child cannot import the work tree's rbfly (see the module's
    documentation); it must report ``expect_version`` of rbfly, imported
    from the venv of ``python``.
    """
    with tempfile.TemporaryDirectory(prefix='rbfly-perf-') as tmp:
        out = Path(tmp) / 'child.json'
        proc = await asyncio.create_subprocess_exec(
            *module_command(python, module), '--child', '--json', str(out), *args,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            cwd=tempfile.gettempdir(),
        )
        try:
            output, _ = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise
        text = output.decode(errors='replace').strip()
        return _child_result(proc.returncode, text, out, expect_version)


def _child_result(
        returncode: int | None, text: str, out: Path, expect_version: str | None,
) -> JsonDict:
    if returncode == VerificationError.exit_code:
        raise VerificationError('child: {}'.format(text[-2000:]))
    if returncode != 0 or not out.exists():
        raise SkipImplementation('child failed (exit {}): {}'.format(returncode, text[-2000:]))
    doc: JsonDict = json.loads(out.read_text(encoding='utf-8'))
    if expect_version is not None:
        prefix = Path(doc['env']['python']['prefix']).resolve()
        module = Path(doc['rbfly_file'] or '/').resolve()
        if doc['rbfly_version'] != expect_version or not module.is_relative_to(prefix):
            raise VerificationError(
                'child measured rbfly {} from {}, expected {} from {}'.format(
                    doc['rbfly_version'], module, expect_version, prefix,
                )
            )
    return doc


def child_main(
        args: argparse.Namespace, run: Callable[[], Awaitable[JsonDict]],
        packages: Sequence[str],
) -> int:
    """
    The child's side: one run of the importable rbfly on ``args.loop``,
    the broker's process passed by the parent (``--broker-pid``); writes
    the result, the rbfly measured (its version and file, which the parent
    checks) and the environment (the versions of ``packages``) to
    ``args.json``.
    """
    streams.BROKER_PID = args.broker_pid or None
    version, module = rbfly_module_info()
    result = run_async(run, args.loop)
    write_json(args.json, {
        'rbfly_version': version,
        'rbfly_file': module,
        'loop': loop_info(args.loop),
        'env': env_metadata(packages),
        'result': result,
    })
    return 0
