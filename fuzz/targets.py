"""
Fuzz targets: one function per decoder of bytes from the network.

Each target takes the fuzzer's bytes, shapes them into the decoder's input
(the first bytes choose options, e.g. how a byte stream is split or which
command's decoder runs) and checks the decoder's contract:

- a malformed input raises the typed error its docstring names
  (:py:class:`~rbfly.error.FrameDecodeError` for frames,
  :py:class:`~rbfly.error.ChunkError` or
  :py:class:`~rbfly.error.AMQPDecodeError` for chunks,
  :py:class:`~rbfly.error.AMQPDecodeError` for AMQP data); any other
  exception propagates, which is a finding;
- no crash, no hang, no memory out of proportion to the input (the fuzzer
  watches these: ``-timeout``, ``-rss_limit_mb``);
- what decodes re-encodes, and decodes again to the same value; the pure
  Python and the Cython frame readers agree; the hot-path frame decoder
  agrees with the codec; a chunk's messages have the offsets its header
  promises.

A broken promise that is not an exception raises :py:class:`Violation`.
The functions need no fuzzer: ``tests/unit/test_fuzz_regressions.py``
replays the corpora through them.
"""

import asyncio
import operator
import pickle
import struct
import typing as tp
import zlib
from collections.abc import Callable, Iterator

from rbfly.amqp import MessageCtx, decode_amqp, decode_value, encode_message, encode_value
from rbfly.error import (
    AMQPDecodeError,
    AMQPEncodeError,
    ChunkError,
    FrameDecodeError,
    MessageDecodeError,
)
from rbfly.streams.protocol import (
    FrameReader as PyFrameReader,
)
from rbfly.streams.protocol import (
    OpenResponse,
    PeerPropertiesResponse,
    PublishConfirm,
    ResponseCode,
    SaslAuthenticateResponse,
    SaslHandshakeResponse,
    Tune,
    decode_frame,
    encode,
)
from rbfly.streams.protocol._chunk import ChunkInfo, decode_chunk, read_header
from rbfly.streams.protocol._confirm_ids import ConfirmIds
from rbfly.streams.protocol._frames import FrameReader, decode_hot
from rbfly.streams.protocol.compression import Compression, compress, decompress
from rbfly.streams.protocol.connection import (
    ConnectionClosed,
    ConnectionCore,
    ConsumerUpdateRequested,
    CoreState,
    HandshakeFailed,
    HeartbeatTimeout,
    Opened,
)
from rbfly.streams.protocol.request_codec import TABLE as REQUESTS
from rbfly.streams.protocol.response_codec import TABLE as RESPONSES
from rbfly.streams.protocol.tables import Entry
from rbfly.streams.publishers._confirm import Confirmation, confirm, track
from rbfly.streams.publishers._unconfirmed import Unconfirmed

Target = Callable[[bytes], None]

class Violation(AssertionError):
    """A decoder broke a promise of its contract without an exception."""

def pieces(data: bytes, sizes: bytes) -> Iterator[bytes]:
    """
    Cut ``data`` into pieces of 1..256 bytes, their sizes taken in turn
    from ``sizes``; the whole of it when ``sizes`` is empty.
    """
    if not sizes:
        yield data
        return
    pos = i = 0
    while pos < len(data):
        n = sizes[i % len(sizes)] + 1
        yield data[pos:pos + n]
        pos += n
        i += 1

def split_input(data: bytes) -> tuple[int, bytes, bytes]:
    """
    Split an input into a flags byte, 0..7 piece sizes (the flags' bits
    5..7 give their number) and the rest.
    """
    if not data:
        return 0, b'', b''
    flags = data[0]
    n = flags >> 5
    return flags, data[1:1 + n], data[1 + n:]

#
# frame reader
#

MAX_FRAME_SIZES = (0, 16, 64 * 1024, 64 * 1024 * 1024)

def _read(reader: FrameReader | PyFrameReader, data: bytes, sizes: bytes) -> tuple[
        list[bytes], tuple[int, int] | None, int]:
    frames: list[bytes] = []
    try:
        for piece in pieces(data, sizes):
            reader.feed(piece)
            frames.extend(bytes(frame) for frame in reader)
    except FrameDecodeError as ex:
        return frames, (len(frames), ex.offset), reader.buffered
    return frames, None, reader.buffered

