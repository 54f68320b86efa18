"""
Compile rbfly's extension modules for aarch64 natively, with Debian's
cross-compiler, making the compiler calls setuptools made in an arm64 root
filesystem (``arm64_cross`` of ``scripts/lib/arm64.sh``).

Why: compiling the 16 extension modules with the root filesystem's own gcc,
emulated by qemu-user, took 1,185 s on the project's 2-core machine; the same
calls made by ``aarch64-linux-gnu-gcc`` (Debian's ``gcc-aarch64-linux-gnu``,
an x86-64 program) take seconds. setuptools still decides every flag: it runs
in the root filesystem, as for an emulated build, with a compiler that only
writes its calls down (``arm64_cross``'s ``cc``: its directory, then its
arguments, NUL-separated, one file a call). This script makes those calls
here, each with ``--sysroot`` the root filesystem, so that the headers (the
CPython's and glibc's) and the libraries linked are the root filesystem's,
and every absolute path of the call (an include directory, a source, an
output) is read under it.

Usage: python3 arm64_cross.py ROOT CALLS CC
    ROOT   the arm64 root filesystem
    CALLS  the directory of the calls written down
    CC     the cross-compiler (aarch64-linux-gnu-gcc)

The compilations (calls with ``-c``) run first, as many at once as there are
cores, then the links. Prints one line: how many of each, and the time.
"""

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

PATH_OPTIONS = ('-I', '-L', '-isystem', '-iquote', '-include', '-o', '')

def rooted(arg: str, root: str) -> str:
    """
    An argument of a call made in the root filesystem, as the host reads it.

    An absolute path, alone or glued to an option naming a directory or a
    file (``-I/usr/include/python3.13``), is put under ``root``; anything
    else (a flag, a relative path: the calls' own directory is rooted) is
    kept as it is.
    """
    for option in PATH_OPTIONS:
        if arg.startswith(option + '/'):
            return option + root + arg[len(option):]
    return arg

def read_call(path: Path) -> tuple[str, list[str]]:
    """A call written down: its directory and its arguments."""
    fields = path.read_bytes().split(b'\0')
    if fields[-1] == b'':
        fields.pop()
    if not fields:
        raise ValueError('{}: an empty call record'.format(path))
    cwd, *args = (f.decode() for f in fields)
    return cwd, args

def command(cc: str, root: str, args: list[str]) -> list[str]:
    """The host's command of a call: the cross-compiler, the sysroot, the arguments rooted."""
    return [cc, '--sysroot=' + root, *(rooted(a, root) for a in args)]

def run(cc: str, root: str, cwd: str, args: list[str]) -> None:
    cmd = command(cc, root, args)
    try:
        proc = subprocess.run(
            cmd, cwd=root + cwd, capture_output=True, text=True, check=False,
        )
    except OSError as ex:  # no such compiler, no such directory
        raise RuntimeError('{} (in {}) could not run: {}'.format(
            ' '.join(cmd), root + cwd, ex,
        )) from ex
    if proc.returncode != 0:
        raise RuntimeError('{} (in {}) failed with {}:\n{}'.format(
            ' '.join(cmd), root + cwd, proc.returncode, proc.stderr[-4000:],
        ))

def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(__doc__.split('Usage: ')[1].split('\n\n')[0], file=sys.stderr)
        return 2
    # absolute: each call runs in a directory of its own
    root, calls_dir, cc = os.path.abspath(argv[1]), Path(argv[2]), argv[3]
    try:
        calls = [read_call(p) for p in sorted(calls_dir.iterdir())]
    except (OSError, ValueError) as ex:
        print('arm64_cross.py: cannot read the calls written down: {}'.format(ex),
              file=sys.stderr)
        return 1
    compiles = [c for c in calls if '-c' in c[1]]
    links = [c for c in calls if '-c' not in c[1]]
    if not compiles or not links:
        print('arm64_cross.py: {} compilations and {} links written down in {}: '
              'setuptools made no build (see its log)'.format(
                  len(compiles), len(links), calls_dir), file=sys.stderr)
        return 1
    t = time.monotonic()
    try:
        for group in (compiles, links):
            with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
                for f in [pool.submit(run, cc, root, cwd, args) for cwd, args in group]:
                    f.result()
    except RuntimeError as ex:
        print('arm64_cross.py: {}'.format(ex), file=sys.stderr)
        return 1
    print('{} compilations and {} links by {} in {:.1f}s'.format(
        len(compiles), len(links), cc, time.monotonic() - t))
    return 0

if __name__ == '__main__':
    sys.exit(main(sys.argv))
