"""
The floor of a Python client per message, without a broker.

``python -m perf.floor``; see :py:mod:`perf.floor.bench`.
"""
