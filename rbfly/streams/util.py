"""
Helpers of the client API: input checks, broker version parsing, the
client-side message filter, stream location, and the ``connection``
decorator.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing as tp

from ..amqp import MessageCtx
from .types import MessageFilter

if tp.TYPE_CHECKING:
    from .client import StreamsClient

MAX_STREAM_NAME = 255


def version(properties: tp.Mapping[str, str]) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in properties.get('version', '0').split('+')[0].split('.')[:3])
    except ValueError:
        return (0,)

def check_name(what: str, name: str) -> None:
    if not isinstance(name, str) or not name:
        raise ValueError('{} name must be a non-empty str, got {!r}'.format(what, name))
    if len(name.encode('utf-8')) > MAX_STREAM_NAME:
        raise ValueError('{} name longer than {} bytes: {!r}...'.format(
            what, MAX_STREAM_NAME, name[:32]
        ))

@dataclasses.dataclass(frozen=True)
class StreamInfo:
    """
    Location of a stream.

    :param stream: Stream name.
    :param leader: Host and port of the stream's leader (None while it has
        none).
    :param replicas: Hosts and ports of its replicas.
    """
    stream: str
    leader: tuple[str, int] | None
    replicas: list[tuple[str, int]]

def post_filter(flt: MessageFilter, messages: list[MessageCtx]) -> list[MessageCtx]:
    # the broker filters chunks with a Bloom filter; drop its false positives
    extract = flt.extract
    values = flt.values
    unfiltered = flt.match_unfiltered
    result = []
    for m in messages:
        value = extract(m)
        if value in values or (unfiltered and value is None):
            result.append(m)
    return result

F = tp.TypeVar('F', bound=tp.Callable[..., tp.Any])

def connection(func: F) -> F:
    """
    Decorate a coroutine function or an async generator function whose
    first argument is a :py:class:`StreamsClient`, so the client is
    disconnected when it returns.
    """
    if inspect.isasyncgenfunction(func):
        @functools.wraps(func)
        async def wrapper_gen(client: StreamsClient, *args: tp.Any, **kw: tp.Any) -> tp.Any:
            try:
                async for value in func(client, *args, **kw):
                    yield value
            finally:
                await client.disconnect()
        return tp.cast(F, wrapper_gen)

    @functools.wraps(func)
    async def wrapper(client: StreamsClient, *args: tp.Any, **kw: tp.Any) -> tp.Any:
        try:
            return await func(client, *args, **kw)
        finally:
            await client.disconnect()
    return tp.cast(F, wrapper)

__all__ = ['MAX_STREAM_NAME', 'StreamInfo', 'check_name', 'connection', 'post_filter', 'version']
