# cython: language_level=3
"""
Encoder of Publish frames, the hot path of every publisher.

Grammar (PROTOCOL.adoc "Publish")::

    Publish => Size Key Version PublisherId PublishedMessages
      Size => uint32
      Key => uint16 // 0x0002
      Version => uint16 // 1, or 2 with filter values
      PublisherId => uint8
      PublishedMessages => [PublishedMessage]
      PublishedMessage => PublishingId [FilterValue] Message
      PublishingId => uint64
      FilterValue => string // version 2 only
      Message => bytes

AMQP messages are encoded straight into the frame buffer (no intermediate
``bytes`` per message); the message's length prefix is filled in after its
bytes are written.

A frame of at least :py:data:`POOLED_FRAME` bytes is returned as a
``memoryview`` of a buffer the encoder reuses once nothing else refers to
it (the transport let go of it), instead of a new ``bytes``: a fresh
allocation of a frame of big messages is above the C allocator's mmap
threshold, and the kernel's zeroed pages cost more than the encoding
(publishing 512 KiB messages to RabbitMQ 3.10: 108 page faults a message,
and 2.5 times RbFly 0.10's CPU a message, whose one frame in flight
reused its memory).

A :py:class:`SubEntryBatch` is one entry of many messages (a sub-entry
batch, one publishing id)::

    PublishedMessage => PublishingId EntryType Count Uncompressed Length Data
      EntryType => uint8 // 0x80 | compression << 4
      Count => uint16
      Uncompressed => uint32 // size of Data before compression
      Length => uint32
      Data => [Size Message], compressed as a whole
"""

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.memoryview cimport PyMemoryView_FromObject
from cpython.ref cimport Py_REFCNT, PyObject
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy, memmove

from ..._wire._buffer cimport Writer, rbfly_store_u16, rbfly_store_u32, rbfly_store_u64, w_take
from ...amqp._encoder cimport enc_bytes_like
from ...amqp._message cimport MessageCtx
from ...amqp._sections cimport enc_body, enc_message
from ._size cimport body_size

from ...error import MessageTooLarge, RbFlyError
from .compression import compress as codec_compress
from .compression import compression_code

# frames of at least this many bytes come from the pool of frame buffers;
# smaller ones are bytes (the allocator reuses their memory well)
DEF POOLED_FRAME_SIZE = 64 * 1024
# nor are frames above this (a broker without a frame size limit), so the
# pool holds at most POOL_SIZE times this
DEF POOLED_FRAME_MAX = 8 * 1024 * 1024
# buffers in the pool: frames a connection's write buffer may hold (the
# pipelined publisher waits on it), with room to spare; when all are in
# use, frames are bytes again
DEF POOL_SIZE = 8
POOLED_FRAME = POOLED_FRAME_SIZE


# what a message too large for a frame is told: where the limit comes from
cdef str FRAME_MAX_HINT = (
    ' (the frame size negotiated with the broker: the smaller of its'
    ' stream.frame_max and the client\'s frame_max option; raise both, or split'
    ' the message)'
)

cdef class SubEntryBatch:
    """
    Messages published as one sub-entry batch: one entry of the stream,
    one publishing id and one confirmation for all of them, optionally
    compressed. The broker's per-message work is done once per batch;
    consumers unpack it (deduplication covers the batch as a whole).

    :param messages: Messages (AMQP bodies or messages, or bytes for the
        binary publishers), at most 65535.
    :param compression: ``'none'``, ``'gzip'``, or a codec registered
        with :py:func:`rbfly.streams.compression.register_codec`.
    """
    cdef public list messages
    cdef public int compression

    def __init__(self, messages, compression='none') -> None:
        self.messages = list(messages)
        if not 0 < len(self.messages) <= 0xffff:
            raise ValueError('a sub-entry batch holds 1..65535 messages, got {}'.format(
                len(self.messages)
            ))
        self.compression = compression_code(compression)

    def __len__(self) -> int:
        return len(self.messages)

    def __repr__(self) -> str:
        return 'SubEntryBatch({} messages, compression={})'.format(
            len(self.messages), self.compression,
        )

cdef enum:
    KEY_PUBLISH = 0x0002
    HEADER_SIZE = 13  # size + key + version + publisher id + count

