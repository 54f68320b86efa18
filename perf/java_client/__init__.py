"""
The Java stream client on the workloads of the publishing and consuming
benchmarks, by rbfly's harness (``perf/java/StreamPerf.java``), run on its own.

``python -m perf.java_client``; see :py:mod:`perf.java_client.bench`.
"""
