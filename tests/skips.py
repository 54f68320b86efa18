"""
A pytest plugin (loaded by ``tests/conftest.py``): with ``--no-skips``, a
test skipping for a reason not in :py:data:`ALLOWED_SKIPS` fails the run.
``scripts/pythons.sh`` runs the tests of the other Pythons with it, where a
missing package (mypy, a serializer's) or broker once skipped tests
silently while ``pyproject.toml`` said none skips.
"""

import pytest

ALLOWED_SKIPS = {
    # uvloop resolves a host name through getaddrinfo in a thread, which
    # may ask the network's resolver: the unit test of bad addresses skips
    # the names on uvloop (tests/unit/aio/test_protocol_adapter.py)
    'uvloop asks the resolver, which may go to the network',
}
"""The reasons a test may skip for under ``--no-skips``, each documented above."""

def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        '--no-skips', action='store_true',
        help='fail the run when a test skips for a reason not in tests/skips.py ALLOWED_SKIPS',
    )

def pytest_configure(config: pytest.Config) -> None:
    if config.getoption('--no-skips'):
        config.pluginmanager.register(SkipCheck(), 'rbfly-no-skips')

class SkipCheck:
    """The skips of a run, checked when it ends."""
    def __init__(self) -> None:
        self.skips: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and isinstance(report.longrepr, tuple):
            reason = str(report.longrepr[2]).removeprefix('Skipped: ')
            if reason not in ALLOWED_SKIPS:
                self.skips.append('{}: {}'.format(report.nodeid, reason))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.skips:
            return
        reporter = session.config.pluginmanager.get_plugin('terminalreporter')
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_sep('=', 'skipped, not allowed (--no-skips)', red=True)
            for line in self.skips:
                reporter.write_line(line)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