def target_frames(data: bytes) -> None:
    """
    The frame readers (Cython and pure Python) fed a byte stream in
    pieces; each frame then through the hot-path decoder and the codec.

    Input: flags (bits 0-1: maximum frame size), piece sizes, stream.
    """
    flags, sizes, stream = split_input(data)
    limit = MAX_FRAME_SIZES[flags & 3]
    fast = _read(FrameReader(limit), stream, sizes)
    slow = _read(PyFrameReader(limit), stream, sizes)
    if fast != slow:
        raise Violation('frame readers disagree: cython {!r}, python {!r}'.format(fast, slow))
    for frame in fast[0]:
        view = memoryview(frame)
        hot = decode_hot(view)
        try:
            decoded = decode_frame(view)
        except FrameDecodeError:
            if hot is not None:
                raise Violation('decode_hot accepts a frame decode_frame rejects: {!r}'.format(
                    hot)) from None
            continue
        if hot is not None and hot != decoded.command:
            raise Violation('decode_hot {!r} != decode_frame {!r}'.format(hot, decoded.command))

#
# connection core
#

OK = ResponseCode.OK
HANDSHAKE = [
    encode(PeerPropertiesResponse(1, OK, {'version': '4.1.0'})),
    encode(SaslHandshakeResponse(2, OK, ('PLAIN',))),
    encode(SaslAuthenticateResponse(3, OK, None)),
    encode(Tune(1 << 20, 60)),
    encode(OpenResponse(4, OK, {'advertised_host': 'h'})),
]
EVENTS = (Opened, HandshakeFailed, HeartbeatTimeout, ConnectionClosed, ConsumerUpdateRequested)

def target_core(data: bytes) -> None:
    """
    The sans-IO connection core's receive path: a byte stream from the
    broker, in pieces, during the handshake or on an open connection.

    Input: flags (bit 0: open the connection first), piece sizes, stream.
    """
    flags, sizes, stream = split_input(data)
    core = ConnectionCore(username='user', password='secret')
    core.start(0.0)
    if flags & 1:
        for frame in HANDSHAKE:
            core.receive_data(frame, 0.0)
        if core.state is not CoreState.OPENED:
            raise Violation('handshake did not open the connection: {}'.format(core.state))
    now = 0.0
    for piece in pieces(stream, sizes):
        now += 1.0
        try:
            events = core.receive_data(piece, now)
        except FrameDecodeError:
            return
        for event in events:
            if isinstance(event, EVENTS):
                continue
            if not hasattr(type(event), 'KEY'):
                raise Violation('not an event: {!r}'.format(event))
        core.tick(now)
        core.data_to_send()

#
# response and command decoders
#

def codec_entries(table: list[Entry]) -> list[tuple[int, int, bool]]:
    """
    The key, version and whether a command takes a correlation id, of each
    row of a codec table, in the order a codec target's first byte picks.
    """
    return sorted({(cls.KEY, cls.VERSION, correlated) for cls, correlated, _, _ in table})

def _codec_target(table: list[Entry]) -> Target:
    entries = codec_entries(table)

    def target(data: bytes) -> None:
        if not data:
            return
        key, version, correlated = entries[data[0] % len(entries)]
        frame = struct.pack('>HH', key, version) + data[1:]
        try:
            decoded = decode_frame(frame)
        except FrameDecodeError:
            return
        # what was decoded encodes, and decodes to the same command
        corr = decoded.correlation_id if correlated else None
        again = decode_frame(memoryview(encode(decoded.command, corr))[4:])
        if again != decoded:
            raise Violation('decoded {!r}, re-encoded and decoded {!r}'.format(decoded, again))

    return target

target_responses = _codec_target(RESPONSES)
target_responses.__doc__ = """
Every response decoder: the first byte chooses the key and version, the
rest is the body.
"""
target_commands = _codec_target(REQUESTS)
target_commands.__doc__ = """
Every request and one-way command decoder (Deliver, PublishConfirm,
PublishError, MetadataUpdate, Close, ConsumerUpdate, ...): the first byte
chooses the key and version, the rest is the body.
"""

