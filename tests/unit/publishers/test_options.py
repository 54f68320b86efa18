"""A publisher's options: the record the client checks, as its constructor applies it."""

import typing as tp

import pytest

from rbfly.streams.metrics import Counters
from rbfly.streams.parts.publishing import publisher_options
from rbfly.streams.publishers.awaited import Publisher, PublisherBatchFast
from rbfly.streams.publishers.base import PublisherControl, PublisherTrait
from rbfly.streams.publishers.options import PublisherOptions
from rbfly.streams.publishers.pipelined import PublisherPipelined

class Host:
    """What a publisher asks of its client: nothing here."""
    counters = Counters()
    spin = 0.0

    async def wait_recovery(self, publisher: object) -> None:
        raise AssertionError('not expected')

    def publisher_unknown(self, publisher: object) -> None:
        raise AssertionError('not expected')

class Patient(Publisher):
    """An application's subclass with defaults of its own."""
    confirm_timeout = 5.0
    retry_on_recovery = False

class Small(PublisherPipelined):
    window = 7
    linger = 0.5

P = tp.TypeVar('P', bound=PublisherTrait)

def make(cls: type[P], options: PublisherOptions) -> P:
    return cls(Host(), 's', -1, 'name', 0, None, options)

def default(cls: type[PublisherTrait]) -> PublisherOptions:
    return publisher_options(cls, {})

def test_subclass_defaults_kept() -> None:
    """Options not given leave a subclass's own defaults as they are."""
    p = make(Patient, default(Patient))
    assert (p.confirm_timeout, p.retry_on_recovery) == (5.0, False)
    q = make(Small, default(Small))
    assert (q.window, q.linger, q.window_bytes) == (7, 0.5, 2 << 20)

def test_given_options_win() -> None:
    options = publisher_options(Patient, {'confirm_timeout': 2.0, 'retry_on_recovery': True})
    p = make(Patient, options)
    assert (p.confirm_timeout, p.retry_on_recovery) == (2.0, False)  # True is the default
    options = publisher_options(Publisher, {'retry_on_recovery': False})
    assert make(Publisher, options).retry_on_recovery is False

@pytest.mark.parametrize('cls', [Publisher, PublisherBatchFast, PublisherPipelined])
def test_defaults(cls: type[PublisherTrait]) -> None:
    p = make(cls, default(cls))
    assert (p.confirm_timeout, p.retry_on_recovery) == (None, True)

def test_sub_entry_options() -> None:
    options = publisher_options(PublisherBatchFast, {'sub_entry_size': 10, 'compression': 'gzip'})
    p = make(PublisherBatchFast, options)
    assert (p.sub_entry_size, p.compression) == (10, 1)

def test_publishers_are_controlled() -> None:
    """Every publisher class is what the client's parts drive (checked by mypy too)."""
    control: PublisherControl = make(PublisherPipelined, default(PublisherPipelined))
    assert control.unconfirmed == 0
    assert not control.ended
    control.close()
    assert control.ended
