"""
The open-file limit the project's scripts give the RabbitMQ nodes they
start (``scripts/lib/nofile.sh``, sourced by ``scripts/brokers.sh`` and
``scripts/cluster.sh``): raised before a node starts, and checked
(``brokers.sh limits``, ``cluster.sh limits``) from each node's
``/proc/PID/limits``, failing below RabbitMQ's recommended 65536. The
shell functions run in bash on files made here; no broker.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / 'scripts' / 'lib'

def bash(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``script`` in bash, with common.sh and nofile.sh sourced as the scripts do."""
    prelude = 'set -euo pipefail; LOG_TAG=test; . {}; . {}; '.format(
        LIB / 'common.sh', LIB / 'nofile.sh')
    return subprocess.run(
        ['bash', '-c', prelude + script], capture_output=True, text=True, check=False,
        env={'PATH': '/usr/bin:/bin', **env},
    )

def limits(soft: str, hard: str) -> str:
    """A /proc/PID/limits as Linux writes it."""
    return (
        'Limit                     Soft Limit           Hard Limit           Units     \n'
        'Max processes             63465                63465                processes \n'
        'Max open files            {:<20} {:<20} files     \n'
        'Max locked memory         8388608              8388608              bytes     \n'
    ).format(soft, hard)

@pytest.mark.parametrize(('soft', 'ok'), [
    ('1024', False),      # Debian's default: the host broker's under runuser
    ('20000', False),
    ('65535', False),
    ('65536', True),
    ('1048576', True),
    ('unlimited', True),
])
def test_check(tmp_path: Path, soft: str, ok: bool) -> None:
    """A node's limit at or above 65536 passes; below, the check fails saying so."""
    path = tmp_path / 'limits'
    path.write_text(limits(soft, '1048576'))
    done = bash('nofile_check "310 (pid 7)" {}'.format(path))
    assert done.returncode == (0 if ok else 1)
    if ok:
        assert done.stdout == '310 (pid 7): open files {}\n'.format(soft)
    else:
        assert done.stdout.startswith(
            "310 (pid 7): open files {}, under RabbitMQ's recommended 65536 (restart".format(soft))

def test_check_unreadable(tmp_path: Path) -> None:
    """A process gone (no limits file): fails, saying it cannot tell."""
    done = bash('nofile_check 4 {}'.format(tmp_path / 'gone'))
    assert done.returncode == 1
    assert done.stdout == '4: open files unknown (cannot read {})\n'.format(tmp_path / 'gone')

def test_check_threshold_from_environment(tmp_path: Path) -> None:
    path = tmp_path / 'limits'
    path.write_text(limits('20000', '20000'))
    assert bash('nofile_check x {}'.format(path), BROKERS_NOFILE='16384').returncode == 0

def current_hard() -> int:
    done = bash('ulimit -Hn')
    return int(done.stdout)

def test_raise_within_hard_limit() -> None:
    """Under the hard limit the soft one is set to BROKERS_NOFILE, what a node inherits."""
    want = current_hard() - 10
    done = bash('ulimit -Sn 512; raise_nofile; ulimit -Sn', BROKERS_NOFILE=str(want))
    assert done.returncode == 0, done.stderr
    assert done.stdout == '{}\n'.format(want)
    assert 'WARNING' not in done.stderr

def test_raise_past_hard_limit() -> None:
    """
    Above a hard limit (lowered here, so that only a process with
    CAP_SYS_RESOURCE may raise it again): raised where allowed; else the
    soft limit goes up to the hard one, with a warning naming both.
    """
    hard = current_hard() - 10
    done = bash('ulimit -Sn 512; ulimit -Hn {}; raise_nofile; echo "$(ulimit -Sn) $(ulimit -Hn)"'
                .format(hard), BROKERS_NOFILE=str(hard + 5))
    assert done.returncode == 0, done.stderr
    soft, new_hard = map(int, done.stdout.split())
    if new_hard == hard + 5:       # allowed to raise it
        assert soft == hard + 5
    else:
        assert (soft, new_hard) == (hard, hard)
        assert "the hard limit of open files here is {}, under RabbitMQ's recommended {}".format(
            hard, hard + 5) in done.stderr

def test_scripts_raise_before_starting_a_node() -> None:
    """
    Both scripts raise the limit where they start a node, and the host
    broker is not started through runuser, whose PAM session set it back
    to 1,024.
    """
    brokers = (ROOT / 'scripts' / 'brokers.sh').read_text()
    launch = brokers[brokers.index('launch() {'):brokers.index('start_one() {')]
    assert launch.index('raise_nofile') < launch.index('setsid')
    assert 'runuser -u' not in launch
    cluster = (ROOT / 'scripts' / 'cluster.sh').read_text()
    node = cluster[cluster.index('launch_node() {'):cluster.index('declare -A RETRIED')]
    assert node.index('raise_nofile') < node.index('setsid')
    assert 'ulimit -n 65536' not in brokers + cluster

def test_listener_of_a_closed_port() -> None:
    """No process on the port: nothing, and the script goes on (errexit, pipefail)."""
    done = bash('echo "[$(listener_pid 1)]"; listener_pid 1; echo on')
    assert (done.returncode, done.stdout) == (0, '[]\non\n')
