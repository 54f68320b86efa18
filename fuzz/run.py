"""
Run one fuzz target under atheris (libFuzzer)::

    python -m fuzz.run TARGET [libFuzzer options] [corpus folders]

rbfly's Python modules and the targets are instrumented for coverage as
they are imported; the Cython modules are C, compiled without coverage
instrumentation (that needs clang's ``-fsanitize=fuzzer-no-link``), so
inside them the fuzzer mutates blindly, guided only by the Python code
around them. ``scripts/fuzz.sh`` runs all the targets.
"""

import sys

import atheris

with atheris.instrument_imports(include=['rbfly', 'fuzz']):
    from fuzz.targets import TARGETS

def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit('usage: python -m fuzz.run TARGET [libFuzzer options] [corpus folders]'
                 '\ntargets: {}'.format(' '.join(TARGETS)))
    target = TARGETS[sys.argv[1]]
    atheris.Setup([sys.argv[0], *sys.argv[2:]], target)
    atheris.Fuzz()

if __name__ == '__main__':
    main()
