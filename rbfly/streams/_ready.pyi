import typing as tp
from collections.abc import Coroutine

T = tp.TypeVar('T')

def ready(value: T) -> Coroutine[tp.Any, tp.Any, T]: ...
