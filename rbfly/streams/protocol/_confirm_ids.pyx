# cython: language_level=3
"""
The publishing ids of a PublishConfirm frame, read where they arrived.

A confirmation's ids were a tuple of ``int`` objects, made as the frame
was decoded, and taken apart again by the publisher, which keeps its
messages by C integer ids (``rbfly.streams.publishers._unconfirmed``):
about 180 instructions a message of the 745 the client spent publishing
with ``send_many`` (Callgrind, ``python -m perf.instructions many``).
:py:class:`ConfirmIds` keeps the frame's bytes instead (one copy) and
reads an id when asked: the publisher's C loop reads them as C integers,
and Python code sees a sequence of ``int`` (``len``, indexing,
iteration, equal to a tuple or list of the same ids), as before.
"""

from collections.abc import Sequence

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize

from ._ids cimport id_int

cdef class ConfirmIds:
    """
    Publishing ids of a confirmation: a sequence of ``int``, read from
    the frame's bytes as asked.
    """

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index):
        cdef Py_ssize_t i
        if isinstance(index, slice):
            return tuple(self)[index]
        i = index
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError('confirmation id index out of range')
        return id_int(self.at(i))

    def __iter__(self):
        cdef Py_ssize_t i
        for i in range(self.n):
            yield id_int(self.at(i))

    def __contains__(self, value: object) -> bool:
        return value in tuple(self)

    def __reversed__(self):
        return reversed(tuple(self))

    def index(self, value: object, *args: int) -> int:
        return tuple(self).index(value, *args)

    def count(self, value: object) -> int:
        return tuple(self).count(value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ConfirmIds):
            return (<ConfirmIds> other)._data == self._data
        if isinstance(other, (tuple, list)):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return 'ConfirmIds({!r})'.format(tuple(self))

    def __reduce__(self):
        return (tuple, (tuple(self),))

Sequence.register(ConfirmIds)

cdef ConfirmIds confirm_ids(const unsigned char *p, Py_ssize_t count):
    """The ``count`` ids at ``p`` (8 big-endian bytes each), copied."""
    cdef ConfirmIds ids = ConfirmIds.__new__(ConfirmIds)
    ids._data = PyBytes_FromStringAndSize(<const char *> p, 8 * count)
    ids._p = <const unsigned char *> PyBytes_AS_STRING(ids._data)
    ids.n = count
    return ids
