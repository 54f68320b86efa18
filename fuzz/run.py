"""
Run one fuzz target under atheris (libFuzzer)::

    python -m fuzz.run TARGET [libFuzzer options] [corpus folders]

rbfly's Python modules and the targets are instrumented for coverage as
they are imported. The Cython modules are C: built as usual, the fuzzer
sees no coverage inside them and mutates blindly there, guided only by the
Python code around them. With ``RBFLY_FUZZ_GCC_COV`` naming a folder that
holds a copy of rbfly built with ``-fsanitize-coverage=trace-pc,trace-cmp``
and ``libgcccov.so`` (``fuzz/gcc_cov.c``; ``scripts/fuzz.sh --gcc-cov``
makes both), their basic blocks and comparisons guide it too.
``scripts/fuzz.sh`` runs all the targets.
"""

import ctypes
import logging
import os
import sys
from pathlib import Path

GCC_COV = os.environ.get('RBFLY_FUZZ_GCC_COV')
shim: ctypes.CDLL | None = None
if GCC_COV:
    # first, with RTLD_GLOBAL: the instrumented modules bind to its
    # __sanitizer_cov_trace_pc, not to libFuzzer's, which does nothing
    shim = ctypes.CDLL(str(Path(GCC_COV) / 'libgcccov.so'), mode=os.RTLD_NOW | os.RTLD_GLOBAL)
    sys.path.insert(0, str(Path(GCC_COV).resolve()))

import atheris  # noqa: E402 - after the coverage shim

with atheris.instrument_imports(include=['rbfly', 'fuzz']):
    from fuzz.targets import TARGETS, Target

def gcc_coverage(shim: ctypes.CDLL) -> None:
    """
    Give the libFuzzer atheris loaded the counters of the GCC-instrumented
    modules, and forward their comparisons to it.
    """
    # atheris.Setup loaded its core, libFuzzer with it, not as a module
    with open('/proc/self/maps') as maps:
        path = next(
            line.split()[-1] for line in maps if 'atheris/core_with_libfuzzer' in line
        )
    if shim.rbfly_cov_bind(path.encode()) != 0:
        sys.exit('fuzz.run: no libFuzzer comparison hooks in {}'.format(path))
    libfuzzer = ctypes.CDLL(path)
    size = shim.rbfly_cov_size()
    shim.rbfly_cov_counters.restype = ctypes.c_void_p
    shim.rbfly_cov_pcs.restype = ctypes.c_void_p
    counters = shim.rbfly_cov_counters()
    pcs = shim.rbfly_cov_pcs()
    word = ctypes.sizeof(ctypes.c_void_p)
    libfuzzer.__sanitizer_cov_8bit_counters_init(
        ctypes.c_void_p(counters), ctypes.c_void_p(counters + size),
    )
    libfuzzer.__sanitizer_cov_pcs_init(
        ctypes.c_void_p(pcs), ctypes.c_void_p(pcs + 2 * size * word),
    )

def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit('usage: python -m fuzz.run TARGET [libFuzzer options] [corpus folders]'
                 '\ntargets: {}'.format(' '.join(TARGETS)))
    import rbfly
    # the decoders log what they skip (a chunk's record decoded with
    # on_decode_error='skip' warns): a line per input, not a finding
    logging.disable(logging.CRITICAL)
    print('INFO: rbfly from {}'.format(Path(rbfly.__file__).parent), file=sys.stderr)
    target = TARGETS[sys.argv[1]]
    if shim is not None:
        target = with_gcc_coverage(shim, target)
    atheris.Setup([sys.argv[0], *sys.argv[2:]], target)
    atheris.Fuzz()

def with_gcc_coverage(shim: ctypes.CDLL, target: Target) -> Target:
    """
    The target, registering the GCC coverage at its first call: atheris
    loads libFuzzer in ``Fuzz``, which runs the fuzzer at once (libFuzzer
    takes modules of counters while it runs, as atheris' own).
    """
    registered = False

    def wrapper(data: bytes) -> None:
        nonlocal registered
        if not registered:
            gcc_coverage(shim)
            registered = True
        target(data)

    return wrapper

if __name__ == '__main__':
    main()
