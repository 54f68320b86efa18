"""
The driver of the instruction counts (``python -m perf.instructions``):
it stages the checkout measured, runs the script
(:py:mod:`perf.instructions.measure`, the broker and the traced client)
under Callgrind in child processes, reads the counts, and reports the
instructions per message of each scenario.

The script is self-contained, and this module is not part of it: the
traced process runs the script's text only, so that what the driver does
changes nothing of what is counted.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import fcntl
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import typing as tp
from collections.abc import Sequence
from pathlib import Path

from perf.instructions import measure as script
from perf.instructions.measure import (
    CHUNK,
    MARK_START,
    MARK_STOP,
    PADS,
    SCENARIOS,
    JsonDict,
    log,
)

SCRIPT = Path(script.__file__).resolve()
"""The script the child processes run (staged, see :py:func:`stage`)."""

def cg_total(path: Path) -> int:
    """Instructions counted in a Callgrind output file (its ``summary``)."""
    with path.open() as f:
        for line in f:
            if line.startswith('summary:'):
                return int(line.split()[1])
    raise ValueError('no summary in {}'.format(path))

def per_message(counts: tuple[int, int], instructions: tuple[int, int]) -> float:
    """Instructions per message: what the second count costs beyond the first."""
    (n1, n2), (i1, i2) = counts, instructions
    if n2 <= n1:
        raise ValueError('the second count must be larger: {}, {}'.format(n1, n2))
    return (i2 - i1) / (n2 - n1)

def spread(values: Sequence[float]) -> float:
    """(max - min) / median, in percent."""
    return (max(values) - min(values)) / statistics.median(values) * 100

STAGE = Path(tempfile.gettempdir()) / 'rbfly-bench-instructions-{}'.format(os.getuid())
"""
Where the traced processes run from, whatever the checkout measured: see
:py:func:`stage`.
"""

@contextlib.contextmanager
def stage(root: Path) -> tp.Iterator[Path]:
    """
    Stage the checkout ``root`` at a fixed path, :py:data:`STAGE`: its
    ``rbfly`` (a symbolic link) and a copy of the script (:py:data:`SCRIPT`) in
    ``checkout``, their compiled modules in ``pycache``, locked for this
    run.

    The traced process's paths (of its modules, of its script, its
    command line) are strings of the process as all its objects are: the
    same code run from paths of other lengths lays out its memory
    otherwise, and counted 0.1-0.5% more or fewer instructions per
    message on 0cfd1c3. From the same path, two checkouts of the same
    code count the same.

    :raises RuntimeError: When another run uses the stage.
    """
    STAGE.mkdir(exist_ok=True)
    with (STAGE / 'lock').open('w') as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RuntimeError('another run uses {}'.format(STAGE)) from None
        checkout = STAGE / 'checkout'
        for path in (checkout, STAGE / 'pycache'):
            shutil.rmtree(path, ignore_errors=True)
        checkout.mkdir()
        (checkout / 'rbfly').symlink_to(root.resolve() / 'rbfly', target_is_directory=True)
        shutil.copyfile(SCRIPT, checkout / SCRIPT.name)
        yield checkout

class Driver:
    """
    Starts a broker and the traced client for each measurement.

    :param checkout: The staged checkout (:py:func:`stage`).
    :param loop: Event loop of the client (``asyncio`` or ``uvloop``).
    :param workdir: Directory of the Callgrind files.
    :param valgrind: The ``valgrind`` executable.
    """
    def __init__(
            self, checkout: Path, loop: str, workdir: Path, valgrind: str, otel: bool = False,
    ) -> None:
        self.checkout = checkout
        self.loop = loop
        self.otel = otel
        self.workdir = workdir
        self.valgrind = valgrind
        # the same environment in every run, wherever the script is run from
        self.env = {
            'PATH': os.environ.get('PATH', '/usr/bin:/bin'),
            'LC_ALL': 'C.UTF-8',
            'PYTHONHASHSEED': '0',
            'PYTHONPYCACHEPREFIX': str(STAGE / 'pycache'),
        }
        self.runs = 0

    def command(self, *args: str, pad: int = 0) -> list[str]:
        """This script's command, staged; ``pad``: see :py:data:`PADS`."""
        padding = ['--layout-pad', str(pad)] if pad else []
        otel = ['--otel'] if self.otel else []
        return [
            sys.executable, str(self.checkout / SCRIPT.name),
            '--root', str(self.checkout), '--loop', self.loop, *padding, *otel, *args,
        ]

    def run(self, command: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command, env=self.env, cwd=self.checkout, capture_output=True, text=True,
            check=False,
        )

    @contextlib.contextmanager
    def broker(self) -> tp.Iterator[str]:
        """A fake broker in a child process; its URL."""
        proc = subprocess.Popen(
            self.command('--serve'), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env=self.env, cwd=self.checkout, text=True,
        )
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            if not url:
                raise RuntimeError('the fake broker did not start')
            yield url
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def warm_up(self, names: Sequence[str]) -> None:
        """Each scenario once, natively: compiles the modules, checks the scenarios."""
        for name in names:
            with self.broker() as url:
                proc = self.run(self.command('--client', url, name, str(CHUNK)))
            if proc.returncode:
                raise RuntimeError('{} failed:\n{}{}'.format(name, proc.stdout, proc.stderr))

    def instructions(self, name: str, count: int, pad: int = 0) -> int:
        """Instructions of the scenario's loop with ``count`` messages."""
        self.runs += 1
        out = self.workdir / 'callgrind.{}.{}.{}.{}'.format(self.runs, name, count, pad)
        with self.broker() as url:
            proc = self.run([
                self.valgrind, '--tool=callgrind', '--callgrind-out-file={}'.format(out),
                '--dump-before={}'.format(MARK_START), '--dump-before={}'.format(MARK_STOP),
                *self.command('--client', url, name, str(count), pad=pad),
            ])
        if proc.returncode:
            raise RuntimeError('{} {} failed:\n{}{}'.format(name, count, proc.stdout, proc.stderr))
        # dumps 1 (up to the start) and 2 (the loop), and the end: one
        # call of each mark, as expected
        dumps = sorted(p.name for p in self.workdir.glob(out.name + '.*'))
        if dumps != [out.name + '.1', out.name + '.2']:
            raise RuntimeError('expected two dumps of {}, found {}'.format(out, dumps))
        return cg_total(out.with_name(out.name + '.2'))

