"""
What the client says of a publisher's unconfirmed messages when its
context ends on a cancellation or an exception: each case of the warning,
without a broker (tests/integration/test_publisher_stop.py has the
cancelled publishing loop on RabbitMQ).
"""

import asyncio
import dataclasses as dtc
import logging
import typing as tp

import pytest

from rbfly.streams.lifecycle import ResourceState
from rbfly.streams.parts.publishing import warn_unconfirmed
from rbfly.streams.publishers.base import PublisherTrait

@dtc.dataclass
class Ended:
    """What the warning reads of a publisher."""
    name: str
    stream: str = 'orders'
    unconfirmed: int = 7
    state: ResourceState = ResourceState.OPEN

def _warn(
        caplog: pytest.LogCaptureFixture, publisher: Ended, cause: BaseException,
        generated: bool = False,
) -> str:
    caplog.clear()
    with caplog.at_level(logging.WARNING, 'rbfly.streams.publisher'):
        warn_unconfirmed(tp.cast(PublisherTrait, publisher), cause, generated)
    [record] = caplog.records
    assert (record.name, record.levelno) == ('rbfly.streams.publisher', logging.WARNING)
    return record.getMessage()

def test_named_cancelled(caplog: pytest.LogCaptureFixture) -> None:
    message = _warn(caplog, Ended('shop'), asyncio.CancelledError())
    assert message == (
        "publisher 'shop' of stream 'orders' cancelled with 7 messages not confirmed:"
        " they were sent and the broker may store them, but no confirmation will come"
        " (the publisher is deleted); sending them again, with their publishing ids,"
        " from a publisher named 'shop' stores each once (the broker drops those it has)."
        " To wait for them, leave the publisher's context normally (or flush())"
    )

def test_exception(caplog: pytest.LogCaptureFixture) -> None:
    message = _warn(caplog, Ended('shop'), KeyError('x'))
    assert message.startswith("publisher 'shop' of stream 'orders' ended by KeyError with 7")

@pytest.mark.parametrize('name, generated, says', [
    ('rbfly-0123', True, "may store them twice (the publisher's name 'rbfly-0123' was generated"),
    ('', False, 'may store them twice (an anonymous publisher, dedup=False)'),
])
def test_not_deduplicated(
        caplog: pytest.LogCaptureFixture, name: str, generated: bool, says: str,
) -> None:
    assert says in _warn(caplog, Ended(name), asyncio.CancelledError(), generated)

def test_connection_lost(caplog: pytest.LogCaptureFixture) -> None:
    """Recovering, the messages wait for a connection that will not come."""
    ended = Ended('shop', state=ResourceState.RECOVERING)
    message = _warn(caplog, ended, asyncio.CancelledError())
    assert 'they may or may not be stored: its connection was lost, and they are not' \
        ' sent again;' in message