#
# chunks
#

HEADER = struct.Struct('>BBHIqQQIIIB3x')
SUB_BATCH = struct.Struct('>BHII')

def chunk_bytes(data: bytes, entries: int, records: int, first: int = 0, *,
                chunk_type: int = 0, crc: int | None = None) -> bytes:
    """An Osiris chunk of ``data`` (its entries), with a valid CRC unless given."""
    return HEADER.pack(
        0x50, chunk_type, entries, records, 1_700_000_000_000, 1, first,
        zlib.crc32(data) if crc is None else crc, len(data), 0, 0,
    ) + data

ACTIONS: tuple[str | None, ...] = (None, 'raise', 'skip', 'raw')
"""A chunk target's ``on_decode_error``, chosen by two bits of its flags."""

HEADER_FIELDS = ('chunk_type', 'first_offset', 'num_records', 'num_entries', 'timestamp', 'epoch')

def _decode(chunk: bytes, start: int, amqp: bool, check_crc: bool, action: str | None) -> (
        tuple[ChunkInfo, list[MessageCtx]] | ChunkError | AMQPDecodeError):
    try:
        return decode_chunk(chunk, start, amqp, check_crc, 's', on_decode_error=action)
    except (ChunkError, AMQPDecodeError) as ex:
        return ex

def _check_chunk(chunk: bytes, start: int, amqp: bool, check_crc: bool,
                 action: str | None = None) -> None:
    """
    The contract of the chunk decoders: ``read_header`` refuses what
    ``decode_chunk`` refuses for its header, with the same error, and
    reads what it decodes; an undecodable record raises a bare
    :py:class:`~rbfly.error.AMQPDecodeError` on the fast path (``action``
    ``None``), after which the chunk decodes with ``'raw'`` (as a
    subscription decodes it again), a
    :py:class:`~rbfly.error.MessageDecodeError` with ``'raise'``, and none
    with ``'skip'`` or ``'raw'``; the messages have the offsets the
    header promises (some skipped with ``'skip'``).
    """
    try:
        header: ChunkInfo | ChunkError = read_header(chunk)
    except ChunkError as ex:
        header = ex
    result = _decode(chunk, start, amqp, check_crc, action)
    if isinstance(header, ChunkError):
        if not isinstance(result, ChunkError) or str(result) != str(header):
            raise Violation('read_header raised {!r}, decode_chunk {!r}'.format(header, result))
    elif isinstance(result, AMQPDecodeError):
        _check_amqp_error(result, chunk, start, amqp, check_crc, action)
    elif not isinstance(result, ChunkError):
        info, messages = result
        read = [getattr(header, name) for name in HEADER_FIELDS]
        decoded = [getattr(info, name) for name in HEADER_FIELDS]
        if read != decoded:
            raise Violation('read_header {} != decode_chunk {}'.format(read, decoded))
        _check_messages(chunk, start, amqp, check_crc, action, info, messages)

def _check_amqp_error(error: AMQPDecodeError, chunk: bytes, start: int, amqp: bool,
                      check_crc: bool, action: str | None) -> None:
    if not amqp or action in ('skip', 'raw'):
        raise Violation('AMQPDecodeError decoding with amqp={}, on_decode_error={!r}:'
                        ' {}'.format(amqp, action, error))
    if action == 'raise' and not isinstance(error, MessageDecodeError):
        raise Violation('on_decode_error=raise raised {!r}'.format(error))
    if action is None:
        again = _decode(chunk, start, amqp, check_crc, 'raw')
        if isinstance(again, AMQPDecodeError):
            raise Violation('the fast path failed, and raw decoding too: {!r}'.format(again))

