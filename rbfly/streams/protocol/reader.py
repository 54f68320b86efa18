"""
Bounds-checked reader of a RabbitMQ Streams frame.

Every byte of a frame is read through :py:class:`Reader`, so a malformed
frame raises :py:class:`rbfly.error.FrameDecodeError`, naming the field
expected and its offset within the frame, and never `IndexError` or
`struct.error`.

Types, quoted from PROTOCOL.adoc ("Types")::

    int8, int16, int32, int64 - Signed integers (big endian order)
    uint8, uint16, uint32, uint64 - Unsigned integers (big endian order)
    bytes - int32 for the length followed by the bytes of content, length
        of -1 indicates null.
    string - int16 for the length followed by the bytes of UTF8-encoded
        content, length of -1 indicates null.
    arrays - int32 for the length followed by the repetition of the
        structure, notation uses [], e.g. [int32] for an array of int32.
"""

import struct

from ...error import FrameDecodeError
from .constants import ResponseCode

_U8 = struct.Struct('>B')
_U16 = struct.Struct('>H')
_U32 = struct.Struct('>I')
_U64 = struct.Struct('>Q')
_I16 = struct.Struct('>h')
_I32 = struct.Struct('>i')
_I64 = struct.Struct('>q')
_CODES: dict[int, int] = {code.value: code for code in ResponseCode}


