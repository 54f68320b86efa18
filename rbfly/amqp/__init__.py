"""
AMQP 1.0 message codec (Cython).

The names known from RbFly 0.10 stay valid: :py:class:`MessageCtx`,
:py:func:`encode_amqp`, :py:func:`decode_amqp`, :py:class:`AMQPHeader`,
:py:class:`~rbfly.types.Symbol`, :py:func:`get_message_ctx` and
:py:func:`set_message_ctx`. The mapping between Python and AMQP types is
described in :py:mod:`rbfly.amqp.types`.
"""

from ..types import Symbol
from ._decoder import decode_value
from ._encoder import encode_value
from ._message import (
    AMQPHeader,
    AMQPProperties,
    MessageCtx,
    get_message_ctx,
    msg_ctx,
    set_message_ctx,
)
from ._sections import decode_amqp, encode_amqp, encode_message
from .types import (
    AMQPType,
    Array,
    Byte,
    Char,
    DataSections,
    Decimal32,
    Decimal64,
    Decimal128,
    Described,
    Float32,
    Int,
    Long,
    SequenceSections,
    Short,
    Timestamp,
    UByte,
    UInt,
    ULong,
    UShort,
)

__all__ = [
    'AMQPHeader',
    'AMQPProperties',
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
    'MessageCtx',
    'SequenceSections',
    'Short',
    'Symbol',
    'Timestamp',
    'UByte',
    'UInt',
    'ULong',
    'UShort',
    'decode_amqp',
    'decode_value',
    'encode_amqp',
    'encode_message',
    'encode_value',
    'get_message_ctx',
    'msg_ctx',
    'set_message_ctx',
]
