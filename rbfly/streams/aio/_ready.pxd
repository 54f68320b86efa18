# cython: language_level=3
"""C API of :py:mod:`rbfly.streams.aio._ready`."""

cpdef object ready(object value)
