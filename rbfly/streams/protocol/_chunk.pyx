# cython: language_level=3
"""
Decoder of Osiris chunks, the unit in which RabbitMQ delivers stream data.

Grammar (PROTOCOL.adoc "Deliver"; osiris_log.erl)::

    OsirisChunk => MagicVersion ChunkType NumEntries NumRecords Timestamp
                   Epoch ChunkFirstOffset ChunkCrc DataLength TrailerLength
                   BloomSize Reserved Data Trailer
      MagicVersion => int8      // 0x50: magic 5, chunk format version 0
      ChunkType => int8         // 0 user, 1 tracking delta, 2 tracking snapshot
      NumEntries => uint16
      NumRecords => uint32      // offsets count records, not entries
      Timestamp => int64        // milliseconds since the Unix epoch
      Epoch => uint64
      ChunkFirstOffset => uint64
      ChunkCrc => int32         // CRC32 of Data
      DataLength => uint32
      TrailerLength => uint32
      BloomSize => uint8        // the bloom filter is not sent to clients
      Reserved => uint24
    Data => Entry*
    Entry => SimpleEntry | SubBatchEntry
      SimpleEntry => 0:1 Size:31 Record
      SubBatchEntry => 1:1 Compression:3 Reserved:4 NumRecords:uint16
                       UncompressedLength:uint32 Length:uint32 Body
      Body (uncompressed) => (Size:uint32 Record)*

The decoder never copies the chunk: it parses it in place with a
bounds-checked reader, checks the CRC, skips records before the requested
offset and decodes each record into a :py:class:`rbfly.amqp.MessageCtx`.

A record that is not AMQP 1.0 (published as raw bytes, or by a client of
another format) raises :py:class:`rbfly.error.MessageDecodeError` naming
the stream and the record's offset, or, as the subscription asks
(``on_decode_error``), is skipped or handed out as its bytes. The fast
path (no ``on_decode_error``) has no ``try``, per record nor per chunk,
and raises a bare :py:class:`rbfly.error.AMQPDecodeError`: its caller
decodes that chunk again with an action, each record under ``try`` (a
rare chunk; what the success path costs is unchanged).

This module is the one owner of the header's layout: what else needs a
chunk's type, offsets or timestamp before decoding it (a subscription
noting where the next one starts, the connection pausing its reads on a
chunk of history) asks :py:func:`read_header`, never the bytes.
"""

import logging
import zlib

cimport cython

from .compression import decompress as codec_decompress
from .compression import missing_codec

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.ref cimport PyObject
from libc.stdint cimport UINT64_MAX, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

from ..._wire._buffer cimport Reader, r_take, rbfly_load_u16, rbfly_load_u32, rbfly_load_u64
from ...amqp._message cimport MessageCtx, untrack_received
from ...amqp._sections cimport dec_message

from ...error import (
    AMQPDecodeError,
    ChunkCrcError,
    ChunkError,
    ChunkTooLarge,
    MessageDecodeError,
)

# the subscriptions' logger (doc/logging.rst): skipped records are theirs
logger = logging.getLogger('rbfly.streams.subscriber')

cdef enum:
    HEADER_SIZE = 48
    MAGIC_VERSION = 0x50
    CHUNK_USER = 0
    COMPRESSION_NONE = 0
    COMPRESSION_GZIP = 1
    # how records are decoded: as AMQP 1.0 (an error ends the chunk), as
    # raw bytes, or as AMQP 1.0 each under ``try`` (on_decode_error)
    MODE_AMQP = 0
    MODE_RAW = 1
    MODE_CAREFUL = 2

ON_DECODE_ERROR = ('raise', 'skip', 'raw')
"""
What a subscription decoding AMQP does with a message that is not AMQP
1.0: raise :py:class:`rbfly.error.MessageDecodeError`, skip it, or hand
out its bytes as the body.
"""

# decompression bomb guard, as in the Java client (64 MiB per sub-batch)
cdef Py_ssize_t MAX_UNCOMPRESSED = 64 * 1024 * 1024

DEFAULT_MAX_CHUNK_UNCOMPRESSED = 256 * 1024 * 1024
"""
Bytes all compressed sub-batches of one chunk may decompress to, unless the
client says otherwise (``max_chunk_uncompressed``).
"""

