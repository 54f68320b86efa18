"""
Concurrent senders: many tasks publishing on one publisher.

``python -m perf.concurrent``; see :py:mod:`perf.concurrent.bench`.
"""
