"""
Tests needing a broker that is missing (RabbitMQ 4.x, 4.3, the cluster,
the script that restarts a broker) skip, but fail under continuous
integration (``CI=true``): pytest runs them here in a subprocess with the
brokers pointed at a port nobody listens on.
"""

import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TESTS = [
    'tests/integration/test_stream_arguments.py::test_every_argument_read_back',  # 4.3
    'tests/integration/test_recovery.py::test_broker_restart',  # 4.x and the script
    'tests/cluster/test_placement.py::test_replicas_only',  # the cluster
]

def closed_url() -> str:
    """A stream URL of a local port nobody listens on."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    return 'rabbitmq-stream://guest:guest@127.0.0.1:{}/'.format(port)

def run(ci: str | None) -> tuple[int, str]:
    env = dict(os.environ)
    env.pop('CI', None)
    if ci is not None:
        env['CI'] = ci
    env.update(
        RBFLY_URL4=closed_url(), RBFLY_URL43=closed_url(), RBFLY_CLUSTER_URLS='',
        RBFLY_BROKERS_SCRIPT='',
    )
    proc = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-rfEs', '-p', 'no:cacheprovider', *TESTS],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr

def test_skipped_outside_ci() -> None:
    """Without CI, a missing broker skips its tests: the run passes."""
    code, out = run(None)
    assert code == 0, out
    assert '6 skipped' in out, out

def test_failed_in_ci() -> None:
    """Under CI, each of them fails, naming what is missing: the run fails."""
    code, out = run('true')
    assert code == 1, out
    assert '6 errors' in out and 'skipped' not in out, out
    assert 'RabbitMQ 4.3 broker not reachable' in out
    assert 'RabbitMQ 4.x broker not reachable' in out
    assert 'cluster not provisioned' in out
    assert 'CI is set: a missing broker fails the run' in out
