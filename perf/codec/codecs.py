"""
The codecs measured by perf.codec: how each library encodes and
decodes the report's message, and the check that a decoded body equals
the input.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perf.common.errors import SkipImplementation, VerificationError
from perf.common.results import JsonDict, package_version, wheel_info

BUFFER_SIZE = 1024


def make_body() -> dict[str, Any]:
    """Message body of the benchmark; a fresh object for every codec."""
    return {
        'large-int': 2 ** 31 - 1,
        'small-list': [1, 2, 3],
        'bin-string': b'abc',
    }


@dataclass
class Case:
    """
    A codec ready to be timed.

    ``encode`` and ``decode`` are ``timeit`` statements evaluated in
    ``namespace``; ``decode`` decodes ``encoded``, which was produced by
    ``encode``.
    """
    name: str
    version: str | None
    encode: str
    decode: str
    namespace: dict[str, Any]
    encoded: bytes
    api: dict[str, str]
    details: JsonDict = field(default_factory=dict)


#
# body comparison
#

def normalise(value: Any, *, str_as_bytes: bool = False) -> Any:
    """
    Map decoded values to plain Python types, to compare with the input.

    - ``memoryview``, ``bytearray`` -> ``bytes`` (Qpid Proton 0.40 returns
      binary values as ``memoryview``)
    - ``tuple`` -> ``list``
    - subclasses of ``int``, ``str`` and ``bytes`` (Proton's ``int32``,
      ``ulong``, ...) -> the base type; ``bool`` stays ``bool``
    - with ``str_as_bytes``, ``str`` -> UTF-8 ``bytes`` (rstream decodes AMQP
      strings as ``bytes``, so the expected body is adjusted in the same way)
    """
    if isinstance(value, dict):
        return {
            normalise(k, str_as_bytes=str_as_bytes):
                normalise(v, str_as_bytes=str_as_bytes)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [normalise(v, str_as_bytes=str_as_bytes) for v in value]
    return _normalise_scalar(value, str_as_bytes=str_as_bytes)


def _normalise_scalar(value: Any, *, str_as_bytes: bool) -> Any:
    result = value
    if isinstance(value, memoryview | bytearray | bytes):
        result = bytes(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        result = int(value)
    elif isinstance(value, str):
        result = value.encode() if str_as_bytes else str(value)
    return result


def same(a: Any, b: Any) -> bool:
    """Compare normalised values, including types (``1 != 1.0 != True``)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def verify(name: str, decoded: Any, *, str_as_bytes: bool = False) -> None:
    expected = normalise(make_body(), str_as_bytes=str_as_bytes)
    actual = normalise(decoded, str_as_bytes=False)
    if not same(actual, expected):
        raise VerificationError(
            f'{name}: decoded body differs from the input\n'
            f'  expected: {expected!r}\n'
            f'  decoded:  {decoded!r}\n'
            f'  normalised: {actual!r}'
        )


def _import(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as ex:
        raise SkipImplementation(f'cannot import {module} ({ex})') from ex


def _module_file(module: Any) -> str | None:
    path = getattr(module, '__file__', None)
    return str(path) if path else None


#
# implementations
#

def load_rbfly() -> Case:
    amqp = _import('rbfly.amqp')
    try:
        message_ctx = amqp.MessageCtx
        encode_amqp = amqp.encode_amqp
        decode_amqp = amqp.decode_amqp
    except AttributeError as ex:
        raise SkipImplementation(
            f'rbfly.amqp at {_module_file(amqp) or amqp.__path__} has no codec ({ex})'
        ) from ex

    msg = message_ctx(make_body(), None, None, None, None, None, None)
    buf = bytearray(BUFFER_SIZE)
    size = encode_amqp(buf, msg)
    if not isinstance(size, int) or not 0 < size <= BUFFER_SIZE:
        raise VerificationError(f'rbfly: encode_amqp returned {size!r}')
    data = bytes(buf[:size])
    verify('rbfly', decode_amqp(data).body)

    ext = sorted(Path(_module_file(amqp) or '.').parent.glob('_message*.so'))
    return Case(
        name='rbfly',
        version=package_version('rbfly'),
        encode='encode_amqp(buf, msg)',
        decode='decode_amqp(data)',
        namespace={
            'encode_amqp': encode_amqp, 'decode_amqp': decode_amqp,
            'buf': buf, 'msg': msg, 'data': data,
        },
        encoded=data,
        api={
            'encode': 'rbfly.amqp.encode_amqp(bytearray(1024), MessageCtx(body, None x 6))',
            'decode': 'rbfly.amqp.decode_amqp(data).body',
        },
        details={
            'module_file': _module_file(amqp),
            'extensions': [str(p) for p in ext],
            'wheel': wheel_info('rbfly'),
        },
    )


def load_rstream() -> Case:
    rstream = _import('rstream')
    amqp_message = rstream.AMQPMessage
    amqp_decoder = rstream.amqp_decoder

    msg = amqp_message(value=make_body())
    data = bytes(msg)
    # rstream decodes AMQP str8-utf8/str32-utf8 as bytes, not str
    verify('rstream', amqp_decoder(data).value, str_as_bytes=True)

    return Case(
        name='rstream',
        version=package_version('rstream'),
        encode='bytes(msg)',
        decode='amqp_decoder(data)',
        namespace={'amqp_decoder': amqp_decoder, 'msg': msg, 'data': data},
        encoded=data,
        api={
            'encode': 'bytes(rstream.AMQPMessage(value=body))'
                      ' -> _pyamqp._encode.encode_payload(bytearray(), msg)',
            'decode': 'rstream.amqp_decoder(data).value'
                      ' -> _pyamqp._decode.decode_payload(memoryview(data))',
        },
        details={'module_file': _module_file(rstream)},
    )


def load_proton() -> Case:
    proton = _import('proton')
    message = proton.Message

    msg = message(body=make_body())
    data = msg.encode()
    decoded = message()
    decoded.decode(data)
    # proton 0.40 returns binary as memoryview over the message's own
    # memory; compare while `decoded` is alive
    verify('proton', decoded.body)
    del decoded

    return Case(
        name='proton',
        version=package_version('python-qpid-proton'),
        encode='msg.encode()',
        decode='Message().decode(data)',
        namespace={'Message': message, 'msg': msg, 'data': data},
        encoded=bytes(data),
        api={
            'encode': 'proton.Message(body=body).encode()',
            'decode': 'proton.Message().decode(data); .body',
        },
        details={'module_file': _module_file(proton)},
    )


LOADERS: dict[str, Callable[[], Case]] = {
    'rbfly': load_rbfly,
    'rstream': load_rstream,
    'proton': load_proton,
}


#
# running
#

__all__ = [
    'LOADERS',
    'Case',
    '_import',
    '_module_file',
    '_normalise_scalar',
    'load_proton',
    'load_rbfly',
    'load_rstream',
    'make_body',
    'normalise',
    'same',
    'verify',
]
