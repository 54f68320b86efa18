import asyncio
import typing as tp

from typing_extensions import disjoint_base

from ._unconfirmed import Unconfirmed

@disjoint_base
class Confirmation:
    future: asyncio.Future[None]
    remaining: int

    def __init__(self, future: asyncio.Future[None], remaining: int) -> None: ...
    def confirm(self) -> None: ...
    def fail(self, error: Exception) -> None: ...

def explicit_ids(
    messages: list[tp.Any], first: int, unconfirmed: Unconfirmed,
) -> list[int] | None: ...
def track(
    unconfirmed: Unconfirmed,
    waiting: dict[int, Confirmation],
    messages: list[tp.Any],
    first: int,
    ids: list[int] | None,
    confirmation: Confirmation | None,
) -> None: ...
def confirm(
    unconfirmed: Unconfirmed,
    waiting: dict[int, Confirmation],
    publishing_ids: tp.Iterable[int],
) -> int: ...
