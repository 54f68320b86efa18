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
plain function of the client, generated from the method's parameter list
as :py:mod:`dataclasses` generates ``__init__``: the same parameters, each
of its kind and with its default (the client in place of ``self``), an
``async def`` when the method is a coroutine function, with the method's
docstring and type hints and the client's module and qualified name. The
class holds functions only, so autodoc, ``help()`` and :py:mod:`inspect`
see ordinary methods of the client (autodoc marks the coroutine ones
``async``), a wrong call raises ``TypeError`` at once, naming the client's
method (``StreamsClient.create_stream() got an unexpected keyword argument
'max_ag'``) before any coroutine exists, and an attribute set on an
instance hides one, on that instance only. Each call looks the method up
on the client's section, so one replaced on the section's class, or on
one section, is the one called. For mypy, a forwarded method of a client
has the signature of the section's method without ``self`` (a
``ParamSpec``): every parameter is checked as if it were spelt out on the
client.

A method typed by overloads cannot be forwarded (a ``ParamSpec`` takes one
signature): the facade spells those out itself.
"""

from __future__ import annotations

import inspect
import linecache
import types
import typing as tp
from collections.abc import Callable

S = tp.TypeVar('S')
P = tp.ParamSpec('P')
R = tp.TypeVar('R')

Parameter = inspect.Parameter
POSITIONAL = (Parameter.POSITIONAL_ONLY, Parameter.POSITIONAL_OR_KEYWORD)

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
) -> types.FunctionType:
    """
    The method of a section as a function of the facade (``owner``): its
    first argument a facade, whose ``attribute`` is the section; a
    coroutine function if the method is one.

    The function's source is written from the method's signature: the
    parameters as declared (positional-only, keyword-only, ``*args``,
    ``**kwargs``), their defaults bound by name in the namespace the
    source runs in; its body calls ``<first>.<attribute>.<name>(...)``
    with each argument passed as declared. It runs with the method's
    module as its globals, where the method's annotations resolve
    (:py:func:`typing.get_type_hints`).
    """
    qualname = '{}.{}'.format(owner.__qualname__, method.__name__)
    if not isinstance(method, types.FunctionType):
        raise TypeError('{} forwards to {!r}, not a function'.format(qualname, method))
    if not attribute.isidentifier():
        raise ValueError('{} forwards to the section {!r}, not an identifier'.format(
            qualname, attribute,
        ))
    name = method.__name__
    parameters = list(inspect.signature(method, follow_wrapped=False).parameters.values())
    if not parameters or parameters[0].kind not in POSITIONAL:
        raise TypeError('{} forwards to {}, which takes no section first'.format(
            qualname, method.__qualname__,
        ))

    namespace: dict[str, object] = {}  # the defaults, by name
    declared: list[str] = []
    passed: list[str] = []
    previous: Parameter | None = None
    for parameter in parameters:
        kind = parameter.kind
        if previous is not None and previous.kind is Parameter.POSITIONAL_ONLY \
                and kind is not Parameter.POSITIONAL_ONLY:
            declared.append('/')
        if kind is Parameter.KEYWORD_ONLY and previous is not None and previous.kind in POSITIONAL:
            declared.append('*')
        previous = parameter

        text = parameter.name
        if kind is Parameter.VAR_POSITIONAL:
            text = '*' + text
        elif kind is Parameter.VAR_KEYWORD:
            text = '**' + text
        if parameter is not parameters[0]:
            if kind is Parameter.KEYWORD_ONLY:
                passed.append('{0}={0}'.format(parameter.name))
            else:  # positionally, a variadic one unpacked
                passed.append(text)
        if parameter.default is not Parameter.empty:
            default = '__default_' + parameter.name
            namespace[default] = parameter.default
            text = '{}={}'.format(text, default)
        declared.append(text)
    if previous is not None and previous.kind is Parameter.POSITIONAL_ONLY:
        declared.append('/')

    coroutine = inspect.iscoroutinefunction(method)
    source = '{}def {}({}):\n    return {}{}.{}.{}({})\n'.format(
        'async ' if coroutine else '', name, ', '.join(declared),
        'await ' if coroutine else '', parameters[0].name, attribute, name, ', '.join(passed),
    )
    filename = '<facade {}.{}>'.format(owner.__module__, qualname)
    # the def binds the function in the namespace, not in the method's module
    exec(compile(source, filename, 'exec'), method.__globals__, namespace)
    function = namespace[name]
    assert isinstance(function, types.FunctionType)
    function.__code__ = function.__code__.replace(co_name=name, co_qualname=qualname)
    function.__module__ = owner.__module__
    function.__qualname__ = qualname
    function.__doc__ = method.__doc__
    function.__annotations__ = dict(method.__annotations__)
    # inspect.signature follows it to the same signature; inspect.getsource
    # to the method's source, whose defaults autodoc shows as spelt there
    # (``timeout=COMMIT_TIMEOUT``)
    function.__dict__.update(method.__dict__, __wrapped__=method)
    # a traceback through the function, printed by the traceback module (as
    # logging and pytest print them), shows its line
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return function

__all__ = ['Forwarded', 'facade_function']
