"""
Every request names its response class, and the codec agrees.

The table is read from the code, not listed here: the requests are the
subclasses of :py:class:`~rbfly.streams.protocol.base.Request` in the
commands module, checked against the codec's tables (which commands take a
correlation id, which responses carry one) and against the wire keys (a
response's key is its request's with the response bit). A new command is
checked without a line here.
"""

import dataclasses
import types
import typing as tp

import pytest

from rbfly.streams.protocol import RESPONSE_FLAG, commands
from rbfly.streams.protocol.base import CommandBase, Request
from rbfly.streams.protocol.request_codec import TABLE as REQUEST_TABLE
from rbfly.streams.protocol.response_codec import TABLE as RESPONSE_TABLE

REQUESTS: list[type[Request[CommandBase]]] = sorted(
    (
        c for c in vars(commands).values()
        if isinstance(c, type) and issubclass(c, Request) and c is not Request
    ),
    key=lambda c: c.__name__,
)
RESPONSES = {cls for cls, _, _, _ in RESPONSE_TABLE}

def _fields(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}

def test_requests_are_the_correlated_commands() -> None:
    """A command is a request exactly when the codec sends it with a correlation id."""
    correlated = {cls for cls, corr, _, _ in REQUEST_TABLE if corr}
    assert set(REQUESTS) == correlated
    assert len(REQUESTS) == 22  # of the 33 requests and one-way commands

@pytest.mark.parametrize('request_class', REQUESTS, ids=lambda c: c.__name__)
def test_response_of_request(request_class: type[Request[CommandBase]]) -> None:
    """
    A request's response (``RESPONSE``, what the adapter checks) is the
    parameter of its base (what a type checker reads), a response of the
    codec with the request's key and a correlation id.
    """
    response = request_class.RESPONSE
    bases = vars(request_class)['__orig_bases__']
    assert [(tp.get_origin(b), tp.get_args(b)) for b in bases] == [(Request, (response,))]
    assert response in RESPONSES
    assert response.KEY == request_class.KEY | RESPONSE_FLAG
    assert response.VERSION == request_class.VERSION
    assert 'correlation_id' in _fields(response)

def test_each_correlated_response_answers_one_request() -> None:
    """The responses with a correlation id answer one request each; the others none."""
    answers = [r.RESPONSE for r in REQUESTS]
    assert len(set(answers)) == len(answers)
    assert set(answers) == {r for r in RESPONSES if 'correlation_id' in _fields(r)}
    assert RESPONSES - set(answers) == {commands.CreditResponse, commands.TuneResponse}

@pytest.mark.parametrize('request_class', REQUESTS, ids=lambda c: c.__name__)
def test_request_stays_frozen_and_slotted(request_class: type[Request[CommandBase]]) -> None:
    """
    The generic base adds no instance dictionary and keeps the dataclass
    frozen. (``typing.Generic`` is a class with empty ``__slots__`` up to
    Python 3.11, a C type without them from 3.12: what counts is that the
    instances have no dictionary.)
    """
    assert request_class.__dictoffset__ == 0
    assert all('__slots__' in vars(c) for c in request_class.__mro__
               if c.__module__.startswith('rbfly.'))
    assert vars(request_class)['__dataclass_params__'].frozen

def test_request_must_name_its_response() -> None:
    """A request class without its response, or with a response that is no command, is refused."""
    with pytest.raises(TypeError, match='Bare must name its response'):
        types.new_class('Bare', (Request,))
    generic = tp.cast(tp.Any, Request)
    with pytest.raises(TypeError, match='Wrong: the response of a request must be a command'):
        types.new_class('Wrong', (generic[int],))