def _check_messages(chunk: bytes, start: int, amqp: bool, check_crc: bool, action: str | None,
                    info: ChunkInfo, messages: list[MessageCtx]) -> None:
    if info.chunk_type != 0:
        if messages:
            raise Violation('a chunk of type {} has messages'.format(info.chunk_type))
        return
    offsets = [m.stream_offset for m in messages]
    expected = list(range(max(start, info.first_offset), info.next_offset))
    if action == 'skip' and amqp:
        kept = set(offsets)
        expected = [o for o in expected if o in kept]
    if offsets != expected:
        raise Violation('message offsets {} of a chunk from {} with {} records ({})'.format(
            offsets[:10], info.first_offset, info.num_records, action))
    if amqp and action is not None:
        plain = _decode(chunk, start, amqp, check_crc, None)
        if not isinstance(plain, Exception) and [m.stream_offset for m in plain[1]] != offsets:
            raise Violation('on_decode_error={!r} gave offsets {}, the fast path {}'.format(
                action, offsets[:10], [m.stream_offset for m in plain[1]][:10]))
    if not amqp:
        records = chunk_records(chunk)[max(0, start - info.first_offset):]
        if [m.body for m in messages] != records:
            raise Violation('records {} of the chunk decoded as {}'.format(
                records[:5], [m.body for m in messages][:5]))

def chunk_records(chunk: bytes) -> list[bytes]:
    """
    The records of a chunk that decodes, read again by a reference parser
    written from the grammar in Python (codecs as the decoder calls them).
    """
    entries = struct.unpack_from('>H', chunk, 2)[0]
    end = HEADER.size + struct.unpack_from('>I', chunk, 36)[0]
    pos = HEADER.size
    records = []
    for _ in range(entries):
        if chunk[pos] & 0x80:
            flags, count, size, length = SUB_BATCH.unpack_from(chunk, pos)
            pos += SUB_BATCH.size
            payload = chunk[pos:pos + length]
            pos += length
            code = flags >> 4 & 7
            if code == 0:
                body = payload
            elif code == Compression.GZIP:
                body = zlib.decompressobj(wbits=31).decompress(payload, size + 1)
            else:
                body = bytes(decompress(code, payload, size))
            at = 0
            for _ in range(count):
                n = struct.unpack_from('>I', body, at)[0]
                records.append(body[at + 4:at + 4 + n])
                at += 4 + n
        else:
            n = struct.unpack_from('>I', chunk, pos)[0]
            records.append(chunk[pos + 4:pos + 4 + n])
            pos += 4 + n
    if pos != end:
        raise Violation('reference parser ends at {}, the chunk data at {}'.format(pos, end))
    return records

def target_chunk(data: bytes) -> None:
    """
    The chunk decoder on a chunk as is, or with its data length and CRC
    fixed so that the decoder reads past them.

    Input: flags (bit 0: fix the data length, bit 1: fix the CRC, bit 2:
    raw records, not AMQP, bit 3: no CRC check, bits 4-5: on_decode_error,
    of :py:data:`ACTIONS`), the start offset (one byte), the chunk.
    """
    if len(data) < 2:
        return
    flags, start, chunk = data[0], data[1], bytearray(data[2:])
    if len(chunk) >= HEADER.size:
        if flags & 1:
            struct.pack_into('>I', chunk, 36, len(chunk) - HEADER.size)
        if flags & 2:
            size = struct.unpack_from('>I', chunk, 36)[0]
            crc = zlib.crc32(chunk[HEADER.size:HEADER.size + size])
            struct.pack_into('>I', chunk, 32, crc)
    _check_chunk(bytes(chunk), start, not flags & 4, not flags & 8, ACTIONS[flags >> 4 & 3])

def sub_batch_chunk(code: int, payload: bytes, records: int, uncompressed: int) -> bytes:
    """A chunk of one sub-entry batch, with a valid CRC."""
    entry = SUB_BATCH.pack(0x80 | code << 4, records, uncompressed, len(payload)) + payload
    return chunk_bytes(entry, 1, records)

