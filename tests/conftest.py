"""
Test configuration shared by all tests: every asyncio test runs on the
standard asyncio event loop and on uvloop.
"""

import asyncio
from collections.abc import Callable, Mapping

import pytest
import uvloop

def pytest_asyncio_loop_factories(
        config: pytest.Config, item: pytest.Item,
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    return {'asyncio': asyncio.new_event_loop, 'uvloop': uvloop.new_event_loop}