# a header is read for each chunk received and each decoded: a free list
# spares the allocator (as for MessageCtx)
@cython.freelist(8)
cdef class ChunkInfo:
    """
    Header fields of a chunk (see :py:func:`read_header`).

    :ivar chunk_type: 0 for user data; other types carry broker tracking
        data and yield no messages.
    :ivar first_offset: Offset of the chunk's first record.
    :ivar num_records: Number of records (messages) in the chunk.
    :ivar num_entries: Number of entries (a sub-batch is one entry).
    :ivar timestamp: Chunk timestamp in seconds since the Unix epoch.
    :ivar epoch: Epoch of the stream's leader that wrote the chunk.
    :ivar next_offset: Offset of the record after the chunk's last one.
    :ivar failures: Of a chunk decoded with ``on_decode_error`` ``'skip'``
        or ``'raw'``, its records that are not AMQP 1.0, as ``{offset:
        MessageDecodeError}`` (``None``: none).
    """
    cdef readonly object failures
    cdef readonly int chunk_type
    cdef readonly uint64_t first_offset
    cdef readonly uint32_t num_records
    cdef readonly uint16_t num_entries
    cdef readonly double timestamp
    cdef readonly uint64_t epoch

    @property
    def next_offset(self) -> int:
        return self.first_offset + self.num_records

    def __repr__(self) -> str:
        return 'ChunkInfo(type={}, first_offset={}, records={}, entries={},' \
            ' timestamp={})'.format(
                self.chunk_type, self.first_offset, self.num_records,
                self.num_entries, self.timestamp,
            )

cdef inline int chunk_error(str message, Py_ssize_t offset) except -1:
    raise ChunkError(message, offset)

cdef const unsigned char *take_header(Reader *r, ChunkInfo info) except NULL:
    """
    Take a chunk's header from the reader into ``info``; return the
    header's bytes (the CRC and lengths are the decoder's).
    """
    cdef const unsigned char *p = r_take(r, HEADER_SIZE)
    if p[0] != MAGIC_VERSION:
        chunk_error('unsupported chunk magic/version 0x{:02x}'.format(p[0]), 0)
    info.chunk_type = p[1]
    info.num_entries = rbfly_load_u16(p + 2)
    info.num_records = rbfly_load_u32(p + 4)
    info.timestamp = (<int64_t> rbfly_load_u64(p + 8)) / 1000.0
    info.epoch = rbfly_load_u64(p + 16)
    info.first_offset = rbfly_load_u64(p + 24)
    if info.num_records > UINT64_MAX - info.first_offset:
        # the offsets would wrap around to 0 (found by fuzz/targets.py)
        chunk_error('chunk offsets {} + {} records exceed 2**64 - 1'.format(
            info.first_offset, info.num_records
        ), 24)
    return p

def read_header(chunk: bytes | bytearray | memoryview) -> ChunkInfo:
    """
    Read a chunk's header, without decoding (or checking) its data.

    :param chunk: The chunk's bytes, from the magic byte on.

    :raises rbfly.error.ChunkError: When the chunk is shorter than its
        header, of an unknown format version, or its offsets pass 2**64 - 1
        (decoding it raises the same error).
    """
    cdef Py_buffer view
    cdef Reader r
    cdef ChunkInfo info = ChunkInfo.__new__(ChunkInfo)
    PyObject_GetBuffer(chunk, &view, PyBUF_SIMPLE)
    try:
        r.data = <const unsigned char*> view.buf
        r.pos = 0
        r.end = view.len
        r.error = <PyObject*> ChunkError
        take_header(&r, info)
        return info
    finally:
        PyBuffer_Release(&view)

