"""
The facade's methods that are its sections' (``rbfly.streams.facade``):
each is a plain function of :py:class:`~rbfly.streams.StreamsClient`,
named, documented and typed as the section's method, and a call reaches
the section; every public method of a section is the client's.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import inspect
import pkgutil
import re
import types
import typing
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import rbfly.streams.facade
from rbfly.streams import StreamsClient, streams_client
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
        assert function.__qualname__ == 'StreamsClient.' + name
        assert function.__code__.co_qualname == 'StreamsClient.' + name
        assert function.__module__ == 'rbfly.streams.client'
        assert function.__doc__ == method.__doc__ and method.__doc__
        assert inspect.iscoroutinefunction(function) == inspect.iscoroutinefunction(method)
        assert typing.get_type_hints(function) == typing.get_type_hints(method)

def test_signature_exact() -> None:
    """
    A forwarded function takes what the section's method takes, ``self``
    first (as it was spelt out on the client): its own parameters, not
    only those ``inspect.signature`` finds through ``__wrapped__``.
    """
    for name, method in section_methods().items():
        function = vars(StreamsClient)[name]
        signature = inspect.signature(method)
        assert inspect.signature(function, follow_wrapped=False) == signature, name
        assert inspect.signature(function) == signature, name
        assert next(iter(signature.parameters)) == 'self'
        assert function.__defaults__ == method.__defaults__, name
        assert function.__kwdefaults__ == method.__kwdefaults__, name

Call = tuple[tuple[object, ...], dict[str, object]]

def wrong_calls(function: Callable[..., object]) -> Iterator[Call]:
    """
    Calls of ``function`` (given a client first) that do not bind: an
    unknown keyword (a keyword given twice, when it takes any keyword),
    and too few arguments (too many, when none is required).
    """
    parameters = list(inspect.signature(function).parameters.values())[1:]
    takes_keywords = any(p.kind is p.VAR_KEYWORD for p in parameters)
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if takes_keywords:
        yield tuple(range(len(positional))), {positional[0].name: 0}
    else:
        yield (), {'no_such_option': 1}
    if any(p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
           for p in parameters):
        yield (), {}
    else:
        yield tuple(range(len(positional) + 1)), {}

class Unreachable:
    """A section no call may reach."""
    def __getattr__(self, name: str) -> typing.NoReturn:
        raise AssertionError('the section was reached for {}'.format(name))

def test_wrong_call_raises_at_once() -> None:
    """
    A call of a forwarded method that does not bind raises ``TypeError``
    naming the client's method, when called: no coroutine is made, none is
    left never awaited, the section is not reached.
    """
    client = streams_client('rabbitmq-stream://localhost')
    kinds = tuple(sections())
    for attribute, section in list(vars(client).items()):
        if isinstance(section, kinds):
            setattr(client, attribute, Unreachable())
    for name in section_methods():
        function = vars(StreamsClient)[name]
        for args, kw in wrong_calls(function):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter('always')
                with pytest.raises(TypeError) as info:
                    getattr(client, name)(*args, **kw)
                gc.collect()
            assert re.match(r'StreamsClient\.{}\(\) '.format(name), str(info.value)), info.value
            assert not caught, [str(w.message) for w in caught]

def test_patched_section_method() -> None:
    """A call looks the method up on the section: one replaced there is called."""
    client = streams_client('rabbitmq-stream://localhost')
    administration = client._administration
    section = type(administration)

    async def exists(stream: str) -> str:
        return 'instance ' + stream

    async def exists_of_class(self: object, stream: str) -> str:
        return 'class ' + stream

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(section, 'stream_exists', exists_of_class)
        assert asyncio.run(client.stream_exists('s')) == 'class s'  # type: ignore[comparison-overlap]
        patch.setattr(administration, 'stream_exists', exists)
        assert asyncio.run(client.stream_exists('s')) == 'instance s'  # type: ignore[comparison-overlap]
    health = client.health()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(client._observing, 'health', lambda limits=None: ('patched', limits))
        assert client.health() == ('patched', None)  # type: ignore[comparison-overlap]
    assert type(client.health()) is type(health)

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

class Kinds:
    """A section whose method takes parameters of every kind."""
    def every(
            self, a: int, /, b: int = 2, *args: int, c: int, d: int = 4, **kw: int,
    ) -> tuple[object, ...]:
        """Every kind."""
        return a, b, args, c, d, kw

    async def every_async(
            self, a: int, /, b: int = 2, *args: int, c: int, d: int = 4, **kw: int,
    ) -> tuple[object, ...]:
        """Every kind, awaited."""
        return a, b, args, c, d, kw

    def only(self, a: int, b: int = 2, /) -> tuple[int, int]:
        """Positional only."""
        return a, b

class KindsFacade:
    every = Forwarded('_kinds', Kinds.every)
    every_async = Forwarded('_kinds', Kinds.every_async)
    only = Forwarded('_kinds', Kinds.only)

    def __init__(self) -> None:
        self._kinds = Kinds()

def test_every_kind_passed() -> None:
    """Each argument reaches the section as declared: positional only, variadic, keyword only."""
    facade = KindsFacade()
    result = (1, 5, (6, 7), 3, 4, {'e': 8})
    assert facade.every(1, 5, 6, 7, c=3, e=8) == result
    assert asyncio.run(facade.every_async(1, 5, 6, 7, c=3, e=8)) == result
    assert facade.every(1, c=3) == (1, 2, (), 3, 4, {})
    assert facade.every(1, b=5, c=3, d=9) == (1, 5, (), 3, 9, {})
    assert facade.only(1) == (1, 2)
    for name in ('every', 'every_async', 'only'):
        function = vars(KindsFacade)[name]
        signature = inspect.signature(function, follow_wrapped=False)
        assert signature == inspect.signature(getattr(Kinds, name))
    missing = r"^KindsFacade\.every\(\) missing 1 required positional argument: 'a'"
    with pytest.raises(TypeError, match=missing):  # (a is positional only)
        facade.every(a=1, c=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r'^KindsFacade\.only\(\) takes from 2 to 3 positional'):
        facade.only(1, 2, 3)  # type: ignore[call-arg]

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
