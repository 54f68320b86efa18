from typing_extensions import disjoint_base

from ...amqp import MessageCtx
from ...error import MessageDecodeError

@disjoint_base
class ChunkInfo:
    chunk_type: int
    first_offset: int
    num_records: int
    num_entries: int
    timestamp: float
    epoch: int
    failures: dict[int, MessageDecodeError] | None

    @property
    def next_offset(self) -> int: ...

DEFAULT_MAX_CHUNK_UNCOMPRESSED: int
ON_DECODE_ERROR: tuple[str, ...]

def read_header(chunk: bytes | bytearray | memoryview) -> ChunkInfo: ...

def decode_chunk(
    chunk: bytes | bytearray | memoryview,
    start_offset: int = 0,
    amqp: bool = True,
    check_crc: bool = True,
    stream: str | None = None,
    max_uncompressed: int = ...,
    on_decode_error: str | None = None,
) -> tuple[ChunkInfo, list[MessageCtx]]: ...