class Counter(tp.Protocol):
    """What :py:func:`measure` needs of a :py:class:`Driver`."""
    def instructions(self, name: str, count: int, pad: int = 0) -> int: ...

def measure(
        driver: Counter, names: Sequence[str], layouts: int, repeat: int = 1,
        counts: tuple[int, int] | None = None,
) -> dict[str, JsonDict]:
    """
    Instructions per message of each scenario, in ``layouts`` layouts of
    the traced process's memory (:py:data:`PADS`), ``repeat`` times each.

    The figure of a scenario is the mean of its layouts' (each the median
    of its repeats): the same code counts up to 0.8% more or fewer
    instructions in one layout than in another, so a change of the code,
    which changes the layout too, is judged by the mean of a few.

    :param counts: The two message counts (default: each scenario's).
    """
    chosen = {name: counts or SCENARIOS[name].counts for name in names}
    results: dict[str, JsonDict] = {
        name: {'what': SCENARIOS[name].what, 'counts': list(chosen[name]), 'runs': []}
        for name in names
    }
    pads = PADS[:layouts]
    for r in range(repeat):
        for pad in pads:
            for name in names:
                n1, n2 = (driver.instructions(name, n, pad) for n in chosen[name])
                value = per_message(chosen[name], (n1, n2))
                results[name]['runs'].append({
                    'repeat': r + 1, 'layout_pad': pad, 'instructions': [n1, n2],
                    'per_message': value,
                })
                log('run {}/{}, layout {}: {}: {:,.1f} instructions a message'
                    ' ({:,} and {:,})'.format(r + 1, repeat, pad, name, value, n1, n2))
    for result in results.values():
        repeats = [
            [run['per_message'] for run in result['runs'] if run['layout_pad'] == pad]
            for pad in pads
        ]
        by_layout = [statistics.median(values) for values in repeats]
        result['layouts'] = dict(zip(map(str, pads), by_layout, strict=True))
        result['per_message'] = statistics.fmean(by_layout)
        result['layout_spread_pct'] = spread(by_layout)
        result['repeat_spread_pct'] = max(spread(values) for values in repeats)
    return results

