"""
A single active consumer group as the broker lists it, through its CLI
(``rabbitmq-streams list_stream_group_consumers``): what the consumer
group tests (``test_handoff``, ``test_bulk``) check and report on failure.
"""

import asyncio
import json
import os
import signal
import subprocess
import typing as tp

from .test_update_secret import SCRIPT

async def group_consumers(
        broker: str, stream: str, group: str, timeout: float | None = None,
) -> list[dict[str, tp.Any]]:
    """
    The members of the test's group on a stream, as the broker lists them
    (none: the group does not exist).

    :param group: The group (the consumers' name).
    :param timeout: Seconds the broker's CLI may take (``None``: no
        limit). It starts an Erlang VM each time: on this 2-core machine
        at a load of 20, ``rabbitmq-diagnostics ping`` took 53 s and one
        listing more than 6 minutes.
    :raises subprocess.TimeoutExpired: When it takes longer.
    """
    result = await asyncio.to_thread(
        run_group, [SCRIPT, 'ctl', broker, 'rabbitmq-streams', '-q', 'list_stream_group_consumers',
                    '--stream', stream, '--reference', group, '--formatter', 'json'],
        timeout,
    )
    if result.returncode != 0 and 'group does not exist' in result.stdout + result.stderr:
        return []
    result.check_returncode()
    return tp.cast(list[dict[str, tp.Any]], json.loads(result.stdout))

def run_group(cmd: list[str], timeout: float | None) -> subprocess.CompletedProcess[str]:
    """
    Run a command in a process group of its own, killed whole when it
    takes longer than ``timeout`` (the broker's CLI is a script starting
    an Erlang VM: killing the script alone leaves the VM running).
    """
    with subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
