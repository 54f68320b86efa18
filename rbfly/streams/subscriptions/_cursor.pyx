# cython: language_level=3
"""
A message iterator's cursor: the chunk at hand, how many of its messages
were handed out, and the messages processed and not reported yet. A part
of the reader's progress (:py:mod:`rbfly.streams.subscriptions.progress`,
its one owner), which cuts it at a hand-off and pulls what it holds back
before storing an offset; the compiled message iterator (``_bodies``)
reads and moves it in C, a few field accesses a message.

A message counts as processed when the next one is asked for (see
:py:mod:`rbfly.streams.subscriptions.tracking`). Processed messages are
counted here and reported in batches, as many as the tracker can wait for
(``report`` returns how many may be held back next), at the end of each
chunk, and when the progress pulls them: a report per message would cost
a Python call each.
"""

from ...amqp._message cimport MessageCtx

from .chunk import Chunk

cdef class Cursor:
    """
    The chunk at hand of a message iterator.

    :param report: Reports processed messages, ``(stream, offset of the
        last, count)``, and returns how many may be held back before the
        next report; ``None``: not tracked.
    """
    def __cinit__(self, report: object = None) -> None:
        self.messages = []
        self.next = 0
        self.stream = None
        self.release = None
        self.release_at = -1
        self.report = report
        self.done_offset = 0
        self.done = 0
        self.limit = 1

    @property
    def tracked(self) -> bool:
        """Whether processed messages are reported (automatic offset tracking)."""
        return self.report is not None

    @property
    def holding(self) -> bool:
        """Whether the application holds a message of the chunk at hand."""
        return self.next > 0

    def load(self, chunk: object) -> None:
        """
        The next chunk is at hand, its first message handed out (the chunk
        before it is finished: :py:meth:`finish`).
        """
        self.messages = chunk
        self.next = 1
        self.stream = chunk.stream
        self.release = chunk.release
        self.release_at = chunk.release_at if self.release is not None else -1

    cdef int processed(self, MessageCtx msg) except -1:
        self.done_offset = msg.stream_offset
        self.done += 1
        if self.done >= self.limit:
            self.flush()
        return 0

    cdef int flush(self) except -1:
        cdef Py_ssize_t done = self.done
        self.done = 0
        self.limit = self.report(self.stream, self.done_offset, done)
        return 0

    def finish(self) -> None:
        """
        The application asked for a message past the chunk at hand, or the
        iteration ends: the message handed out last is processed; what is
        held back is reported (the next chunk may be of another stream).
        """
        cdef object messages = self.messages
        cdef Py_ssize_t i = self.next
        if i > 0:
            if self.report is not None and i <= len(messages):
                self.processed(<MessageCtx>messages[i - 1])
            self.messages = []
            self.next = 0
        if self.done:
            self.flush()

    def cut(self, stream: object) -> bool:
        """
        Hand out no more messages of the chunk at hand if it is of
        ``stream`` (a hand-off): the message handed out last stays the
        last one processed of it; a flow strategy's credit the chunk held
        goes back. True when messages were cut.
        """
        messages = self.messages
        if self.stream != stream or self.next >= len(messages):
            return False
        self.messages = messages[:self.next]
        if self.release_at >= 0:
            self.release_at = -1
            self.release()
        return True

    def rest(self, stream: object) -> object:
        """
        Take out the messages of the chunk at hand not handed out yet, if
        it is of ``stream`` (the stream is paused): a chunk of them, with
        the flow strategy's credit the chunk held, or ``None``. The
        message handed out last stays at hand, the application's.
        """
        messages = self.messages
        cdef Py_ssize_t i = self.next
        if self.stream != stream or i >= len(messages):
            return None
        rest = Chunk(
            messages[i:], stream, messages.first_offset, messages.timestamp,
            messages.committed_chunk_id,
        )
        rest.undecodable = messages.undecodable
        if self.release_at >= 0:
            # (as the message at release_at - i of the rest is asked for)
            rest.release = self.release
            rest.release_at = max(1, self.release_at - i)
            self.release_at = -1
        self.messages = messages[:i]
        return rest

    def forget(self, stream: object) -> bool:
        """
        Drop the chunk at hand if it is of ``stream``, the message handed
        out last too (the application moved the stream elsewhere: it does
        not count as processed); the messages processed before it are
        reported, and a flow strategy's credit goes back. True when the
        chunk was of ``stream``.
        """
        if self.stream != stream:
            return False
        if self.done:
            self.flush()
        if self.release_at >= 0:
            self.release_at = -1
            self.release()
        self.messages = []
        self.next = 0
        self.release = None
        return True

    def hand_back(self) -> None:
        """
        The message handed out last goes back, unprocessed: the next one
        asked for is it again, and it does not count as processed until
        then. Nothing happens when no message of the chunk at hand is out.
        """
        cdef Py_ssize_t i = self.next - 1
        messages = self.messages
        if i < 0 or i >= len(messages):
            return
        # the messages before it are counted already: the chunk at hand
        # starts with it, none handed out (its stream and credit kept)
        if i > 0:
            del messages[:i]
            if self.release_at >= 0:
                self.release_at -= i
        self.next = 0

    def mark(self) -> object:
        """
        The message being processed (handed out last), as ``(stream,
        offset)``, or ``None``; what is held back before it is reported.
        """
        if self.done:
            self.flush()
        messages = self.messages
        i = self.next
        if 0 < i <= len(messages):
            return self.stream, (<MessageCtx>messages[i - 1]).stream_offset
        return None

    def pull(self) -> object:
        """
        Processed messages not reported yet, as ``(stream, offset, count)``
        (or ``None``), for the tracker about to store: the first processed
        after the store is reported at once (it starts the tracker's timer).
        """
        if self.done == 0:
            return None
        result = (self.stream, self.done_offset, self.done)
        self.done = 0
        self.limit = 1
        return result

    def clear(self) -> None:
        """Nothing at hand any more (the iteration ended)."""
        self.messages = []
        self.next = 0
        self.release = None
        self.release_at = -1
