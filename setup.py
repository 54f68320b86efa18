"""
Build script: declares the Cython extensions only; metadata lives in
pyproject.toml.

Build switches (environment variables):

- ``RBFLY_ANNOTATE=1`` writes Cython's HTML annotation next to each ``.pyx``.
- ``RBFLY_DEBUG=1`` builds with bounds checks, ``-O0 -g`` and line tracing.
"""

import os

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
    'rbfly.streams.protocol._chunk',
    'rbfly.streams.publishers._confirm',
    'rbfly.streams.protocol._frames',
    'rbfly.streams.publishers._pipeline',
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

compile_args = ['-O0', '-g'] if DEBUG else ['-O2']
macros = [('CYTHON_TRACE_NOGIL', '1')] if DEBUG else []

extensions = [
    Extension(
        name,
        [name.replace('.', '/') + '.pyx'],
        include_dirs=['rbfly/_wire', 'rbfly/amqp'],
        extra_compile_args=compile_args,
        define_macros=macros,
    )
    for name in MODULES
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives=directives,
        annotate=ANNOTATE,
    ),
)
