# cython: language_level=3
"""
The messages a publisher sent and waits to see confirmed, by publishing id.

A publisher keeps each message until the broker confirms it, to send it
again after a reconnection. Its ids are consecutive but for the rare
message with an id of its own, and the broker confirms them mostly in
order; so they are kept in runs of consecutive ids, a list of messages
each, not in a dictionary. Confirming a message is then an index into the
oldest run: no hashing, no comparing ``int`` objects by value, no entry
made per message (a run takes the publisher's batch as it is sent), and no
dictionary growing and shrinking as the ids slide through it. Counted by
Callgrind (``python -m perf.instructions many``), the dictionary cost the
pipelined publisher about 700 instructions a message, half of what it
spent.

:py:class:`Unconfirmed` reads like a dictionary of messages by id (``in``,
``[]``, ``pop``, iteration in order of the ids), so the publishers' Python
code and tests use it as they did the dictionary; the C paths
(``_confirm``, ``_pipeline``) use its C methods.
"""

from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_GetSlice, PyList_SET_ITEM
from cpython.ref cimport Py_DECREF, Py_INCREF
from libc.stdint cimport uint64_t

from ..protocol._ids cimport id_int

# the slot of a message no longer kept (a message may be None)
cdef object GONE = object()
cdef object MISSING = object()

cdef class Run:
    """Messages of consecutive publishing ids."""

    def __cinit__(self, uint64_t first, list messages not None):
        self.first = first
        self.messages = messages
        self.live = PyList_GET_SIZE(messages)

