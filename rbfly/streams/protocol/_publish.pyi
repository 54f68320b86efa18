import typing as tp

from typing_extensions import disjoint_base

POOLED_FRAME: int

@disjoint_base
class SubEntryBatch:
    messages: list[tp.Any]
    compression: int

    def __init__(self, messages: tp.Iterable[tp.Any], compression: int | str = 'none') -> None: ...
    def __len__(self) -> int: ...

@disjoint_base
class PublishEncoder:
    frame_max: int

    def __init__(self, frame_max: int = 0) -> None: ...
    def encode(
        self,
        publisher_id: int,
        messages: list[tp.Any],
        start: int,
        publishing_id: int,
        amqp: bool = True,
        filter_values: list[str | None] | None = None,
        ids: list[int] | None = None,
    ) -> tuple[int, bytes | memoryview]: ...
