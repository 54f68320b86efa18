"""
The consuming benchmark: a stream read from its first offset, against the peers.

``python -m perf.consume``; see :py:mod:`perf.consume.bench`.
"""
