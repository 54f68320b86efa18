import asyncio
import typing as tp

from typing_extensions import disjoint_base

from ...amqp import MessageCtx
from ...types import AMQPBody
from ..protocol._publish import SubEntryBatch
from ._unconfirmed import Unconfirmed

def message_size(message: object) -> int: ...

@disjoint_base
class PipelineState:
    window: int
    window_bytes: int
    _pending_bytes: int
    batch_size: int
    batch_bytes: int
    _buffer_bytes: int
    _write_paused: bool
    linger: float
    _timer_handle: asyncio.TimerHandle | None
    message_id: int
    _unconfirmed: Unconfirmed
    _error: Exception | None
    _buffer: list[tp.Any]
    _buffer_first: int
    _scheduled: bool

    def send(
            self, message: AMQPBody | MessageCtx | SubEntryBatch,
    ) -> tp.Coroutine[tp.Any, tp.Any, int]: ...
    def send_many(
            self, messages: tp.Iterable[AMQPBody | MessageCtx | SubEntryBatch],
    ) -> tp.Coroutine[tp.Any, tp.Any, int]: ...
    def _take(self, messages: list[tp.Any], i: int) -> int: ...
