from collections.abc import AsyncGenerator
from types import TracebackType
from typing import Any, Self

from typing_extensions import disjoint_base

from ...types import AMQPBody
from .handoff import Holding
from .tracking import OffsetTracker

@disjoint_base
class Bodies(AsyncGenerator[AMQPBody]):
    # the extension type takes its arguments in __cinit__ (tp_new); its
    # __init__ is object's
    def __new__(
        cls, chunks: AsyncGenerator[list[Any]], tracker: OffsetTracker | None = None,
        holding: Holding | None = None,
    ) -> Self: ...
    def __aiter__(self) -> Bodies: ...
    async def __anext__(self) -> AMQPBody: ...
    async def asend(self, value: None) -> AMQPBody: ...
    async def athrow(
        self,
        typ: type[BaseException] | BaseException,
        val: BaseException | object = None,
        tb: TracebackType | None = None,
    ) -> AMQPBody: ...
    async def aclose(self) -> None: ...
    def hand_back(self) -> None: ...
    async def commit(self) -> None: ...
