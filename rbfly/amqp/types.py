"""
Explicit AMQP 1.0 types for values whose Python type is ambiguous.

The codec maps Python values to AMQP types as follows (encoding / decoding):

===========================  ===============================  ==================
Python                       AMQP 1.0 (smallest encoding)     decoded as
===========================  ===============================  ==================
``None``                     null                             ``None``
``bool``                     boolean                          ``bool``
``int``                      int (smallint) / long / ulong    ``int``
``float``                    double                           ``float``
``str``                      string (str8/str32)              ``str``
``bytes``, ``bytearray``,    binary (vbin8/vbin32)            ``bytes``
``memoryview``
``rbfly.types.Symbol``       symbol (sym8/sym32)              ``Symbol``
``datetime``                 timestamp (ms; naive is UTC)     ``datetime`` (UTC)
``uuid.UUID``                uuid                             ``uuid.UUID``
``list``, ``tuple``          list (list0/list8/list32)        ``list``
``dict``                     map (map8/map32)                 ``dict``
:py:class:`UByte` ...        ubyte, ushort, uint, ulong       the wrapper
:py:class:`Byte`, ``Short``  byte, short                      the wrapper
:py:class:`Int`, ``Long``    int, long (forced width)         ``int``
:py:class:`Float32`          float                            ``Float32``
:py:class:`Char`             char                             ``Char``
:py:class:`Timestamp`        timestamp                        ``Timestamp`` [#]_
:py:class:`Decimal32` ...    decimal32/64/128 (raw IEEE 754)  the wrapper
:py:class:`Array`            array (array8/array32)           ``Array``
:py:class:`Described`        described type                   ``Described``
===========================  ===============================  ==================

.. [#] A timestamp is decoded as an aware ``datetime`` in UTC; a timestamp
   outside of the range of ``datetime`` (years 1-9999) is decoded as
   :py:class:`Timestamp` instead, so no value is lost.

A Python ``int`` outside of ``-2**63 .. 2**64 - 1`` cannot be encoded and
raises :py:class:`rbfly.error.AMQPEncodeError`; so does a wrapper
constructed with a value outside of its type's range.

The body of a message is a single data section for ``bytes``; several data
sections for :py:class:`DataSections`; amqp-sequence sections for
:py:class:`SequenceSections`; an amqp-value section for anything else.
"""

from __future__ import annotations

import enum
import typing as tp

from ..error import AMQPEncodeError

