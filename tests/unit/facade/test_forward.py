"""
The facade's methods that are its sections' (``rbfly.streams.facade``):
each is a plain function of :py:class:`~rbfly.streams.StreamsClient`,
named, documented and typed as the section's method, and a call reaches
the section; every public method of a section is the client's.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import pkgutil
import types
from pathlib import Path

import pytest

import rbfly.streams.facade
from rbfly.streams import StreamsClient
from rbfly.streams.facade.forward import Forwarded

from .._mypy import mypy_errors

def sections() -> list[type]:
    """The section classes: the classes each module of the package defines."""
    found: list[type] = []
    for info in pkgutil.iter_modules(rbfly.streams.facade.__path__):
        module = importlib.import_module('rbfly.streams.facade.' + info.name)
        found.extend(
            cls for cls in vars(module).values()
            if isinstance(cls, type) and cls.__module__ == module.__name__
            and cls is not Forwarded
        )
    return found

def section_methods() -> dict[str, types.FunctionType]:
    """The public methods of the sections, by name."""
    methods: dict[str, types.FunctionType] = {}
    for cls in sections():
        for name, member in vars(cls).items():
            if not name.startswith('_') and isinstance(member, types.FunctionType):
                assert name not in methods, 'two sections have {}'.format(name)
                methods[name] = member
    return methods

def test_every_section_method_forwarded() -> None:
    """A method of a section is the client's, a function of its class named as its own."""
    methods = section_methods()
    assert 'create_stream' in methods  # (the sections were found)
    for name, method in methods.items():
        function = vars(StreamsClient).get(name)
        assert isinstance(function, types.FunctionType), name
        assert function.__wrapped__ is method  # type: ignore[attr-defined]
        assert function.__qualname__ == 'StreamsClient.' + name
        assert function.__module__ == 'rbfly.streams.client'
        assert function.__doc__ == method.__doc__ and method.__doc__
        assert inspect.signature(function) == inspect.signature(method)
        assert inspect.iscoroutinefunction(function) == inspect.iscoroutinefunction(method)

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
import typing as tp
from rbfly.streams import Offset, streams_client

async def main() -> None:
    client = streams_client('rabbitmq-stream://localhost')
    tp.assert_type(await client.stream_exists('s'), bool)
    tp.assert_type(await client.end_offset('s'), int | None)
    await client.create_stream('s', max_age='7D', exist_ok=False)
    await client.commit_offset('s', 'r', 10, timeout=1.0)
    tp.assert_type(client.metrics().connections, int)
    await client.create_stream('s', max_age=7)
    await client.stream_exists(1)
    await client.commit_offset('s', 'r', timout=1.0)
    client.subscribe_chunks('s', offset=1)
    await client.process('s', 1)
'''

def test_mypy_checks_forwarded(tmp_path: Path) -> None:
    """mypy --strict checks the arguments and result of a forwarded method, as if spelt out."""
    errors = mypy_errors(tmp_path, SNIPPET)
    lines = sorted({int(e.split(':')[1]) for e in errors})
    assert lines == [12, 13, 14, 15, 16], errors
