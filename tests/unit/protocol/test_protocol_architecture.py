"""
Architecture guard: the sans-IO core imports neither asyncio nor socket.

Each check runs in a fresh interpreter, as asyncpg and uvloop keep such
checks in their test suites, so that modules imported by other tests do
not hide a leak.
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, '-c', code], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_protocol_imports_no_asyncio_nor_socket() -> None:
    """Test the architecture guard of STYLE.md, as written."""
    result = _run(
        'import rbfly.streams.protocol, sys;'
        " assert 'asyncio' not in sys.modules and 'socket' not in sys.modules"
    )
    assert result.returncode == 0, result.stderr


def test_protocol_modules_import_no_io() -> None:
    """
    Test every module of the protocol core and the error module, one by
    one, against a wider list of I/O and event loop modules.
    """
    code = (
        'import importlib, pkgutil, sys\n'
        'import rbfly.streams.protocol as p\n'
        "names = ['rbfly.streams.error'] + [\n"
        "    p.__name__ + '.' + m.name for m in pkgutil.iter_modules(p.__path__)]\n"
        'for name in names:\n'
        '    importlib.import_module(name)\n'
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in\n"
        "             ('asyncio', 'socket', 'selectors', 'ssl', 'uvloop'))\n"
        'assert not bad, bad\n'
    )
    result = _run(code)
    assert result.returncode == 0, result.stderr


def test_client_imports_no_http() -> None:
    """
    Test that importing the client, and the CLI, leaves out what only
    OAuth 2 needs: ``urllib.request`` imports ``http.client``, ``email``
    and more (about 0.1 s of a 0.24 s import); it is imported when a
    token is first asked for.
    """
    result = _run(
        'import sys\n'
        'from rbfly.streams import ClientCredentials, StreamsClient, streams_client\n'
        'import rbfly.cli\n'
        "bad = sorted(m for m in ('urllib.request', 'http.client', 'email.message')\n"
        '             if m in sys.modules)\n'
        'assert not bad, bad\n'
    )
    assert result.returncode == 0, result.stderr
