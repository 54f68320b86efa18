from collections.abc import AsyncGenerator
from types import TracebackType
from typing import Any

from ..types import AMQPBody
from .tracking import OffsetTracker

class Bodies(AsyncGenerator[AMQPBody]):
    def __init__(
        self, chunks: AsyncGenerator[list[Any]], tracker: OffsetTracker | None = None,
    ) -> None: ...
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
