"""
Basic types shared by the AMQP codec and the streams client.

:py:class:`Symbol` and the type aliases keep the names and places they had
in RbFly 0.10.
"""

import typing as tp
import uuid
from collections.abc import Sequence
from datetime import datetime

class Symbol:
    """
    AMQP 1.0 symbol: a value from a constrained domain, like
    ``Symbol('x-opt-offset')``.

    Instances are interned, so ``Symbol('a') is Symbol('a')``; that makes
    comparing and hashing them as cheap as for any object. Python ``str``
    values are encoded as AMQP strings, so a symbol always needs this
    explicit wrapper.
    """
    __slots__ = ('name',)
    __cache__: tp.ClassVar[dict[str, 'Symbol']] = {}

    name: str

    def __new__(cls, name: str) -> 'Symbol':
        try:
            return Symbol.__cache__[name]
        except KeyError:
            pass
        if not isinstance(name, str):
            raise TypeError('symbol name must be str, got {}'.format(type(name).__name__))
        obj = object.__new__(cls)
        obj.name = name
        return Symbol.__cache__.setdefault(name, obj)

    def __reduce__(self) -> tuple[type['Symbol'], tuple[str]]:
        return (Symbol, (self.name,))

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return 'Symbol<{}>'.format(self.name)

AMQPMessageId: tp.TypeAlias = str | bytes | int | uuid.UUID
AMQPScalar: tp.TypeAlias = str | bool | int | float | datetime \
    | uuid.UUID | Symbol | bytes | None
"""AMQP simple (non-compound) value."""

AMQPSequence: tp.TypeAlias = Sequence['AMQPBody']
AMQPMap: tp.TypeAlias = dict['AMQPBody', 'AMQPBody']

AMQPBody: tp.TypeAlias = AMQPSequence | AMQPMap | AMQPScalar
"""Application data sent as (the body of) an AMQP message."""

AMQPAnnotations: tp.TypeAlias = dict[Symbol | int, AMQPBody]
"""AMQP message annotations (keys are symbols or ulongs)."""

AMQPAppProperties: tp.TypeAlias = dict[str, AMQPScalar]
"""Application properties of an AMQP message (string keys, simple values)."""

__all__ = [
    'AMQPAnnotations',
    'AMQPAppProperties',
    'AMQPBody',
    'AMQPMessageId',
    'AMQPScalar',
    'Symbol',
]
