"""
Test configuration shared by all tests: every asyncio test runs on the
standard asyncio event loop and on uvloop, but for a test marked
``one_loop``: one that checks what another program (the Java client's
JVM) makes of rbfly's bytes, where the event loop plays no part and the
other program's start is most of the test's time. It runs on uvloop.
"""

import asyncio
from collections.abc import Callable, Mapping

import pytest
import uvloop

def pytest_asyncio_loop_factories(
        config: pytest.Config, item: pytest.Item,
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    if item.get_closest_marker('one_loop') is not None:
        return {'uvloop': uvloop.new_event_loop}
    return {'asyncio': asyncio.new_event_loop, 'uvloop': uvloop.new_event_loop}