cdef class Unconfirmed:
    """
    Messages sent and not confirmed yet, by publishing id (see the
    module's description).
    """

    def __cinit__(self):
        self._runs = []
        self._head = 0
        self.count = 0

    #
    # the C paths
    #

    cdef int add_run(self, uint64_t first, list messages) except -1:
        """
        Keep messages of the ids ``first``, ``first + 1``, ... (the list
        is copied: the caller keeps its own).
        """
        cdef Py_ssize_t i, n = PyList_GET_SIZE(messages)
        cdef Run last
        if n == 0:
            return 0
        if self.count:
            last = <Run> PyList_GET_ITEM(self._runs, PyList_GET_SIZE(self._runs) - 1)
            # the newest run's last id, not the one after it: that would
            # wrap to 0 after an id of 2**64 - 1
            if first <= last.first + <uint64_t> (PyList_GET_SIZE(last.messages) - 1):
                # ids before the newest ones (a message's own id came
                # earlier): one at a time
                for i in range(n):
                    self.put(first + <uint64_t> i, <object> PyList_GET_ITEM(messages, i))
                return 0
        else:
            self._runs = []
            self._head = 0
        self._runs.append(Run(first, PyList_GetSlice(messages, 0, n)))
        self.count += n
        return 0

    cdef int put(self, uint64_t pid, object message) except -1:
        """Keep a message under its id (in place of the one kept there)."""
        cdef Py_ssize_t i = self.find(pid), lo, hi, mid, size
        cdef uint64_t last_id
        cdef Run r
        cdef object old
        if i >= 0:
            r = <Run> PyList_GET_ITEM(self._runs, i)
            old = r.messages[<Py_ssize_t> (pid - r.first)]
            r.messages[<Py_ssize_t> (pid - r.first)] = message
            if old is GONE:
                r.live += 1
                self.count += 1
            return 0
        if not self.count:
            self._runs = []
            self._head = 0
        size = PyList_GET_SIZE(self._runs)
        if size > self._head:
            r = <Run> PyList_GET_ITEM(self._runs, size - 1)
            last_id = r.first + <uint64_t> (PyList_GET_SIZE(r.messages) - 1)
            if last_id != <uint64_t> -1 and pid == last_id + 1:
                r.messages.append(message)  # the next id of the newest run
                r.live += 1
                self.count += 1
                return 0
        # the first run after the id: a run of its own before it
        lo = self._head
        hi = size
        while lo < hi:
            mid = (lo + hi) // 2
            if (<Run> PyList_GET_ITEM(self._runs, mid)).first < pid:
                lo = mid + 1
            else:
                hi = mid
        self._runs.insert(lo, Run(pid, [message]))
        self.count += 1
        return 0

    cdef Py_ssize_t find(self, uint64_t pid):
        """Index of the run holding id ``pid`` (kept or gone), or -1."""
        cdef Py_ssize_t size = PyList_GET_SIZE(self._runs)
        cdef Py_ssize_t lo = self._head, hi = size - 1, mid
        cdef Run r
        if lo > hi:
            return -1
        # the oldest run, where confirmations come; then the newest
        r = <Run> PyList_GET_ITEM(self._runs, lo)
        if pid - r.first < <uint64_t> PyList_GET_SIZE(r.messages):
            return lo
        if pid < r.first:
            return -1
        r = <Run> PyList_GET_ITEM(self._runs, hi)
        if pid - r.first < <uint64_t> PyList_GET_SIZE(r.messages):
            return hi
        while lo <= hi:
            mid = (lo + hi) // 2
            r = <Run> PyList_GET_ITEM(self._runs, mid)
            if pid < r.first:
                hi = mid - 1
            elif pid - r.first >= <uint64_t> PyList_GET_SIZE(r.messages):
                lo = mid + 1
            else:
                return mid
        return -1

    cdef object take(self, uint64_t pid, object default):
        """Forget the message of id ``pid`` and return it (``default`` when none is kept)."""
        cdef Py_ssize_t i = self._head
        cdef Py_ssize_t k
        cdef Run r
        cdef object m
        if i >= PyList_GET_SIZE(self._runs):
            return default
        # the oldest run first, where confirmations come (find() looks
        # there too, at the cost of a call a message)
        r = <Run> PyList_GET_ITEM(self._runs, i)
        if pid - r.first >= <uint64_t> PyList_GET_SIZE(r.messages):
            i = self.find(pid)
            if i < 0:
                return default
            r = <Run> PyList_GET_ITEM(self._runs, i)
        k = <Py_ssize_t> (pid - r.first)
        m = <object> PyList_GET_ITEM(r.messages, k)
        if m is GONE:
            return default
        # the list's reference to the message goes (m holds one of its own)
        Py_INCREF(GONE)
        PyList_SET_ITEM(r.messages, k, GONE)
        Py_DECREF(m)
        r.live -= 1
        self.count -= 1
        if r.live == 0:
            self.drop_run(i)
        return m

    cdef void drop_run(self, Py_ssize_t i):
        """Forget a run whose messages are all gone."""
        cdef Py_ssize_t size
        if self.count == 0:
            self._runs = []
            self._head = 0
        elif i == self._head:
            # the oldest, as confirmations come: its slot is let go of now,
            # and the list compacted once the gone runs are half of it
            self._runs[i] = None
            self._head += 1
            size = PyList_GET_SIZE(self._runs)
            if self._head >= 64 and self._head * 2 >= size:
                del self._runs[:self._head]
                self._head = 0
        else:
            del self._runs[i]

    #
    # a dictionary's reading, for the publishers' Python code
    #

    def __len__(self) -> int:
        return self.count

    def __contains__(self, pid: object) -> bool:
        return self.lookup(pid, MISSING) is not MISSING

    def __getitem__(self, pid: object) -> object:
        m = self.lookup(pid, MISSING)
        if m is MISSING:
            raise KeyError(pid)
        return m

    def __setitem__(self, pid: int, message: object) -> None:
        cdef uint64_t value
        if not as_id(pid, &value):
            raise ValueError(
                'a publishing id is an int from 0 to 2**64 - 1, not {!r}'.format(pid)
            )
        self.put(value, message)

    def __delitem__(self, pid: object) -> None:
        cdef uint64_t value
        if not as_id(pid, &value) or self.take(value, MISSING) is MISSING:
            raise KeyError(pid)

    def __iter__(self):
        return iter(self.keys())

    def get(self, pid: object, default: object = None) -> object:
        """The message of id ``pid``, or ``default``."""
        return self.lookup(pid, default)

    cdef object lookup(self, object pid, object default):
        """The message of id ``pid`` (any object), or ``default``."""
        cdef uint64_t value
        if not as_id(pid, &value):
            return default
        cdef Py_ssize_t i = self.find(value)
        if i < 0:
            return default
        cdef Run r = <Run> PyList_GET_ITEM(self._runs, i)
        m = <object> PyList_GET_ITEM(r.messages, value - r.first)
        return default if m is GONE else m

    def pop(self, pid: object, default: object = MISSING) -> object:
        """
        Forget the message of id ``pid`` and return it; ``default`` when
        none is kept.

        :raises KeyError: When none is kept, and no ``default`` is given.
        """
        cdef uint64_t value
        m = self.take(value, MISSING) if as_id(pid, &value) else MISSING
        if m is MISSING:
            if default is MISSING:
                raise KeyError(pid)
            return default
        return m

    def items(self) -> list[tuple[int, object]]:
        """The ids and messages kept, in order of the ids."""
        cdef list result = []
        cdef Run r
        cdef Py_ssize_t i, k
        for i in range(self._head, PyList_GET_SIZE(self._runs)):
            r = <Run> PyList_GET_ITEM(self._runs, i)
            for k in range(PyList_GET_SIZE(r.messages)):
                m = <object> PyList_GET_ITEM(r.messages, k)
                if m is not GONE:
                    result.append((id_int(r.first + <uint64_t> k), m))
        return result

    def keys(self) -> list[int]:
        """The ids kept, in order."""
        return [pid for pid, _ in self.items()]

    def values(self) -> list[object]:
        """The messages kept, in order of their ids."""
        return [m for _, m in self.items()]

    def clear(self) -> None:
        """Forget every message."""
        self._runs = []
        self._head = 0
        self.count = 0

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Unconfirmed):
            return self.items() == other.items()
        if isinstance(other, dict):
            return dict(self.items()) == other
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        return 'Unconfirmed({!r})'.format(dict(self.items()))