def _check(name: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise AMQPEncodeError(
            '{} value out of range {}..{}: {}'.format(name, low, high, value)
        )

class UByte(int):
    """AMQP ubyte: integer 0..255."""
    __slots__ = ()

    def __new__(cls, value: int) -> tp.Self:
        _check('ubyte', value, 0, 0xff)
        return super().__new__(cls, value)

class UShort(int):
    """AMQP ushort: integer 0..65535."""
    __slots__ = ()

    def __new__(cls, value: int) -> tp.Self:
        _check('ushort', value, 0, 0xffff)
        return super().__new__(cls, value)

class UInt(int):
    """AMQP uint: integer 0..2**32-1."""
    __slots__ = ()

    def __new__(cls, value: int) -> tp.Self:
        _check('uint', value, 0, 0xffffffff)
        return super().__new__(cls, value)

class ULong(int):
    """AMQP ulong: integer 0..2**64-1."""
    __slots__ = ()

    def __new__(cls, value: int) -> tp.Self:
        _check('ulong', value, 0, 0xffffffffffffffff)
        return super().__new__(cls, value)

class Byte(int):
    """AMQP byte: integer -128..127."""
    __slots__ = ()

    def __new__(cls, value: int) -> tp.Self:
        _check('byte', value, -0x80, 0x7f)
        return super().__new__(cls, value)

class Short(int):
    """AMQP short: integer -32768..32767."""
    __slots__ = ()

    def __new__(cls, value: int) -> tp.Self:
        _check('short', value, -0x8000, 0x7fff)
        return super().__new__(cls, value)

class Int(int):
    """AMQP int: integer -2**31..2**31-1, never widened to long."""
    __slots__ = ()

    def __new__(cls, value: int) -> tp.Self:
        _check('int', value, -0x80000000, 0x7fffffff)
        return super().__new__(cls, value)

class Long(int):
    """AMQP long: integer -2**63..2**63-1, never narrowed to int."""
    __slots__ = ()

    def __new__(cls, value: int) -> tp.Self:
        _check('long', value, -0x8000000000000000, 0x7fffffffffffffff)
        return super().__new__(cls, value)

class Timestamp(int):
    """AMQP timestamp as milliseconds since the Unix epoch (int64)."""
    __slots__ = ()

    def __new__(cls, value: int) -> tp.Self:
        _check('timestamp', value, -0x8000000000000000, 0x7fffffffffffffff)
        return super().__new__(cls, value)

class Decimal32(int):
    """AMQP decimal32: the raw 32 bits of an IEEE 754 decimal32 value."""
    __slots__ = ()

    def __new__(cls, value: int) -> tp.Self:
        _check('decimal32', value, 0, 0xffffffff)
        return super().__new__(cls, value)

class Decimal64(int):
    """AMQP decimal64: the raw 64 bits of an IEEE 754 decimal64 value."""
    __slots__ = ()

    def __new__(cls, value: int) -> tp.Self:
        _check('decimal64', value, 0, 0xffffffffffffffff)
        return super().__new__(cls, value)

class Decimal128(bytes):
    """AMQP decimal128: the raw 16 bytes of an IEEE 754 decimal128 value."""
    __slots__ = ()

    def __new__(cls, value: bytes) -> tp.Self:
        if len(value) != 16:
            raise AMQPEncodeError(
                'decimal128 value must have 16 bytes, got {}'.format(len(value))
            )
        return super().__new__(cls, value)

class Float32(float):
    """AMQP float: 32-bit IEEE 754 (a Python ``float`` is encoded as double)."""
    __slots__ = ()

class Char(str):
    """AMQP char: a single Unicode code point."""
    __slots__ = ()

    def __new__(cls, value: str) -> tp.Self:
        if len(value) != 1:
            raise AMQPEncodeError(
                'char value must be one code point, got {!r}'.format(value)
            )
        return super().__new__(cls, value)

class AMQPType(enum.IntEnum):
    """
    Element type of an AMQP array; the value is the array's element
    constructor (the encoder narrows it to a smaller one where every element
    fits).
    """
    NULL = 0x40
    BOOLEAN = 0x56
    UBYTE = 0x50
    USHORT = 0x60
    UINT = 0x70
    ULONG = 0x80
    BYTE = 0x51
    SHORT = 0x61
    INT = 0x71
    LONG = 0x81
    FLOAT = 0x72
    DOUBLE = 0x82
    DECIMAL32 = 0x74
    DECIMAL64 = 0x84
    DECIMAL128 = 0x94
    CHAR = 0x73
    TIMESTAMP = 0x83
    UUID = 0x98
    BINARY = 0xb0
    STRING = 0xb1
    SYMBOL = 0xb3
    LIST = 0xd0
    MAP = 0xd1
    ARRAY = 0xf0

class Array(list[tp.Any]):
    """
    AMQP array: a sequence of values of one AMQP type.

    Compares equal to a list with the same elements.

    :param values: Elements of the array.
    :param type: AMQP type of every element.
    :param descriptor: Optional descriptor applied to every element
        (a described array).
    """
    __slots__ = ('descriptor', 'type')

    type: AMQPType
    descriptor: tp.Any

    def __init__(
            self,
            values: tp.Iterable[tp.Any],
            type: AMQPType,
            descriptor: tp.Any = None,
    ) -> None:
        super().__init__(values)
        self.type = AMQPType(type)
        self.descriptor = descriptor

    def __repr__(self) -> str:
        return 'Array({}, {})'.format(list.__repr__(self), self.type.name)

class Described:
    """
    AMQP described type: a value with a descriptor (a ``ULong`` code or a
    :py:class:`~rbfly.types.Symbol` name) saying what the value means.
    """
    __slots__ = ('descriptor', 'value')

    descriptor: tp.Any
    value: tp.Any

    def __init__(self, descriptor: tp.Any, value: tp.Any) -> None:
        self.descriptor = descriptor
        self.value = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Described):
            return NotImplemented
        return bool(self.descriptor == other.descriptor and self.value == other.value)

    def __hash__(self) -> int:
        # the value too, unless it is a list or a map: keys of one
        # descriptor would otherwise all share a hash (a map of them decodes
        # in quadratic time); decided by type, not by catching TypeError,
        # which made hashing nested described values exponential in depth
        value = self.value
        if isinstance(value, list | dict):
            return hash((Described, self.descriptor))
        return hash((Described, self.descriptor, value))

    def __repr__(self) -> str:
        return 'Described({!r}, {!r})'.format(self.descriptor, self.value)

class DataSections(list[bytes]):
    """Message body made of several data sections, one per element."""
    __slots__ = ()

class SequenceSections(list[list[tp.Any]]):
    """Message body made of amqp-sequence sections, one list per element."""
    __slots__ = ()

__all__ = [
    'AMQPType',
    'Array',
    'Byte',
    'Char',
    'DataSections',
    'Decimal32',
    'Decimal64',
    'Decimal128',
    'Described',
    'Float32',
    'Int',
    'Long',
    'SequenceSections',
    'Short',
    'Timestamp',
    'UByte',
    'UInt',
    'ULong',
    'UShort',
]
