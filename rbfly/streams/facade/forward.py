"""
A method of the facade that is a method of one of its sections.

``create_stream = Forwarded('_administration', Administration.create_stream)``
in the body of :py:class:`~rbfly.streams.StreamsClient` makes
``client.create_stream(...)`` call the ``create_stream`` method of the
client's ``_administration`` object: the section holds the method's
signature, docstring and code, and its own dependencies; the client holds
the section. No state is shared through the client's ``self`` (a section
is not a base class of the client).

When the class is made, :py:class:`Forwarded` puts in its own place a
plain function of the client (a coroutine function when the section's
method is one) with the method's name, docstring, signature (the client in
place of ``self``) and type hints, and the client's module and qualified
name: the class holds functions only, so autodoc, ``help()`` and
:py:mod:`inspect` see ordinary methods of the client (autodoc marks the
coroutine ones ``async``), and an attribute set on an instance hides one,
on that instance only. For mypy, a forwarded method of a client has the
signature of the section's method without ``self`` (a ``ParamSpec``):
every parameter is checked as if it were spelt out on the client.

A method typed by overloads cannot be forwarded (a ``ParamSpec`` takes one
signature): the facade spells those out itself.
"""

from __future__ import annotations

import functools
import inspect
import typing as tp
from collections.abc import Awaitable, Callable

S = tp.TypeVar('S')
P = tp.ParamSpec('P')
R = tp.TypeVar('R')

class Forwarded(tp.Generic[S, P, R]):
    """
    A method of the facade that is a method of one of its sections, in
    the facade's class body.

    :param attribute: The facade's attribute holding the section.
    :param method: The section's method, named as the facade's.
    """
    __slots__ = ('_attribute', '_method')

    def __init__(self, attribute: str, method: Callable[tp.Concatenate[S, P], R]) -> None:
        self._attribute = attribute
        self._method = method

    def __set_name__(self, owner: type, name: str) -> None:
        method = self._method
        if method.__name__ != name:
            raise TypeError('{}.{} forwards to {}, of another name'.format(
                owner.__qualname__, name, method.__qualname__,
            ))
        setattr(owner, name, facade_function(owner, self._attribute, method))

    if tp.TYPE_CHECKING:  # what the function put in its place gives
        @tp.overload
        def __get__(
                self, client: None, owner: type,
        ) -> Callable[tp.Concatenate[object, P], R]: ...

        @tp.overload
        def __get__(self, client: object, owner: type | None = None) -> Callable[P, R]: ...

        def __get__(self, client: object, owner: type | None = None) -> Callable[..., R]: ...

def facade_function(
        owner: type, attribute: str, method: Callable[..., object],
) -> Callable[..., object]:
    """
    The method of a section as a function of the facade (``owner``): its
    first argument a facade, whose ``attribute`` is the section; a
    coroutine function if the method is one.
    """
    function: Callable[..., object]
    if inspect.iscoroutinefunction(method):
        coroutine = tp.cast(Callable[..., Awaitable[object]], method)

        async def forwarded_coroutine(client: object, /, *args: object, **kw: object) -> object:
            return await coroutine(getattr(client, attribute), *args, **kw)

        function = forwarded_coroutine
    else:
        def forwarded(client: object, /, *args: object, **kw: object) -> object:
            return method(getattr(client, attribute), *args, **kw)

        function = forwarded
    functools.update_wrapper(function, method)
    function.__module__ = owner.__module__
    function.__qualname__ = '{}.{}'.format(owner.__qualname__, method.__name__)
    return function

__all__ = ['Forwarded', 'facade_function']
