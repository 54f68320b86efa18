"""
The publishing benchmark: single messages, batches, pipelined, against the peers.

``python -m perf.publish``; see :py:mod:`perf.publish.bench`.
"""
