"""
Validating writer of a RabbitMQ Streams frame.

Every value of an encoded command goes through :py:class:`Writer`, which
checks it against its wire type and raises
:py:class:`~rbfly.streams.protocol.errors.ProtocolEncodeError`, naming the
field, instead of sending a frame the broker would misread. The length of a
string is the length of its UTF-8 encoding, never ``len(str)``.

See :py:mod:`rbfly.streams.protocol.reader` for the quoted grammar of the
types.
"""

import struct
from collections.abc import Mapping

from .errors import ProtocolEncodeError

_U8 = struct.Struct('>B')
_U16 = struct.Struct('>H')
_U32 = struct.Struct('>I')
_U64 = struct.Struct('>Q')
_I16 = struct.Struct('>h')
_I32 = struct.Struct('>i')
_I64 = struct.Struct('>q')

MAX_U32 = 2**32 - 1
MAX_STRING_SIZE = 2**15 - 1
MAX_BYTES_SIZE = 2**31 - 1


class Writer:
    """
    Growing buffer of one frame, starting with a placeholder for its size.

    :py:meth:`frame` fills in the size, so the caller never computes it.
    """

    __slots__ = ('_buf',)

    def __init__(self) -> None:
        self._buf = bytearray(4)

    def _int(
        self, packer: struct.Struct, low: int, high: int, value: int, what: str
    ) -> None:
        # bool is accepted on purpose: it is an int, e.g. `ConsumerUpdate.active`
        if not isinstance(value, int) or not low <= value <= high:
            raise ProtocolEncodeError(
                f'{what} must be an integer in range {low}..{high}, got {value!r}'
            )
        self._buf += packer.pack(value)

    def u8(self, value: int, what: str) -> None:
        """Write an `uint8` value."""
        self._int(_U8, 0, 0xFF, value, what)

    def u16(self, value: int, what: str) -> None:
        """Write an `uint16` value."""
        self._int(_U16, 0, 0xFFFF, value, what)

    def u32(self, value: int, what: str) -> None:
        """Write an `uint32` value."""
        self._int(_U32, 0, MAX_U32, value, what)

    def u64(self, value: int, what: str) -> None:
        """Write an `uint64` value."""
        self._int(_U64, 0, 2**64 - 1, value, what)

    def i16(self, value: int, what: str) -> None:
        """Write an `int16` value."""
        self._int(_I16, -(2**15), 2**15 - 1, value, what)

    def i32(self, value: int, what: str) -> None:
        """Write an `int32` value."""
        self._int(_I32, -(2**31), 2**31 - 1, value, what)

    def i64(self, value: int, what: str) -> None:
        """Write an `int64` value."""
        self._int(_I64, -(2**63), 2**63 - 1, value, what)

    def string(self, value: str | None, what: str, max_length: int = 0) -> None:
        """
        Write a `string`; `None` is written as a null string (-1 length).

        :param max_length: If not zero, the maximum number of characters,
            for fields limited by the specification (references).
        """
        if value is None:
            self._buf += _I16.pack(-1)
            return
        if not isinstance(value, str):
            raise ProtocolEncodeError(
                f'{what} must be a string, got {type(value).__name__}'
            )
        if max_length and len(value) > max_length:
            raise ProtocolEncodeError(
                f'{what} must have at most {max_length} characters, got {len(value)}'
            )
        try:
            data = value.encode('utf-8')
        except UnicodeEncodeError as ex:
            raise ProtocolEncodeError(
                f'{what} cannot be encoded as UTF-8: {ex.reason}'
            ) from None
        if len(data) > MAX_STRING_SIZE:
            raise ProtocolEncodeError(
                f'{what} must be at most {MAX_STRING_SIZE} bytes in UTF-8, got {len(data)}'
            )
        self._buf += _I16.pack(len(data))
        self._buf += data

    def bytes_(self, value: bytes | bytearray | memoryview | None, what: str) -> None:
        """Write `bytes`; `None` is written as null (-1 length)."""
        if value is None:
            self._buf += _I32.pack(-1)
            return
        size = self._size(value, what)
        if size > MAX_BYTES_SIZE:
            raise ProtocolEncodeError(
                f'{what} must be at most {MAX_BYTES_SIZE} bytes, got {size}'
            )
        self._buf += _I32.pack(size)
        self._buf += value

    def raw(self, value: bytes | bytearray | memoryview, what: str) -> None:
        """Write bytes without a length, e.g. the Osiris chunk of `Deliver`."""
        self._size(value, what)
        self._buf += value

    def array_size(self, count: int, what: str) -> None:
        """Write the `int32` size of an array."""
        if count > MAX_BYTES_SIZE:
            raise ProtocolEncodeError(
                f'{what} must have at most {MAX_BYTES_SIZE} items, got {count}'
            )
        self._buf += _I32.pack(count)

    def string_map(self, value: Mapping[str, str], what: str) -> None:
        """Write an array of `string` key/value pairs."""
        if not isinstance(value, Mapping):
            raise ProtocolEncodeError(
                f'{what} must be a mapping, got {type(value).__name__}'
            )
        self.array_size(len(value), what)
        string = self.string
        for key, item in value.items():
            string(key, what + ' key')
            string(item, what + ' value')

    def frame(self) -> bytes:
        """Return the frame, with its `uint32` size prefix filled in."""
        size = len(self._buf) - 4
        if size > MAX_U32:
            raise ProtocolEncodeError(
                f'frame of {size} bytes exceeds the uint32 size limit'
            )
        _U32.pack_into(self._buf, 0, size)
        return bytes(self._buf)

    @staticmethod
    def _size(value: bytes | bytearray | memoryview, what: str) -> int:
        if isinstance(value, bytes | bytearray):
            return len(value)
        if isinstance(value, memoryview) and value.c_contiguous:
            return value.nbytes
        raise ProtocolEncodeError(
            f'{what} must be bytes, bytearray or a contiguous memoryview,'
            f' got {type(value).__name__}'
        )


__all__ = ['Writer']
