"""
Build script: declares the Cython extensions only; metadata lives in
pyproject.toml.

Build switches (environment variables):

- ``RBFLY_ANNOTATE=1`` writes Cython's HTML annotation next to each ``.pyx``.
- ``RBFLY_DEBUG=1`` builds with bounds checks, ``-O0 -g`` and line tracing.
- ``RBFLY_STRIP=0`` keeps debug information and symbols. By default (not
  with ``RBFLY_DEBUG=1``) the extensions are built with ``-g0`` (after
  Python's own ``-g``) and linked stripped on Linux (``-s``), so that
  ``pip install .`` builds a wheel of about 0.8 MB instead of 3.1 MB
  (scripts/wheel.sh and cibuildwheel also strip when repairing).
"""

import os
import sys

from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get('RBFLY_DEBUG') == '1'
ANNOTATE = os.environ.get('RBFLY_ANNOTATE') == '1'

MODULES = [
    'rbfly._wire._buffer',
    'rbfly.amqp._encoder',
    'rbfly.amqp._decoder',
    'rbfly.amqp._message',
    'rbfly.amqp._sections',
    'rbfly.streams.subscriptions._bodies',
    'rbfly.streams.subscriptions._cursor',
    'rbfly.streams.protocol._chunk',
    'rbfly.streams.publishers._unconfirmed',
    'rbfly.streams.publishers._confirm',
    'rbfly.streams.protocol._confirm_ids',
    'rbfly.streams.protocol._frames',
    'rbfly.streams.publishers._pipeline',
    'rbfly.streams.publishers._hash',
    'rbfly.streams.protocol._publish',
    'rbfly.streams.aio._ready',
]

directives = {
    'language_level': 3,
    'boundscheck': DEBUG,
    'wraparound': False,
    'initializedcheck': DEBUG,
    'cdivision': True,
    'embedsignature': True,
    'linetrace': DEBUG,
}

def build_flags(
        environ: 'os._Environ[str] | dict[str, str]', platform: str,
) -> tuple[list[str], list[str]]:
    """
    The compiler's and the linker's arguments of each extension.

    Not debugging, the extensions are stripped unless ``RBFLY_STRIP=0``:
    ``-g0`` (after Python's own ``-g``) and, on Linux, ``-s`` (Apple's
    linker deprecates it; Windows' compiler takes neither).
    """
    debug = environ.get('RBFLY_DEBUG') == '1'
    strip = not debug and environ.get('RBFLY_STRIP', '1') != '0'
    compile_args = ['-O0', '-g'] if debug else ['-O2']
    if strip and platform != 'win32':
        compile_args.append('-g0')
    link_args = ['-s'] if strip and platform.startswith('linux') else []
    return compile_args, link_args

compile_args, link_args = build_flags(os.environ, sys.platform)
macros = [('CYTHON_TRACE_NOGIL', '1')] if DEBUG else []

extensions = [
    Extension(
        name,
        [name.replace('.', '/') + '.pyx'],
        include_dirs=['rbfly/_wire', 'rbfly/amqp'],
        extra_compile_args=compile_args,
        extra_link_args=link_args,
        define_macros=macros,
    )
    for name in MODULES
]

# run as a script (setuptools' build backend runs it so too); a test
# imports it for build_flags()
if __name__ == '__main__':
    setup(
        ext_modules=cythonize(
            extensions,
            compiler_directives=directives,
            annotate=ANNOTATE,
        ),
    )
