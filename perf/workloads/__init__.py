"""
The workloads users run: message sizes, many publishers, latency at a fixed
load, a slow application, compression; against the peers.

``python -m perf.workloads``; see :py:mod:`perf.workloads.bench`.
"""
