"""
What the benchmarks of ``perf/`` share; a benchmark's own modules live in
its folder (``perf/publish/``, ...), and never import another benchmark's.

:py:mod:`perf.common.cli`
    the one ``main()`` of every benchmark and its common options
:py:mod:`perf.common.errors`
    the failures of a benchmark and their exit status
:py:mod:`perf.common.child`
    the RbFly 0.10 venv and a benchmark's run in a child process
:py:mod:`perf.common.results`
    environment metadata, rates, ratios, text tables, JSON
:py:mod:`perf.common.streams`
    the broker, the event loop, one measured run, the targets
:py:mod:`perf.common.scenarios`
    the publishing and consuming scenarios, and their message counts
:py:mod:`perf.common.raw`
    the minimal clients of the ``ceiling`` lines
:py:mod:`perf.common.java`
    rbfly's Java harness (``perf/java/StreamPerf.java``)
:py:mod:`perf.common.tool`
    the Java client's own perf tool
:py:mod:`perf.common.kafka`
    the Kafka broker of the aiokafka runs
"""

from pathlib import Path

PERF_DIR = Path(__file__).resolve().parents[1]
"""``perf/``: its ``.venv-rbfly010``, ``.java`` and ``results`` stay here."""
ROOT = PERF_DIR.parent
"""The work tree: the ``perf`` package is imported from here."""
