"""
The Java stream client by its own perf tool and by rbfly's harness.

``python -m perf.official``; see :py:mod:`perf.official.bench`.
"""
