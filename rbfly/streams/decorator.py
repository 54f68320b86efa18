"""
The ``connection`` decorator (as in RbFly 0.10): a coroutine function or
async generator function whose first argument is a client disconnects the
client when it returns.
"""

from __future__ import annotations

import functools
import inspect
import typing as tp

if tp.TYPE_CHECKING:
    from .client import StreamsClient

F = tp.TypeVar('F', bound=tp.Callable[..., tp.Any])

def connection(func: F) -> F:
    """
    Decorate a coroutine function or an async generator function whose
    first argument is a :py:class:`~rbfly.streams.StreamsClient`, so the
    client is disconnected when it returns.
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

__all__ = ['connection']