cdef class _Decoder:
    cdef list messages
    cdef uint64_t offset
    cdef uint64_t start
    cdef double timestamp
    cdef int mode
    cdef bint keep_raw     # careful mode: keep an undecodable record as bytes
    cdef bint raise_first  # careful mode: raise MessageDecodeError
    cdef object stream
    # careful mode: records that failed, and the first failure
    cdef Py_ssize_t failed
    cdef uint64_t failed_offset
    cdef object failure
    cdef dict failures  # offset: MessageDecodeError
    # uncompressed bytes the chunk's compressed sub-batches may still take
    cdef Py_ssize_t budget
    cdef Py_ssize_t limit

    cdef int spend(self, uint32_t uncompressed, Py_ssize_t at) except -1:
        """Take a sub-batch's declared size from the chunk's budget, before decompressing."""
        if uncompressed > MAX_UNCOMPRESSED:
            chunk_error('sub-batch declares {} uncompressed bytes'.format(uncompressed), at)
        if uncompressed > self.budget:
            raise ChunkTooLarge(
                'chunk sub-batches decompress past max_chunk_uncompressed ({} bytes)'.format(
                    self.limit,
                ), at, self.limit,
            )
        self.budget -= uncompressed
        return 0

    cdef int record(self, const unsigned char *data, Py_ssize_t size) except -1:
        cdef MessageCtx msg
        cdef Reader r
        if self.offset >= self.start:
            if self.mode == MODE_AMQP:
                r.data = data
                r.pos = 0
                r.end = size
                r.error = <PyObject*> AMQPDecodeError
                msg = dec_message(&r)
            elif self.mode == MODE_RAW:
                msg = MessageCtx.__new__(MessageCtx)
                msg._body = PyBytes_FromStringAndSize(<const char*> data, size)
            else:
                msg = self.careful(data, size)
                if msg is None:  # skipped
                    self.offset += 1
                    return 0
            msg.stream_offset = self.offset
            msg.stream_timestamp = self.timestamp
            msg._stream = self.stream
            untrack_received(msg)
            self.messages.append(msg)
        self.offset += 1
        return 0

    cdef MessageCtx careful(self, const unsigned char *data, Py_ssize_t size):
        """
        Decode a record as AMQP 1.0; when it is not, return ``None`` (skip
        it) or a message of its bytes.
        """
        cdef MessageCtx msg
        cdef Reader r
        r.data = data
        r.pos = 0
        r.end = size
        r.error = <PyObject*> AMQPDecodeError
        try:
            return dec_message(&r)
        except AMQPDecodeError as ex:
            if self.raise_first:
                raise MessageDecodeError(ex.reason, ex.offset, self.stream, self.offset) \
                    from None
            if self.failed == 0:
                self.failed_offset = self.offset
                self.failure = '{} (at byte {} of it)'.format(ex.reason, ex.offset)
                self.failures = {}
            self.failures[self.offset] = MessageDecodeError(
                ex.reason, ex.offset, self.stream, self.offset)
            self.failed += 1
        if not self.keep_raw:
            return None
        msg = MessageCtx.__new__(MessageCtx)
        msg._body = PyBytes_FromStringAndSize(<const char*> data, size)
        return msg

    cdef int entries(self, Reader *r, ChunkInfo info) except -1:
        """Decode the chunk's entries, from the reader at its data on."""
        cdef Py_ssize_t at
        cdef uint8_t flags
        cdef uint32_t size
        for _ in range(info.num_entries):
            at = r.pos
            flags = r_take(r, 1)[0]
            if flags & 0x80:
                self.sub_batch(r, flags, at)
            else:
                r.pos -= 1
                size = rbfly_load_u32(r_take(r, 4))
                self.record(r_take(r, size), size)
        return 0

    cdef int sub_batch(self, Reader *r, uint8_t flags, Py_ssize_t at) except -1:
        cdef const unsigned char *p = r_take(r, 10)
        cdef uint16_t n = rbfly_load_u16(p)
        cdef uint32_t uncompressed = rbfly_load_u32(p + 2)
        cdef uint32_t length = rbfly_load_u32(p + 6)
        cdef int compression = (flags >> 4) & 0x07
        cdef const unsigned char *body = r_take(r, length)
        cdef object data
        cdef Reader sub
        cdef uint32_t size

        if compression == COMPRESSION_NONE:
            sub.data = body
            sub.end = length
        elif compression == COMPRESSION_GZIP:
            self.spend(uncompressed, at)
            try:
                d = zlib.decompressobj(wbits=31)
                data = d.decompress(
                    PyBytes_FromStringAndSize(<const char*> body, length), uncompressed + 1,
                )
            except zlib.error as ex:
                chunk_error('invalid gzip sub-batch: {}'.format(ex), at)
            if PyBytes_GET_SIZE(data) != uncompressed:
                chunk_error('gzip sub-batch size {} does not match declared {}'.format(
                    PyBytes_GET_SIZE(data), uncompressed
                ), at)
            sub.data = <const unsigned char*> PyBytes_AS_STRING(data)
            sub.end = uncompressed
        else:  # a codec registered by the application
            self.spend(uncompressed, at)
            try:
                data = codec_decompress(
                    compression, PyBytes_FromStringAndSize(<const char*> body, length),
                    uncompressed,
                )
            except KeyError:
                chunk_error('unsupported sub-batch compression: {}'.format(
                    missing_codec(compression)), at)
            except Exception as ex:  # noqa: BLE001 - a codec's own error
                chunk_error('invalid sub-batch of compression {}: {}'.format(compression, ex), at)
            if type(data) is not bytes:
                data = bytes(data)
            if PyBytes_GET_SIZE(data) != uncompressed:
                chunk_error('sub-batch of compression {}: size {} does not match declared {}'
                            .format(compression, PyBytes_GET_SIZE(data), uncompressed), at)
            sub.data = <const unsigned char*> PyBytes_AS_STRING(data)
            sub.end = uncompressed
        sub.pos = 0
        sub.error = <PyObject*> ChunkError
        for _ in range(n):
            size = rbfly_load_u32(r_take(&sub, 4))
            self.record(r_take(&sub, size), size)
        if sub.pos != sub.end:
            chunk_error('sub-batch has {} trailing bytes'.format(sub.end - sub.pos), at)
        return 0