class Reader:
    """
    Cursor over the bytes of one frame.

    :param data: Frame, without its size prefix.
    """

    __slots__ = ('_end', '_pos', '_view')

    def __init__(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        if not view.c_contiguous:
            view = memoryview(view.tobytes())
        if view.format != 'B' or view.ndim != 1:
            view = view.cast('B')
        self._view = view
        self._pos = 0
        self._end = len(view)

    @property
    def offset(self) -> int:
        """Offset of the next byte to read."""
        return self._pos

    def remaining(self) -> int:
        """Number of bytes left to read."""
        return self._end - self._pos

    def at_end(self) -> bool:
        """Whether the whole frame has been read."""
        return self._pos >= self._end

    def peek(self, size: int) -> bytes | None:
        """Return the next `size` bytes without reading them, if available."""
        pos = self._pos
        return bytes(self._view[pos:pos + size]) if self._end - pos >= size else None

    def error(self, message: str, offset: int | None = None) -> FrameDecodeError:
        """
        Create a decoding error at the cursor (or at `offset`).
        """
        return FrameDecodeError(message, self._pos if offset is None else offset)

    def _need(self, size: int, what: str) -> int:
        pos = self._pos
        if self._end - pos < size:
            raise FrameDecodeError(
                f'expected {what} ({size} bytes), got {self._end - pos} bytes',
                pos,
            )
        self._pos = pos + size
        return pos

    def u8(self, what: str) -> int:
        """Read an `uint8` value."""
        value: int = _U8.unpack_from(self._view, self._need(1, what))[0]
        return value

    def u16(self, what: str) -> int:
        """Read an `uint16` value."""
        value: int = _U16.unpack_from(self._view, self._need(2, what))[0]
        return value

    def u32(self, what: str) -> int:
        """Read an `uint32` value."""
        value: int = _U32.unpack_from(self._view, self._need(4, what))[0]
        return value

    def u64(self, what: str) -> int:
        """Read an `uint64` value."""
        value: int = _U64.unpack_from(self._view, self._need(8, what))[0]
        return value

    def i16(self, what: str) -> int:
        """Read an `int16` value."""
        value: int = _I16.unpack_from(self._view, self._need(2, what))[0]
        return value

    def i32(self, what: str) -> int:
        """Read an `int32` value."""
        value: int = _I32.unpack_from(self._view, self._need(4, what))[0]
        return value

    def i64(self, what: str) -> int:
        """Read an `int64` value."""
        value: int = _I64.unpack_from(self._view, self._need(8, what))[0]
        return value

    def code(self, what: str) -> int:
        """
        Read an `uint16` response code, as a `ResponseCode` member when the
        code is known, so that `repr` of a command names it.
        """
        value = self.u16(what)
        return _CODES.get(value, value)

    def u64_array(self, what: str) -> tuple[int, ...]:
        """Read an array of `uint64` values with one `struct` call."""
        count = self.array_size(what, 8)
        pos = self._need(count * 8, what)
        return struct.unpack_from(f'>{count}Q', self._view, pos)

    def u16_array(self, what: str) -> tuple[int, ...]:
        """Read an array of `uint16` values with one `struct` call."""
        count = self.array_size(what, 2)
        pos = self._need(count * 2, what)
        return struct.unpack_from(f'>{count}H', self._view, pos)

    def view(self, size: int, what: str) -> memoryview:
        """Read `size` bytes as a view of the frame, without a copy."""
        pos = self._need(size, what)
        return self._view[pos:pos + size]

    def rest(self) -> memoryview:
        """Read all remaining bytes as a view of the frame."""
        pos = self._pos
        self._pos = self._end
        return self._view[pos:]

    def optional_string(self, what: str) -> str | None:
        """
        Read a `string`; a length of -1 is `None`.

        Invalid UTF-8 is a decoding error, as a peer that sends it is broken
        and replacing characters would hide stream names that differ.
        """
        start = self._pos
        size = self.i16(what + ' length')
        if size == -1:
            return None
        if size < 0:
            raise FrameDecodeError(
                f'invalid length {size} of {what}', start
            )
        pos = self._need(size, what)
        try:
            return str(self._view[pos:pos + size], 'utf-8')
        except UnicodeDecodeError as ex:
            raise FrameDecodeError(
                f'invalid UTF-8 in {what}: {ex.reason}', pos + ex.start
            ) from None

    def string(self, what: str) -> str:
        """Read a `string` that must not be null."""
        start = self._pos
        value = self.optional_string(what)
        if value is None:
            raise FrameDecodeError(f'expected {what}, got null string', start)
        return value

    def optional_bytes(self, what: str) -> bytes | None:
        """Read `bytes` as a copy; a length of -1 is `None`."""
        start = self._pos
        size = self.i32(what + ' length')
        if size == -1:
            return None
        if size < 0:
            raise FrameDecodeError(
                f'invalid length {size} of {what}', start
            )
        pos = self._need(size, what)
        return bytes(self._view[pos:pos + size])

    def bytes_view(self, what: str) -> memoryview:
        """Read `bytes` that must not be null, as a view of the frame."""
        start = self._pos
        size = self.i32(what + ' length')
        if size < 0:
            raise FrameDecodeError(
                f'invalid length {size} of {what}', start
            )
        return self.view(size, what)

    def array_size(self, what: str, item_size: int) -> int:
        """
        Read the `int32` size of an array.

        The size is checked against the bytes left, so a corrupted size
        fails at once instead of after a long loop.

        :param item_size: Minimum encoded size of one item.
        """
        start = self._pos
        count = self.i32(what + ' count')
        if count < 0 or count * item_size > self._end - self._pos:
            raise FrameDecodeError(
                f'invalid count {count} of {what}, {self._end - self._pos} bytes left',
                start,
            )
        return count

    def string_map(self, what: str) -> dict[str, str]:
        """Read an array of `string` key/value pairs into a dictionary."""
        count = self.array_size(what, 4)
        string = self.string
        return {string(what + ' key'): string(what + ' value') for _ in range(count)}

    def string_array(self, what: str) -> tuple[str, ...]:
        """Read an array of `string` values."""
        count = self.array_size(what, 2)
        string = self.string
        return tuple(string(what) for _ in range(count))

    def expect_end(self, what: str) -> None:
        """Check that the frame has no bytes left after its last field."""
        if self._pos != self._end:
            raise FrameDecodeError(
                f'unexpected {self._end - self._pos} bytes after {what}',
                self._pos,
            )


__all__ = ['Reader']
