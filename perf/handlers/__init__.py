"""Concurrent handlers: ``python -m perf.handlers`` (see :py:mod:`perf.handlers.bench`)."""
