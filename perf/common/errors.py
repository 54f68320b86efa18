"""
The failures of a benchmark and the exit status each gives: the shared
``main()`` (:py:mod:`perf.common.cli`) logs a :py:class:`BenchmarkError`
and exits with its :py:attr:`~BenchmarkError.exit_code`, so a script
running the benchmarks (``scripts/test.sh``) tells a wrong result (2) from
a benchmark that could not run (3).

At import time this module needs the standard library only (a child
process in the RbFly 0.10 venv imports it).
"""

from __future__ import annotations

EXIT_VERIFY = 2   # a run published or received something else than expected
EXIT_USAGE = 3    # a benchmark (or a peer it needs) cannot run here


class BenchmarkError(Exception):
    """A benchmark stops: it says why and exits with :py:attr:`exit_code`."""

    exit_code = 1


class SkipImplementation(BenchmarkError):
    """
    An implementation cannot be run here (not installed, no broker, ...);
    a benchmark skips it, or stops when it needs it.
    """

    exit_code = EXIT_USAGE


class VerificationError(BenchmarkError):
    """A run did not publish or receive the expected messages (or bodies)."""

    exit_code = EXIT_VERIFY
