"""
Codec of composite fields shared by requests and responses.

Grammar, quoted from PROTOCOL.adoc ("Subscribe", "ConsumerUpdate",
"ExchangeCommandVersions")::

    OffsetSpecification => OffsetType Offset
      OffsetType => uint16 // 0 (none), 1 (first), 2 (last), 3 (next),
                           // 4 (offset), 5 (timestamp)
      Offset => uint64 (for offset) | int64 (for timestamp)

    [Command]
      Command => Key MinVersion MaxVersion
      Key => uint16
      MinVersion => uint16
      MaxVersion => uint16

The offset is present only for types 4 and 5, as the broker reads it
(``rabbit_stream_core.erl``).
"""

from collections.abc import Sequence

from .base import CommandVersion, OffsetSpec
from .constants import OffsetSpecType
from .errors import ProtocolEncodeError
from .reader import Reader
from .writer import Writer

_OFFSET_TYPES = {t.value: t for t in OffsetSpecType}


def write_offset_spec(w: Writer, spec: OffsetSpec, what: str, allow_none: bool) -> None:
    """
    Write an offset specification.

    :param allow_none: Whether type 0 (none) is valid; only in a
        `ConsumerUpdate` response.
    """
    kind = spec.type
    if kind not in _OFFSET_TYPES or (kind == OffsetSpecType.NONE and not allow_none):
        raise ProtocolEncodeError(f'{what} has invalid offset type {kind!r}')
    w.u16(kind, what + ' type')
    value = spec.value
    has_value = kind in (OffsetSpecType.OFFSET, OffsetSpecType.TIMESTAMP)
    if has_value != (value is not None):
        need = 'needs a value' if has_value else 'takes no value'
        raise ProtocolEncodeError(
            f'{what} of type {_OFFSET_TYPES[kind].name} {need}, got {value!r}'
        )
    if value is None:
        return
    if kind == OffsetSpecType.OFFSET:
        w.u64(value, what + ' offset')
    else:
        w.i64(value, what + ' timestamp')


def read_offset_spec(r: Reader, what: str, allow_none: bool) -> OffsetSpec:
    """Read an offset specification; see :py:func:`write_offset_spec`."""
    start = r.offset
    kind = _OFFSET_TYPES.get(r.u16(what + ' type'))
    if kind is None or (kind == OffsetSpecType.NONE and not allow_none):
        raise r.error(f'invalid {what} type', start)
    if kind == OffsetSpecType.OFFSET:
        return OffsetSpec(kind, r.u64(what + ' offset'))
    if kind == OffsetSpecType.TIMESTAMP:
        return OffsetSpec(kind, r.i64(what + ' timestamp'))
    return OffsetSpec(kind)


def write_versions(w: Writer, versions: Sequence[CommandVersion], what: str) -> None:
    """Write the array of `ExchangeCommandVersions` (request or response)."""
    w.array_size(len(versions), what)
    for v in versions:
        w.u16(v.key, what + ' key')
        w.u16(v.min_version, what + ' min version')
        w.u16(v.max_version, what + ' max version')


def read_versions(r: Reader, what: str) -> tuple[CommandVersion, ...]:
    """Read the array of `ExchangeCommandVersions` (request or response)."""
    count = r.array_size(what, 6)
    u16 = r.u16
    return tuple(
        CommandVersion(u16(what + ' key'), u16(what + ' min'), u16(what + ' max'))
        for _ in range(count)
    )


__all__ = ['read_offset_spec', 'read_versions', 'write_offset_spec', 'write_versions']
