"""The state of a publisher or subscription, without a broker."""

import logging
import typing as tp

import pytest

from rbfly.streams import ConnectionLost, PublisherPipelined, ResourceState, StateChange
from rbfly.streams.lifecycle import Lifecycle
from rbfly.streams.parts.publishing import publisher_options
from rbfly.streams.publishers.awaited import Publisher
from rbfly.streams.publishers.options import PublisherOptions

S = ResourceState

def test_transitions() -> None:
    """Open, recovering, recovered, closed; each change reported once, with why."""
    changes: list[StateChange] = []
    life = Lifecycle('publisher', 's', changes.append)
    assert life.state is S.OPENING
    life.lost(ConnectionLost('gone'))  # lost while declaring: still opening
    assert changes == []
    life.opened()
    error = ConnectionLost('cut')
    life.lost(error)
    life.lost(ConnectionLost('again'))  # the first reason stands
    life.opened()
    life.move(S.CLOSED, 'closed by the application')
    life.opened()  # final
    assert [(c.previous, c.state, c.reason) for c in changes] == [
        (S.OPENING, S.OPEN, 'declared'),
        (S.OPEN, S.RECOVERING, 'cut'),
        (S.RECOVERING, S.OPEN, 'recovered'),
        (S.OPEN, S.CLOSED, 'closed by the application'),
    ]
    assert changes[1].error is error
    assert all(c.kind == 'publisher' and c.stream == 's' for c in changes)

def test_listener_error_logged(caplog: pytest.LogCaptureFixture) -> None:
    """A listener's exception is logged; the others are still called."""
    seen: list[StateChange] = []

    def bad(change: StateChange) -> None:
        raise RuntimeError('bug')

    life = Lifecycle('subscription', 's', bad)
    life.listen(seen.append)
    with caplog.at_level(logging.ERROR):
        life.opened()
    assert life.state is S.OPEN and len(seen) == 1
    assert 'state listener' in caplog.text

def test_listener_not_callable() -> None:
    with pytest.raises(TypeError, match='callable'):
        Lifecycle('publisher', 's').listen(1)  # type: ignore[arg-type]

@pytest.mark.parametrize('option, value, match', [
    ('enqueue_timeout', 0, 'enqueue_timeout must be positive'),
    ('enqueue_timeout', float('nan'), 'enqueue_timeout must be positive'),
    ('linger', -0.1, 'linger must be zero or positive'),
    ('linger', '1', 'linger must be zero or positive'),
    ('window', 1.5, 'window must be at least 1'),
])
def test_pipelined_option_values(option: str, value: object, match: str) -> None:
    args: tp.Any = {option: value}
    with pytest.raises(ValueError, match=match):
        publisher_options(PublisherPipelined, args)

def test_pipelined_options_other_class() -> None:
    with pytest.raises(ValueError, match='linger is an option of PublisherPipelined only'):
        publisher_options(Publisher, {'linger': 0.1})

def test_options_set() -> None:
    options = publisher_options(PublisherPipelined, {
        'window': 5, 'enqueue_timeout': 2, 'linger': 0, 'retry_on_recovery': False,
    })
    assert options == PublisherOptions(
        window=5, enqueue_timeout=2.0, linger=0.0, retry_on_recovery=False,
    )
