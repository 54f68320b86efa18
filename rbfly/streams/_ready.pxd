# cython: language_level=3
"""C API of :py:mod:`rbfly.streams._ready`."""

cpdef object ready(object value)
