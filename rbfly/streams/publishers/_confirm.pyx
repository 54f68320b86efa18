# cython: language_level=3
"""
Bookkeeping of the messages a publisher waits to see confirmed.

A publisher keeps every unconfirmed message by its publishing id (to send
it again after a reconnection; an :py:class:`Unconfirmed`, in runs of
consecutive ids) and, for a caller awaiting a group of messages, the
group's :py:class:`Confirmation` under each of its ids (a dictionary).
Done in Python, filling and emptying them cost about 250 ns per message, a
quarter of what the client spends between a confirmation and the next
batch of 100 messages sent (measured: 10-byte AMQP messages, uvloop,
RabbitMQ 3.10); here the loops run in C.
"""

from cpython.dict cimport PyDict_SetItem
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from libc.stdint cimport uint64_t

from ...amqp._message cimport MessageCtx
from ..protocol._confirm_ids cimport ConfirmIds
from ..protocol._ids cimport id_int
from ..protocol._size cimport body_size
from ._unconfirmed cimport Unconfirmed, as_id

cdef class Confirmation:
    """
    Confirmation of a group of messages: its future is done when all were
    confirmed, or failed with the first error.

    :param future: Future the caller awaits.
    :param remaining: Number of messages in the group.
    """
    cdef public object future
    cdef public Py_ssize_t remaining

    def __init__(self, future: object, Py_ssize_t remaining) -> None:
        self.future = future
        self.remaining = remaining

    cpdef confirm(self):
        """One message of the group is confirmed."""
        self.remaining -= 1
        if self.remaining == 0 and not self.future.done():
            self.future.set_result(None)

    def fail(self, error: Exception) -> None:
        """The group fails with ``error`` (once)."""
        if not self.future.done():
            self.future.set_exception(error)

def explicit_ids(list messages, uint64_t first, Unconfirmed unconfirmed):
    """
    Publishing ids of messages when some carry their own
    (``MessageCtx.stream_publish_id``, as RbFly 0.10's
    ``stream_message_ctx(publish_id=...)`` sets): those use theirs, the
    others continue from the previous one. ``None`` when all ids are
    consecutive from ``first``.

    :raises ValueError: When an id repeats, or waits for confirmation
        already.
    """
    cdef Py_ssize_t i, k, n = PyList_GET_SIZE(messages)
    cdef object m
    for i in range(n):
        m = <object>PyList_GET_ITEM(messages, i)
        if type(m) is MessageCtx and (<MessageCtx>m).stream_publish_id:
            break
    else:
        return None

    cdef list ids = list(range(first, first + i))
    cdef uint64_t pid = first + i - 1
    for k in range(i, n):
        m = <object>PyList_GET_ITEM(messages, k)
        if type(m) is MessageCtx and (<MessageCtx>m).stream_publish_id:
            pid = (<MessageCtx>m).stream_publish_id
        else:
            pid += 1
        ids.append(pid)
    if len(set(ids)) != len(ids) or any(p in unconfirmed for p in ids):
        raise ValueError(
            'publishing ids must not repeat or be waiting for confirmation:'
            ' {}..{}'.format(min(ids), max(ids))
        )
    return ids

def track(
        Unconfirmed unconfirmed, dict waiting, list messages, uint64_t first,
        list ids, Confirmation confirmation,
):
    """
    Keep messages as unconfirmed under their publishing ids (``ids``, or
    consecutive from ``first`` when ``None``); with a confirmation, make it
    wait for each of them.
    """
    cdef Py_ssize_t i, n = PyList_GET_SIZE(messages)
    cdef object pid
    if ids is not None and PyList_GET_SIZE(ids) != n:
        raise ValueError('{} ids for {} messages'.format(len(ids), n))
    if ids is None:
        unconfirmed.add_run(first, messages)
    else:
        for i in range(n):
            unconfirmed[<object>PyList_GET_ITEM(ids, i)] = <object>PyList_GET_ITEM(messages, i)
    if confirmation is None:
        return
    for i in range(n):
        if ids is None:
            pid = id_int(first + <uint64_t>i)
        else:
            pid = <object>PyList_GET_ITEM(ids, i)
        PyDict_SetItem(waiting, pid, confirmation)

cdef bint count_off(dict waiting, object pid) except -1:
    """
    Count a confirmed id off the confirmation waiting for it, if any;
    return whether any confirmation still waits.
    """
    c = waiting.pop(pid, None)
    if c is not None:
        if type(c) is Confirmation:
            (<Confirmation>c).confirm()
        else:
            c.confirm()
    return len(waiting) != 0

def confirm(Unconfirmed unconfirmed, dict waiting, object publishing_ids):
    """
    Messages are confirmed: forget them, and count them off the
    confirmations waiting for them.

    Each id is looked up once in ``waiting`` (popped, not looked up and
    then deleted): the ids of a confirmation are other ``int`` objects
    than the dictionary's keys, and each lookup compares them by value.
    Counted by Callgrind (``python -m perf.instructions many``): a lookup
    and a deletion cost about 200 instructions a message more.

    :return: Body bytes of the messages forgotten (see
        :py:mod:`rbfly.streams.protocol._size`), for the pipelined publisher's
        window in bytes.
    """
    cdef object pid, m
    cdef uint64_t value
    cdef Py_ssize_t size = 0, i
    cdef ConfirmIds frame_ids
    # nothing adds to ``waiting`` in this loop but a confirmation of
    # another type (any code), after which it is looked at again
    cdef bint any_waiting = len(waiting) != 0
    if type(publishing_ids) is ConfirmIds:
        # a frame's ids, read as C integers: an int object is made per id
        # only for a caller waiting on ids
        frame_ids = <ConfirmIds> publishing_ids
        for i in range(frame_ids.n):
            value = frame_ids.at(i)
            # a missing message, or a None body, counts 0 bytes either way
            m = unconfirmed.take(value, None)
            if m is not None:
                size += body_size(m)
            if any_waiting:
                any_waiting = count_off(waiting, id_int(value))
        return size
    for pid in publishing_ids:
        m = unconfirmed.take(value, None) if as_id(pid, &value) else None
        if m is not None:
            size += body_size(m)
        if any_waiting:
            any_waiting = count_off(waiting, pid)
    return size
