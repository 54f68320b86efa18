"""
The cost of serializers per message, beside the plain path.

``python -m perf.serializers``; see :py:mod:`perf.serializers.bench`.
"""
