# cython: language_level=3
"""
Publishing ids as ``int`` objects, for the Publish path's C loops
(``rbfly.streams.protocol._frames``, ``rbfly.streams.publishers._confirm``).
"""

from cpython.long cimport PyLong_FromLongLong, PyLong_FromUnsignedLongLong
from libc.limits cimport LLONG_MAX
from libc.stdint cimport uint64_t

cdef inline object id_int(uint64_t value):
    """
    A publishing id as an ``int``: an id below 2**30 is made by CPython
    3.11's one-digit fast path of ``PyLong_FromLongLong``;
    ``PyLong_FromUnsignedLongLong`` has none before 3.12 (about 95
    instructions an id; Callgrind, ``python -m perf.instructions many``).
    """
    if value <= <uint64_t> LLONG_MAX:
        return PyLong_FromLongLong(<long long> value)
    return PyLong_FromUnsignedLongLong(value)
