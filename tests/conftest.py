"""
Test configuration shared by all tests: every asyncio test runs on the
standard asyncio event loop and on uvloop, but for a test marked
``one_loop``: one that checks what another program (the Java client's
JVM) makes of rbfly's bytes, where the event loop plays no part and the
other program's start is most of the test's time, or one that kills a
cluster node (its boot after the test is most of the test's time, and
the failover logic lies above the event loop). It runs on uvloop.
"""

import asyncio
from collections.abc import Callable, Mapping

import pytest
import uvloop
from hypothesis import settings

# no per-example time limit for property tests: a deadline is a timed
# assertion, and on a loaded machine a correct decoder misses it (200 ms,
# test_fuzz_mutated, once at a load of 12); the examples' count bounds them
settings.register_profile('rbfly', deadline=None)
settings.load_profile('rbfly')

def pytest_asyncio_loop_factories(
        config: pytest.Config, item: pytest.Item,
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    if item.get_closest_marker('one_loop') is not None:
        return {'uvloop': uvloop.new_event_loop}
    return {'asyncio': asyncio.new_event_loop, 'uvloop': uvloop.new_event_loop}