def _codec_chunk_target(code: Compression) -> Target:
    def target(data: bytes) -> None:
        if len(data) < 7:
            return
        flags = data[0]
        records, declared = struct.unpack_from('>HI', data, 1)
        body = data[7:]
        if flags & 1:  # the body is what gets compressed: the records
            payload = compress(code, body)
            size = len(body)
        else:  # the body is the compressed payload
            payload = body
            size = declared
        if flags & 2:  # the declared size as is, not fixed up
            size = declared
        _check_chunk(sub_batch_chunk(code, payload, records, size), 0, not flags & 4, True,
                     ACTIONS[flags >> 3 & 3])

    target.__doc__ = """
    The chunk decoder on a chunk of one {} sub-entry batch: its records
    compressed by the target, or the compressed payload as the fuzzer made
    it.

    Input: flags (bit 0: compress the body, bit 1: keep the declared
    uncompressed size, bit 2: raw records, bits 3-4: on_decode_error, of
    :py:data:`ACTIONS`), the number of records
    (uint16), the declared uncompressed size (uint32), the body.
    """.format(code.name.lower())
    return target

target_chunk_gzip = _codec_chunk_target(Compression.GZIP)
target_chunk_zstd = _codec_chunk_target(Compression.ZSTD)
target_chunk_lz4 = _codec_chunk_target(Compression.LZ4)
target_chunk_snappy = _codec_chunk_target(Compression.SNAPPY)

#
# PublishConfirm ids
#

class _Future:
    """What a :py:class:`Confirmation` needs of a future, without a loop."""

    def __init__(self) -> None:
        self.result = False

    def done(self) -> bool:
        return self.result

    def set_result(self, _: None) -> None:
        self.result = True

def _same(ids: ConfirmIds, expected: tuple[int, ...], what: str,
          op: Callable[[tp.Any], object]) -> None:
    """``op`` gives ``ids`` what it gives the tuple of the same ids, or raises alike."""
    try:
        got: object = op(ids)
    except (IndexError, ValueError, TypeError) as ex:
        got = type(ex)
    try:
        want: object = op(expected)
    except (IndexError, ValueError, TypeError) as ex:
        want = type(ex)
    if got != want:
        raise Violation('{} of ConfirmIds {!r}, of the tuple {!r}'.format(what, got, want))

def _confirmed(ids: tp.Sequence[int], tracked: list[int]) -> tuple[int, Unconfirmed, list[int],
                                                                   int, bool]:
    """
    The publisher's confirmation loop on messages kept under ``tracked``:
    the bytes forgotten, what stays unconfirmed, the ids still awaited,
    and the confirmation's count and state.
    """
    unconfirmed = Unconfirmed()
    waiting: dict[int, Confirmation] = {}
    future = _Future()
    confirmation = Confirmation(tp.cast('asyncio.Future[None]', future), len(tracked))
    messages = [b'm' * (pid % 7) for pid in tracked]
    track(unconfirmed, waiting, messages, 0, tracked, confirmation)
    size = confirm(unconfirmed, waiting, ids)
    return size, unconfirmed, sorted(waiting), confirmation.remaining, future.done()

