import typing as tp
from collections.abc import Coroutine

_T = tp.TypeVar('_T')  # private: not a name of the module at runtime

def ready(value: _T) -> Coroutine[tp.Any, tp.Any, _T]: ...