cdef class PublishEncoder:
    """
    Encodes batches of messages into Publish frames that fit the
    negotiated maximum frame size.

    :param frame_max: Maximum size of a frame, including its size field
        (0 means no limit).
    """
    cdef bytearray buffer
    cdef bytearray scratch
    # buffers of frames handed out (and the current one, once it was)
    cdef list pool
    cdef public Py_ssize_t frame_max

    def __init__(self, Py_ssize_t frame_max=0) -> None:
        self.buffer = bytearray(64 * 1024)
        self.scratch = bytearray(64 * 1024)
        self.pool = []
        self.frame_max = frame_max

    cdef object take_frame(self, Py_ssize_t size):
        """
        The frame in the buffer, ``size`` bytes: a ``bytes`` copy, or for a
        big frame the buffer itself (a view of it) while the encoder goes on
        in a buffer of the pool no one refers to any more.
        """
        cdef Py_ssize_t i, n
        cdef object b, frame
        cdef bytearray spare = None
        if size < POOLED_FRAME_SIZE or size > POOLED_FRAME_MAX:
            return PyBytes_FromStringAndSize(PyByteArray_AS_STRING(self.buffer), size)
        n = PyList_GET_SIZE(self.pool)
        for i in range(n):
            b = <object> PyList_GET_ITEM(self.pool, i)
            # 2: the pool and b; a view given out, or the encoder's own
            # buffer, hold one more
            if Py_REFCNT(b) == 2:
                spare = <bytearray> b
                break
        if spare is None:
            if n >= POOL_SIZE:
                return PyBytes_FromStringAndSize(PyByteArray_AS_STRING(self.buffer), size)
            spare = bytearray(size)  # grown as a frame needs
            self.pool.append(spare)
        frame = self.buffer
        if n == 0 or not any(x is frame for x in self.pool):
            self.pool.append(frame)
        self.buffer = spare
        return PyMemoryView_FromObject(frame)[:size]

    cdef int enc_sub(self, Writer *w, SubEntryBatch batch, bint amqp) except -1:
        cdef Writer s
        cdef unsigned char *p
        cdef const char *data
        cdef Py_ssize_t length
        cdef bytes compressed
        s.data = <unsigned char*> PyByteArray_AS_STRING(self.scratch)
        s.cap = PyByteArray_GET_SIZE(self.scratch)
        s.pos = 0
        s.owner = <PyObject*> self.scratch
        for m in batch.messages:
            self.enc_one(&s, m, amqp)
        if batch.compression == 0:
            data = <const char*> s.data
            length = s.pos
        else:
            compressed = codec_compress(
                batch.compression, PyBytes_FromStringAndSize(<const char*> s.data, s.pos),
            )
            data = PyBytes_AS_STRING(compressed)
            length = PyBytes_GET_SIZE(compressed)
        if s.pos > 0xffffffff or length > 0xffffffff:
            raise MessageTooLarge('sub-entry batch of {} bytes'.format(s.pos))
        p = w_take(w, 11 + length)
        p[0] = 0x80 | (batch.compression << 4)
        rbfly_store_u16(p + 1, <uint16_t> len(batch.messages))
        rbfly_store_u32(p + 3, <uint32_t> s.pos)
        rbfly_store_u32(p + 7, <uint32_t> length)
        memcpy(p + 11, data, length)
        return 0

    cdef int enc_one(self, Writer *w, object msg, bint amqp) except -1:
        cdef Py_ssize_t start
        cdef unsigned char *p
        start = w.pos
        w_take(w, 4)
        if amqp:
            if type(msg) is MessageCtx:
                enc_message(w, <MessageCtx> msg)
            else:
                enc_body(w, msg)
        elif type(msg) is bytes:
            p = w_take(w, PyBytes_GET_SIZE(msg))
            memcpy(p, PyBytes_AS_STRING(msg), PyBytes_GET_SIZE(msg))
        elif isinstance(msg, (bytes, bytearray, memoryview)):
            enc_bytes_like(w, msg)
            # enc_bytes_like writes an AMQP binary; keep only the raw bytes
            raw_fixup(w, start + 4)
        else:
            raise TypeError(
                'binary publisher needs bytes, got {}'.format(type(msg).__name__)
            )
        rbfly_store_u32(w.data + start, <uint32_t> (w.pos - start - 4))
        return 0

    def encode(
            self,
            uint8_t publisher_id,
            list messages,
            Py_ssize_t start,
            uint64_t publishing_id,
            bint amqp=True,
            list filter_values=None,
            list ids=None,
    ) -> tuple[int, bytes]:
        """
        Encode messages from ``messages[start]`` on into one Publish frame.

        Message ``messages[start + i]`` gets publishing id
        ``publishing_id + i``. As many messages are encoded as fit into the
        maximum frame size.

        :param filter_values: Filter value (str or None) of each message,
            parallel to ``messages``; when given, Publish version 2 is used.
        :param ids: Publishing id of each message, parallel to
            ``messages``, instead of consecutive ids (resending after a
            reconnection).
        :return: Number of messages encoded and the frame's bytes.

        :raises rbfly.error.MessageTooLarge: When the first message alone
            does not fit into a frame.
        """
        cdef Writer w
        cdef Py_ssize_t i, n = len(messages), before, count = 0
        cdef Py_ssize_t limit = self.frame_max if self.frame_max > 0 else (1 << 62)
        cdef bint v2 = filter_values is not None
        cdef unsigned char *p
        cdef object fv, msg
        cdef bint sub
        cdef bytes fb
        if start < 0 or start >= n:
            raise ValueError('start index {} outside of {} messages'.format(start, n))
        w.data = <unsigned char*> PyByteArray_AS_STRING(self.buffer)
        w.cap = PyByteArray_GET_SIZE(self.buffer)
        w.pos = HEADER_SIZE
        w.owner = <PyObject*> self.buffer
        for i in range(start, n):
            before = w.pos
            if ids is None:
                rbfly_store_u64(w_take(&w, 8), publishing_id + (i - start))
            else:
                rbfly_store_u64(w_take(&w, 8), <uint64_t> ids[i])
            msg = messages[i]
            if w.pos + body_size(msg) > limit:
                # a big body that cannot fit: not copied in to be undone (nor
                # to grow the buffer to its size, as a frame's would stay)
                if count == 0:
                    raise MessageTooLarge(
                        'message of {} bytes does not fit into a frame of at most'
                        ' {} bytes{}'.format(body_size(msg), limit, FRAME_MAX_HINT)
                    )
                w.pos = before
                break
            sub = type(msg) is SubEntryBatch
            if sub:
                if v2:
                    raise ValueError('a sub-entry batch cannot have a filter value')
                self.enc_sub(&w, <SubEntryBatch> msg, amqp)
            else:
                if v2:
                    fv = filter_values[i]
                    if fv is None:
                        rbfly_store_u16(w_take(&w, 2), 0xffff)
                    else:
                        if type(fv) is not str:
                            raise TypeError(
                                'filter value must be a str or None, got {!r}'.format(fv)
                            )
                        fb = fv.encode('utf-8')
                        if len(fb) > 0x7fff:
                            raise RbFlyError('filter value longer than 32767 bytes')
                        p = w_take(&w, 2 + len(fb))
                        rbfly_store_u16(p, <uint16_t> len(fb))
                        memcpy(p + 2, PyBytes_AS_STRING(fb), len(fb))
                self.enc_one(&w, msg, amqp)
            if w.pos > limit:
                if count == 0:
                    raise MessageTooLarge(
                        '{} of {} bytes does not fit into a frame of at most'
                        ' {} bytes{}'.format(
                            'sub-entry batch' if sub else 'message',
                            w.pos - before - (8 if sub else 12), limit, FRAME_MAX_HINT,
                        )
                    )
                w.pos = before
                break
            count += 1
        p = w.data
        rbfly_store_u32(p, <uint32_t> (w.pos - 4))
        rbfly_store_u16(p + 4, KEY_PUBLISH)
        rbfly_store_u16(p + 6, 2 if v2 else 1)
        p[8] = publisher_id
        rbfly_store_u32(p + 9, <uint32_t> count)
        return count, self.take_frame(w.pos)

cdef int raw_fixup(Writer *w, Py_ssize_t at) except -1:
    """
    Strip the AMQP binary constructor and length written at ``at``.
    """
    cdef Py_ssize_t hdr = 2 if w.data[at] == 0xa0 else 5
    cdef Py_ssize_t size = w.pos - at - hdr
    memmove(w.data + at, w.data + at + hdr, size)
    w.pos = at + size
    return 0
