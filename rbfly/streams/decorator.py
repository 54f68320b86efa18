"""
The ``connection`` decorator (as in RbFly 0.10): a coroutine function or
async generator function whose first argument is a client disconnects the
client when it returns.
"""

from __future__ import annotations

import functools
import inspect
import typing as tp

F = tp.TypeVar('F', bound=tp.Callable[..., tp.Any])

class Disconnectable(tp.Protocol):
    """
    What the decorator needs of a client: a way to disconnect it (typed
    against this, not :py:class:`~rbfly.streams.StreamsClient`, the
    decorator stays below the facade that exports it).
    """
    async def disconnect(self) -> None:
        """Close the client's connections."""

def connection(func: F) -> F:
    """
    Decorate a coroutine function or an async generator function whose
    first argument is a :py:class:`~rbfly.streams.StreamsClient`, so the
    client is disconnected when it returns.
    """
    if inspect.isasyncgenfunction(func):
        @functools.wraps(func)
        async def wrapper_gen(client: Disconnectable, *args: tp.Any, **kw: tp.Any) -> tp.Any:
            try:
                async for value in func(client, *args, **kw):
                    yield value
            finally:
                await client.disconnect()
        return tp.cast(F, wrapper_gen)

    @functools.wraps(func)
    async def wrapper(client: Disconnectable, *args: tp.Any, **kw: tp.Any) -> tp.Any:
        try:
            return await func(client, *args, **kw)
        finally:
            await client.disconnect()
    return tp.cast(F, wrapper)

__all__ = ['Disconnectable', 'connection']
