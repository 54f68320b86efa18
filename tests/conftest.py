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

# --no-skips: a skip for a reason not allowed fails the run (scripts/pythons.sh)
pytest_plugins = ['tests.skips']

# Hypothesis's deadline (200 ms a case by default) is a timed assertion: on
# a loaded machine a case of 0.4 ms took 322 ms once (Python 3.13, CI with
# other jobs), and Hypothesis failed the test as flaky. No test here asserts
# a time (speed is measured in perf/; tests/unit/test_test_rules.py fails on
# an assert on a clock's difference, and on a sleep standing in for an event).
settings.register_profile('rbfly', deadline=None)
settings.load_profile('rbfly')

def pytest_asyncio_loop_factories(
        config: pytest.Config, item: pytest.Item,
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    if item.get_closest_marker('one_loop') is not None:
        return {'uvloop': uvloop.new_event_loop}
    return {'asyncio': asyncio.new_event_loop, 'uvloop': uvloop.new_event_loop}