def target_confirm_ids(data: bytes) -> None:
    """
    The PublishConfirm decoder of the hot path (``decode_hot``), whose ids
    stay the frame's bytes (:py:class:`ConfirmIds`, ``_confirm_ids.pyx``):
    it decodes what the codec decodes, and refuses what the codec
    refuses; as a sequence (length, indexing, slicing, iteration,
    reversal, membership, ``index``, ``count``, equality, hash, pickling)
    the ids are the tuple the codec decodes; the publisher's C loop,
    reading them as C integers, forgets the same messages and counts off
    the same waiting ids as from a tuple.

    Input: flags (bit 0: the count is the next 4 bytes as they are, not
    the number of ids that follow), the publisher id, a slice (start, stop
    and step: three signed bytes), [the count,] the ids (8 bytes each).
    """
    if len(data) < 5:
        return
    flags, publisher = data[0], data[1]
    cut = slice(*struct.unpack_from('>bbb', data, 2))
    body = data[5:]
    if flags & 1 and len(body) >= 4:
        count, body = struct.unpack_from('>I', body)[0], body[4:]
    else:
        count, body = len(body) // 8, body[:len(body) // 8 * 8]
    frame = memoryview(struct.pack('>HHBI', 0x0003, 1, publisher, count) + body)
    hot = decode_hot(frame)
    try:
        decoded = decode_frame(frame)
    except FrameDecodeError:
        if hot is not None:
            raise Violation('decode_hot accepts a frame decode_frame rejects: {!r}'.format(
                hot)) from None
        return
    codec = decoded.command
    if not isinstance(hot, PublishConfirm) or not isinstance(codec, PublishConfirm):
        raise Violation('decode_hot gave {!r} for {!r}'.format(hot, codec))
    ids = hot.publishing_ids
    if type(ids) is not ConfirmIds or hot.publisher_id != publisher:
        raise Violation('decode_hot gave {!r}'.format(hot))
    expected = struct.unpack('>{}Q'.format(count), body)
    if tuple(codec.publishing_ids) != expected:
        raise Violation('the codec decoded {!r}, not {!r}'.format(codec, expected))
    if hot != codec or ids != expected or ids != list(expected):
        raise Violation('decode_hot {!r} != decode_frame {!r}'.format(hot, codec))
    again = decode_hot(frame)
    if not isinstance(again, PublishConfirm) or ids != again.publishing_ids \
            or hash(ids) != hash(expected):
        raise Violation('ConfirmIds of the same bytes differ, or hash unlike the tuple')
    if len(ids) != count or tuple(ids) != expected:
        raise Violation('ConfirmIds {!r} is not the sequence {!r}'.format(ids, expected))
    _same(ids, expected, 'reversed', lambda x: tuple(reversed(x)))
    _same(ids, expected, 'slice {}'.format(cut), lambda x: tuple(x[cut]))
    for i in (*range(-count - 2, min(count, 8) - count), *range(min(count, 8) + 2)):
        _same(ids, expected, 'index {}'.format(i), operator.itemgetter(i))
    probes = {0, 2**64 - 1, *expected[:4], *expected[-2:]}
    for value in probes:
        _same(ids, expected, '{} in'.format(value), operator.methodcaller('__contains__', value))
        _same(ids, expected, 'count({})'.format(value), operator.methodcaller('count', value))
        _same(ids, expected, 'index({})'.format(value), operator.methodcaller('index', value))
    if pickle.loads(pickle.dumps(ids)) != expected:
        raise Violation('ConfirmIds pickled and loaded is not {!r}'.format(expected))
    # the messages a publisher waits for: every other id confirmed, and one
    # id that is not
    tracked = sorted({*expected[::2], 2**64 - 1 - count})[:64]
    fast = _confirmed(ids, tracked)
    slow = _confirmed(expected, tracked)
    if fast != slow:
        raise Violation('confirmed from ConfirmIds {!r}, from a tuple {!r}'.format(fast, slow))

#
# AMQP 1.0
#

def target_amqp(data: bytes) -> None:
    """
    The AMQP 1.0 decoder: a message (bit 0 of the first byte clear) or a
    single value; what decodes re-encodes, and its encoding is stable.
    """
    if not data:
        return
    body = data[1:]
    try:
        if data[0] & 1:
            value = decode_value(body)
        else:
            message = decode_amqp(body)
    except AMQPDecodeError:
        return
    try:
        first = encode_value(value) if data[0] & 1 else encode_message(message)
    except AMQPEncodeError:
        # a value the decoder takes leniently (e.g. a signed message id)
        # and the encoder refuses: a typed error, not a broken decoder
        return
    if data[0] & 1:
        second = encode_value(decode_value(first))
    else:
        second = encode_message(decode_amqp(first))
    if first != second:
        raise Violation('re-encoding is not stable: {} != {}'.format(first.hex(), second.hex()))

TARGETS: dict[str, Target] = {
    'frames': target_frames,
    'core': target_core,
    'responses': target_responses,
    'commands': target_commands,
    'chunk': target_chunk,
    'chunk_gzip': target_chunk_gzip,
    'chunk_zstd': target_chunk_zstd,
    'chunk_lz4': target_chunk_lz4,
    'chunk_snappy': target_chunk_snappy,
    'amqp': target_amqp,
    'confirm_ids': target_confirm_ids,
}
"""The fuzz targets by name (as ``scripts/fuzz.sh`` takes them)."""

__all__ = [
    'TARGETS', 'Target', 'Violation', 'chunk_bytes', 'codec_entries', 'pieces', 'sub_batch_chunk',
]
