"""
Coverage-guided fuzzing of every decoder that takes bytes from the network.

:py:mod:`fuzz.targets` holds one target function per decoder, usable
without a fuzzer (the unit tests replay the corpora through them);
:py:mod:`fuzz.run` runs one of them under atheris (libFuzzer);
:py:mod:`fuzz.seeds` writes the seed corpora from rbfly's own encoders.
``scripts/fuzz.sh`` runs them all.
"""
