"""
The logs of a consumer group run (:py:mod:`soak.consumer_group`), as the
workers and the producer write them and the controller and the analysis
(:py:mod:`soak.consumer_group.analysis`) read them.

A worker's log has a line per message processed, written with one
``os.write`` to a file opened with ``O_APPEND`` (a SIGKILL leaves whole
lines; a torn last line is ignored anyway)::

    <partition> <offset> <seq> <time>

and marker lines, starting with ``#``::

    # start <pid> <time>                 the process runs
    # state <partition> <state> <time>   a partition's subscription changed state
    # update <partition> <active|inactive> <time>   the broker made it active or not
    # closed <time>                      the iterator is closed (SIGTERM)
    # stopped <time>                     the client is closed, exiting with 0

The producer's log has a line per confirmed batch and markers::

    # start <time>
    c <first seq> <last seq> <time>      sequence numbers first..last confirmed
    # end <time>

Times are ``time.monotonic()``: one clock for all the processes of a
machine (CLOCK_MONOTONIC on Linux).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

@dataclass(frozen=True, slots=True)
class Processing:
    """A message a worker processed (a line of its log)."""
    worker: int
    partition: str
    offset: int
    seq: int
    time: float

@dataclass(frozen=True, slots=True)
class Marker:
    """A marker line of a worker's log: its kind and the fields after it."""
    kind: str
    fields: tuple[str, ...]

def parse_line(worker: int, line: bytes) -> Processing | Marker | None:
    """
    A line of a worker's log, without its newline; ``None`` when it is not
    one (the controller reads only whole lines, so this is a bug of the
    worker, and the analysis counts them).
    """
    parts = line.decode('utf-8', 'replace').split()
    if len(parts) >= 2 and parts[0] == '#':
        return Marker(parts[1], tuple(parts[2:]))
    if len(parts) != 4:
        return None
    try:
        return Processing(worker, parts[0], int(parts[1]), int(parts[2]), float(parts[3]))
    except ValueError:
        return None

class LogTail:
    """
    Reads the whole lines a worker appended to its log since the last
    read: the controller follows the workers while they run. A line
    without its newline yet (being written, or torn by a SIGKILL) waits
    for the next read.
    """
    def __init__(self, worker: int, path: Path) -> None:
        self.worker = worker
        self.path = path
        self.position = 0
        self.bad = 0
        self._rest = b''

    @property
    def torn(self) -> bool:
        """The file ends within a line (being written, or torn by a SIGKILL)."""
        return bool(self._rest)

    def read(self) -> Iterator[Processing | Marker]:
        """The records of the lines added since the last call."""
        try:
            with self.path.open('rb') as f:
                f.seek(self.position)
                data = f.read()
        except FileNotFoundError:
            return
        self.position += len(data)
        data = self._rest + data
        lines = data.split(b'\n')
        self._rest = lines.pop()  # b'' after a newline
        for line in lines:
            record = parse_line(self.worker, line)
            if record is None:
                self.bad += 1
            else:
                yield record

@dataclass
class WorkerLog:
    """What a worker's log holds."""
    processings: list[Processing] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    bad_lines: int = 0
    torn: bool = False  # the file ends within a line (a SIGKILL while writing)

    def has(self, kind: str) -> bool:
        return any(m.kind == kind for m in self.markers)

    def add(self, record: Processing | Marker) -> None:
        if isinstance(record, Processing):
            self.processings.append(record)
        else:
            self.markers.append(record)

def read_log(worker: int, path: Path) -> WorkerLog:
    """All the whole lines of a worker's log."""
    tail = LogTail(worker, path)
    log = WorkerLog()
    for record in tail.read():
        log.add(record)
    log.bad_lines = tail.bad
    log.torn = tail.torn
    return log

@dataclass(frozen=True)
class ProducerLog:
    """What the producer's log holds: the confirmed sequence numbers, when it published."""
    confirmed: frozenset[int]
    start: float | None
    end: float | None

def read_producer_log(path: Path) -> ProducerLog:
    confirmed: set[int] = set()
    start = end = None
    try:
        text = path.read_text()
    except FileNotFoundError:
        text = ''
    for line in text.split('\n')[:-1]:  # whole lines only
        parts = line.split()
        if len(parts) == 4 and parts[0] == 'c':
            confirmed.update(range(int(parts[1]), int(parts[2]) + 1))
        elif len(parts) == 3 and parts[:2] == ['#', 'start']:
            start = float(parts[2])
        elif len(parts) == 3 and parts[:2] == ['#', 'end']:
            end = float(parts[2])
    return ProducerLog(frozenset(confirmed), start, end)

def log_path(directory: str | os.PathLike[str], worker: int) -> Path:
    """The log of a worker."""
    return Path(directory) / 'worker-{}.log'.format(worker)

__all__ = [
    'LogTail', 'Marker', 'Processing', 'ProducerLog', 'WorkerLog', 'log_path', 'parse_line',
    'read_log', 'read_producer_log',
]
