"""
The report's tools: from the benchmarks' JSON results, the tables and the
figures of ``doc/perf.rst`` (``scripts/perf-report.sh`` runs them).

``python -m perf.report``
    the reST tables and the environment section (:py:mod:`perf.report.tables`)
``python -m perf.report.plot``
    the figures of the publishing, consuming and codec benchmarks
``python -m perf.report.workloads``
    the tables and figures of the workloads

They read JSON and write files, and never run a benchmark, so they import
no benchmark's package (only :py:mod:`perf.common.results`).
"""
