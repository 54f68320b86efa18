"""
A facade's methods that are its sections' (``rbfly.streams.facade``):
each is a plain function of the facade's class, named, documented and
typed as the section's method, and a call reaches the section.
"""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import pytest

from rbfly.streams.facade.forward import Forwarded

from .._mypy import mypy_errors

class Section:
    """A section of a facade: its methods see the section as ``self``."""
    async def ask(self, value: int, *, twice: bool = False) -> tuple[object, int]:
        """Ask."""
        return self, value * 2 if twice else value

    def tell(self, value: int) -> tuple[object, int]:
        """Tell."""
        return self, value

class Facade:
    ask = Forwarded('_section', Section.ask)
    tell = Forwarded('_section', Section.tell)

    def __init__(self) -> None:
        self._section = Section()

def test_call_reaches_section() -> None:
    """A call, through an instance or the class, runs the method of the facade's section."""
    facade = Facade()
    section = facade._section
    assert asyncio.run(facade.ask(2, twice=True)) == (section, 4)
    assert asyncio.run(Facade.ask(facade, 3)) == (section, 3)
    assert facade.tell(5) == (section, 5)
    assert Facade.tell(facade, 6) == (section, 6)
    assert inspect.iscoroutinefunction(Facade.ask)
    assert not inspect.iscoroutinefunction(Facade.tell)
    assert list(inspect.signature(facade.ask).parameters) == ['value', 'twice']

def test_instance_attribute_hides() -> None:
    """An attribute of an instance hides a forwarded method, on that instance only."""
    facade, other = Facade(), Facade()
    vars(facade)['tell'] = lambda value: ('traced', value)
    assert facade.tell(1) == ('traced', 1)
    assert other.tell(1) == (other._section, 1)

def test_other_name_refused() -> None:
    """A facade's method forwards to a section's method of its name only."""
    with pytest.raises((TypeError, RuntimeError)) as info:  # (3.11 wraps it in a RuntimeError)
        class Wrong:
            query = Forwarded('_section', Section.ask)
    error = info.value if isinstance(info.value, TypeError) else info.value.__cause__
    assert isinstance(error, TypeError), info.value
    assert str(error).endswith('Wrong.query forwards to Section.ask, of another name')

SNIPPET = '''
import asyncio
import typing as tp
from tests.unit.facade.test_forward import Facade

async def main() -> None:
    facade = Facade()
    tp.assert_type(await facade.ask(1, twice=True), tuple[object, int])
    tp.assert_type(facade.tell(1), tuple[object, int])
    tp.assert_type(Facade.tell(facade, 1), tuple[object, int])
    await facade.ask('1')
    await facade.ask(1, twise=True)
    facade.tell()
'''

def test_mypy_checks_forwarded(tmp_path: Path) -> None:
    """mypy --strict checks the arguments and result of a forwarded method, as if spelt out."""
    errors = mypy_errors(tmp_path, SNIPPET)
    lines = sorted({int(e.split(':')[1]) for e in errors})
    assert lines == [11, 12, 13], errors