def environment(root: Path, loop: str, valgrind: str) -> JsonDict:
    def out(*cmd: str) -> str | None:
        try:
            return subprocess.run(
                cmd, capture_output=True, text=True, check=True,
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None

    status = out('git', '-C', str(root), 'status', '--porcelain', '--untracked-files=no')
    return {
        'date': dt.datetime.now(dt.UTC).isoformat(timespec='seconds'),
        'commit': out('git', '-C', str(root), 'rev-parse', '--short', 'HEAD'),
        'dirty': bool(status) if status is not None else None,
        'root': str(root),
        'python': platform.python_version(),
        'valgrind': out(valgrind, '--version'),
        'loop': loop,
        'platform': platform.platform(),
    }

def table(results: dict[str, JsonDict]) -> str:
    """
    A line per scenario: the mean of the layouts, their spread, the
    largest spread of a layout's repeats, each layout's figure.
    """
    lines = ['{:<10} {:>11} {:>8} {:>8}  {}'.format(
        'scenario', 'instr/msg', 'layouts', 'repeats', 'each layout',
    )]
    for name, result in results.items():
        each = ', '.join('{:,.1f}'.format(v) for v in result['layouts'].values())
        lines.append('{:<10} {:>11,.1f} {:>7.2f}% {:>7.2f}%  {}'.format(
            name, result['per_message'], result['layout_spread_pct'],
            result['repeat_spread_pct'], each,
        ))
    return '\n'.join(lines)

def execute(args: argparse.Namespace) -> tuple[int, str, JsonDict | None]:
    """
    Run as the arguments say: the exit status, the text to print, and the
    results' document (``None`` in a child process, or when nothing ran).
    A child process (the dry run too) is the script's
    (:py:func:`perf.instructions.measure.execute`).
    """
    if args.client or args.serve or args.dry_run:
        return script.execute(args)
    root = args.root.resolve()
    valgrind = shutil.which(args.valgrind)
    if valgrind is None:
        log('valgrind not found: {}'.format(args.valgrind))
        return 2, '', None
    workdir = Path(tempfile.mkdtemp(prefix='rbfly-callgrind-'))
    try:
        with stage(root) as checkout:
            driver = Driver(checkout, args.loop, workdir, valgrind, args.otel)
            driver.warm_up(args.scenarios)
            results = measure(driver, args.scenarios, args.layouts, args.repeat, args.counts)
    finally:
        if args.keep:
            log('Callgrind files kept in {}'.format(workdir))
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    env = environment(root, args.loop, valgrind)
    text = 'rbfly {}{}{}, Python {}, {}, {} loop; mean of {} layout(s), {} run(s) each\n{}'.format(
        env['commit'] or env['root'], ' (modified)' if env['dirty'] else '',
        ', instrumented (--otel)' if args.otel else '', env['python'],
        env['valgrind'], env['loop'], args.layouts, args.repeat, table(results),
    )
    doc = {
        'env': env, 'otel': args.otel,
        'layout_pads': list(PADS[:args.layouts]), 'repeat': args.repeat,
        'scenarios': results,
    }
    return 0, text, doc

__all__ = [
    'SCRIPT', 'STAGE', 'Counter', 'Driver', 'cg_total', 'environment', 'execute', 'measure',
    'per_message', 'spread', 'stage', 'table',
]