def decode_chunk(
        chunk: bytes | bytearray | memoryview,
        start_offset: int = 0,
        amqp: bool = True,
        check_crc: bool = True,
        stream: str | None = None,
        max_uncompressed: int = DEFAULT_MAX_CHUNK_UNCOMPRESSED,
        on_decode_error: str | None = None,
) -> tuple[ChunkInfo, list[MessageCtx]]:
    """
    Decode a chunk into messages.

    :param chunk: The chunk's bytes, from the magic byte on.
    :param start_offset: Records before this offset are skipped (the broker
        starts delivery at the chunk holding the requested offset).
    :param amqp: Decode records as AMQP 1.0 messages; otherwise each body
        is the record's raw bytes.
    :param check_crc: Verify the CRC32 of the chunk's data.
    :param stream: Stream name set on each message (``MessageCtx.stream``).
    :param max_uncompressed: Bytes the chunk's compressed sub-batches may
        decompress to, in all (each also at most 64 MiB).
    :param on_decode_error: With ``amqp``, what to do with a record that
        is not AMQP 1.0 (see :py:data:`ON_DECODE_ERROR`): ``'raise'``
        :py:class:`~rbfly.error.MessageDecodeError`, ``'skip'`` it (its
        offset counts, as any record's), or hand out its ``'raw'`` bytes
        as the body; a warning names the stream and the offsets of a
        chunk's records skipped or kept raw. ``None``, the fast path:
        raise a bare :py:class:`~rbfly.error.AMQPDecodeError`, for the
        caller to decode the chunk again with an action.

    :raises rbfly.error.ChunkError: When the chunk is malformed (a
        :py:class:`~rbfly.error.ChunkCrcError` when its CRC does not
        match, :py:class:`~rbfly.error.ChunkTooLarge` past
        ``max_uncompressed``).
    :raises rbfly.error.AMQPDecodeError: When a record is not a valid
        AMQP message: a :py:class:`~rbfly.error.MessageDecodeError` naming
        the stream and the record's offset with ``on_decode_error``
        ``'raise'``.
    """
    cdef Py_buffer view
    cdef Reader r
    cdef const unsigned char *p
    cdef ChunkInfo info = ChunkInfo.__new__(ChunkInfo)
    cdef _Decoder dec = _Decoder.__new__(_Decoder)
    cdef uint32_t data_len, crc
    cdef Py_ssize_t data_end

    PyObject_GetBuffer(chunk, &view, PyBUF_SIMPLE)
    try:
        r.data = <const unsigned char*> view.buf
        r.pos = 0
        r.end = view.len
        r.error = <PyObject*> ChunkError
        p = take_header(&r, info)
        crc = rbfly_load_u32(p + 32)
        data_len = rbfly_load_u32(p + 36)
        if data_len > r.end - r.pos:
            chunk_error('chunk data length {} exceeds the {} bytes left'.format(
                data_len, r.end - r.pos
            ), 36)
        if check_crc:
            actual = zlib.crc32(memoryview(chunk)[HEADER_SIZE:HEADER_SIZE + data_len])
            if actual != crc:
                raise ChunkCrcError(
                    'chunk CRC mismatch: 0x{:08x} != 0x{:08x}'.format(actual, crc), 32,
                )
        dec.messages = []
        if info.chunk_type != CHUNK_USER:
            return info, dec.messages
        dec.offset = info.first_offset
        dec.start = start_offset
        dec.timestamp = info.timestamp
        dec.mode = MODE_AMQP if amqp else MODE_RAW
        dec.stream = stream
        dec.budget = dec.limit = max_uncompressed
        data_end = r.end = HEADER_SIZE + data_len
        if on_decode_error is None or not amqp:
            dec.entries(&r, info)
        else:
            if on_decode_error not in ON_DECODE_ERROR:
                raise ValueError('on_decode_error must be one of {}, got {!r}'.format(
                    ', '.join(ON_DECODE_ERROR), on_decode_error))
            # each record under try
            dec.mode = MODE_CAREFUL
            dec.keep_raw = on_decode_error == 'raw'
            dec.raise_first = on_decode_error == 'raise'
            dec.entries(&r, info)
            if dec.failed:
                info.failures = dec.failures
                logger.warning(
                    'stream %r: %d message(s) of the chunk at offset %d are not AMQP 1.0'
                    ' (the first at offset %d: %s): %s', stream, dec.failed,
                    info.first_offset, dec.failed_offset, dec.failure,
                    'handed out as bytes' if dec.keep_raw else 'skipped',
                )
        if r.pos != data_end:
            chunk_error('chunk has {} bytes after its {} entries'.format(
                data_end - r.pos, info.num_entries
            ), r.pos)
        if dec.offset != info.first_offset + info.num_records:
            chunk_error('chunk declares {} records, has {}'.format(
                info.num_records, dec.offset - info.first_offset
            ), 4)
        return info, dec.messages
    finally:
        PyBuffer_Release(&view)
