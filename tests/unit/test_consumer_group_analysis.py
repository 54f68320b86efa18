"""
``soak/consumer_group/analysis.py``, the figures of the consumer group run,
on made-up logs: a duplicate is charged to the worker that processed the
message first (a kill's, within its bound, when that worker held the
partition until it was killed; any other a graceful hand-off's), a killed
worker owned the partitions whose last message before its death was its
own, lost messages are confirmed ones never processed, and a
worker stopped with SIGTERM must exit 0 with its marker.
"""

from pathlib import Path

from soak.consumer_group.analysis import (
    GroupCheck,
    GroupMember,
    LeaderKill,
    Marker,
    Processing,
    ProducerLog,
    Scenario,
    WorkerLog,
    WorkerRun,
    active_workers,
    analyse,
    analyse_directory,
    parse_group_members,
    parse_line,
    quantile,
    read_log,
    read_producer_log,
    save_run,
)
from soak.consumer_group.report import as_json, table

P0, P1 = 'ss-0', 'ss-1'

def _log(*items: tuple[str, int, int, float], stopped: bool = True) -> WorkerLog:
    log = WorkerLog()
    for partition, offset, seq, time in items:
        log.add(Processing(-1, partition, offset, seq, time))
    if stopped:
        log.add(Marker('stopped', ('0.0',)))
    return log

def _run(index: int, log: WorkerLog, stop: str, stop_time: float, exit_code: int) -> WorkerRun:
    # the worker number of a processing is its run's
    log.processings = [
        Processing(index, p.partition, p.offset, p.seq, p.time) for p in log.processings
    ]
    return WorkerRun(index, 0.0, stop=stop, stop_time=stop_time,  # type: ignore[arg-type]
                     exit_code=exit_code, exit_time=stop_time + 0.1, log=log)

def _scenario(messages: int, restarts: int = 1) -> Scenario:
    return Scenario([P0, P1], store_every=2, store_interval=1.0, t0=0.0, restarts=restarts,
                    kills=1, messages=messages)

def test_parse_line() -> None:
    assert parse_line(3, b'ss-1 17 42 100.5') == Processing(3, 'ss-1', 17, 42, 100.5)
    assert parse_line(3, b'# state ss-1 open 1.0') == Marker('state', ('ss-1', 'open', '1.0'))
    assert parse_line(3, b'ss-1 17 42') is None
    assert parse_line(3, b'ss-1 x 42 1.0') is None

def test_tail_waits_for_whole_lines(tmp_path: Path) -> None:
    """A line without its newline (being written, torn by a SIGKILL) is not read."""
    path = tmp_path / 'worker-0.log'
    path.write_bytes(b'# start 1 0.5\nss-0 0 7 1.0\nss-0 1 8')
    log = read_log(0, path)
    assert [p.seq for p in log.processings] == [7]
    assert log.has('start') and log.torn and log.bad_lines == 0
    with path.open('ab') as f:
        f.write(b' 1.5\n')
    assert [p.seq for p in read_log(0, path).processings] == [7, 8]

def test_producer_log(tmp_path: Path) -> None:
    path = tmp_path / 'producer.log'
    path.write_text('# start 1.0\nc 0 2 1.1\nc 3 4 1.2\n# end 3.0\nc 5 9 3.1')  # torn last
    log = read_producer_log(path)
    assert log.confirmed == frozenset(range(5))
    assert (log.start, log.end) == (1.0, 3.0)

def test_graceful_and_kill_duplicates() -> None:
    """
    Partition 0: worker 0 (SIGTERM) processes offsets 0-5, worker 1 resumes
    at 4: two graceful duplicates. Partition 1: worker 1 processes 0-5 and
    is killed; worker 2 resumes at 2: four duplicates of the kill, within
    its bound of 2 + 1 s at 3 messages a second in that partition.
    """
    w0 = _run(0, _log(*((P0, i, i, 1 + i * 0.1) for i in range(6))), 'term', 2, 0)
    w1 = _run(1, _log(
        *((P0, i, i, 3 + i * 0.1) for i in range(4, 8)),
        *((P1, i, 100 + i, 1 + i * 0.1) for i in range(6)),
        stopped=False,
    ), 'kill', 5, -9)
    w2 = _run(2, _log(*((P1, i, 100 + i, 6 + i * 0.1) for i in range(2, 6))), 'final', 9, 0)
    producer = ProducerLog(frozenset([*range(8), *range(100, 106), 200]), 0.0, 2.0)
    figures = analyse(_scenario(15), [w0, w1, w2], producer)

    assert figures.lost == [200]
    assert figures.processed == 14
    assert figures.graceful_duplicates == 2
    assert figures.graceful_by_worker == {0: 2}
    [kill] = figures.kills
    assert kill.worker == 1 and kill.owned == [P0, P1]
    assert dict(kill.duplicates) == {P1: 4}
    # rates: 8 and 6 messages over 2 s of publishing
    assert kill.bound == {P0: 2 + 4, P1: 2 + 3}
    assert kill.ok
    assert [(h.partition, h.old, h.new, h.after_kill) for h in figures.hand_offs] == [
        (P0, 0, 1, False), (P1, 1, 2, True),
    ]
    assert abs(figures.hand_offs[1].pause - (6.2 - 1.5)) < 1e-9

    goals = {g.name: g.ok for g in figures.goals}
    assert goals == {
        'messages confirmed': True,
        'graceful restarts (SIGTERM)': True,
        'kills (SIGKILL)': True,
        'lost': False,
        'duplicates, graceful': False,
        'duplicates, kill 1 (worker 1)': True,
        'workers stopped as told': True,
        'unreadable log lines': True,
        'harness problems': True,
    }
    assert not figures.ok
    text = table(figures)
    assert 'duplicates, graceful' in text and 'FAILED' in text
    assert as_json(figures)['duplicates, after kills'] == 4

def test_kill_beyond_bound_and_bad_exit() -> None:
    """
    A killed worker's successor starting from the partition's beginning
    exceeds the bound; a worker stopped with SIGTERM that exits 1, or
    without its marker, fails the run.
    """
    w0 = _run(0, _log(*((P0, i, i, 1 + i * 0.01) for i in range(50)), stopped=False),
              'kill', 2, -9)
    w1 = _run(1, _log(*((P0, i, i, 3 + i * 0.01) for i in range(50))), 'final', 4, 1)
    w2 = _run(2, _log(stopped=False), 'term', 4, 0)
    figures = analyse(_scenario(50), [w0, w1, w2], ProducerLog(frozenset(range(50)), 0.0, 10.0))
    [kill] = figures.kills
    assert kill.owned == [P0] and kill.total == 50 and kill.limit == 2 + 5
    assert not kill.ok
    goals = {g.name: g for g in figures.goals}
    assert not goals['workers stopped as told'].ok
    assert goals['workers stopped as told'].value == '1 of 3'
    assert goals['lost'].ok and goals['duplicates, graceful'].ok

def test_killed_worker_owning_nothing() -> None:
    """A partition taken over before the kill is not the killed worker's."""
    w0 = _run(0, _log((P0, 0, 0, 1.0), stopped=False), 'kill', 5, -9)
    w1 = _run(1, _log((P0, 1, 1, 2.0)), 'final', 9, 0)
    figures = analyse(_scenario(2, restarts=0), [w0, w1],
                      ProducerLog(frozenset(range(2)), 0.0, 1.0))
    assert figures.kills[0].owned == []
    assert figures.ok

def test_step_down_before_a_kill_is_graceful() -> None:
    """
    Worker 0 hands partition 0 over to worker 1 while alive (a step-down:
    worker 1 joined) and gets it back later, then is killed: the
    duplicates of the step-down are graceful, those after its death the
    kill's.
    """
    w0 = _run(0, _log(
        *((P0, i, i, 1 + i * 0.1) for i in range(5)),        # 0-4, up to 1.4 s
        *((P0, i, i, 4 + i * 0.1) for i in range(8, 12)),    # back: 8-11, 4.8-5.1 s
        stopped=False,
    ), 'kill', 6, -9)
    w1 = _run(1, _log(*((P0, i, i, 2 + i * 0.1) for i in range(3, 8))), 'term', 3, 0)  # 3-7
    w2 = _run(2, _log(*((P0, i, i, 7 + i * 0.1) for i in range(10, 12))), 'final', 9, 0)
    figures = analyse(_scenario(12), [w0, w1, w2], ProducerLog(frozenset(range(12)), 0.0, 12.0))
    [kill] = figures.kills
    assert kill.owned == [P0] and kill.since == {P0: 4.8}
    assert dict(kill.duplicates) == {P0: 2}           # offsets 10 and 11
    assert figures.graceful_by_worker == {0: 2}       # offsets 3 and 4
    assert figures.graceful_duplicates == 2

def test_run_analysed_again(tmp_path: Path) -> None:
    """A run's directory holds what its analysis needs (``--analyse DIR``)."""
    (tmp_path / 'worker-0.log').write_text('P 0 0 1.0\nP 1 1 1.1\n# stopped 2.0\n')
    (tmp_path / 'worker-1.log').write_text('P 1 1 2.5\n')
    (tmp_path / 'producer.log').write_text('# start 0.5\nc 0 1 0.6\n# end 1.0\n')
    runs = [WorkerRun(0, 0.0, 'term', 2.0, 0, 2.1), WorkerRun(1, 0.0, 'kill', 3.0, -9, 3.1)]
    scenario = Scenario(['P'], store_every=2, store_interval=1.0, t0=0.0, restarts=1, kills=1,
                        messages=2)
    save_run(tmp_path, scenario, runs, ['a deadline passed'])
    figures = analyse_directory(tmp_path)
    assert figures.scenario == scenario
    assert figures.graceful_duplicates == 1  # worker 0's, then stopped with SIGTERM
    assert figures.kills[0].owned == ['P'] and figures.kills[0].total == 0
    assert {g.name: g.ok for g in figures.goals}['harness problems'] is False

def test_quantile() -> None:
    assert quantile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert quantile([float(i) for i in range(1, 101)], 0.99) == 99.0
    assert quantile([5.0], 0.99) == 5.0

def test_group_members_of_the_cli() -> None:
    """
    ``rabbitmq-streams list_stream_group_consumers --formatter json`` of
    RabbitMQ 4.0 (an array, one object a line); 4.1+ adds the
    connection's state to the consumer's.
    """
    text = ('[\n{"subscription_id":0,"connection_name":"127.0.0.1:40776 -> 127.0.0.1:5561",'
            '"state":"active"}\n,{"subscription_id":3,"connection_name":"c2",'
            '"state":"inactive"}\n]\n')
    assert parse_group_members(text) == [
        GroupMember('127.0.0.1:40776 -> 127.0.0.1:5561', 0, 'active'),
        GroupMember('c2', 3, 'inactive'),
    ]
    assert [m.active for m in parse_group_members(text)] == [True, False]
    assert GroupMember('c', 1, 'active (connected)').active
    assert not GroupMember('c', 1, 'waiting (disconnected)').active
    assert parse_group_members('') == []

def test_ghosts_and_partitions_no_worker_consumes() -> None:
    """
    Three workers running and five members: two ghosts. A worker is
    active on a partition after the broker's update said so, until its
    subscription is lost or moved (``recovering``); a worker stopped
    before the listing counts for nothing.
    """
    def member(sub: int, state: str = 'inactive') -> GroupMember:
        return GroupMember('c', sub, state)

    w0 = _run(0, WorkerLog(markers=[
        Marker('update', (P0, 'active', '1.0')),
        Marker('state', (P0, 'recovering', '2.0')),   # moved: inactive now
        Marker('state', (P0, 'open', '2.1')),
        Marker('update', (P1, 'active', '1.0')),
        Marker('update', (P1, 'inactive', '9.0')),    # after the listing
    ]), 'final', 20, 0)
    w1 = _run(1, WorkerLog(markers=[Marker('update', (P0, 'active', '1.0'))]), 'term', 5, 0)
    check = GroupCheck(3, {
        P0: [member(0, 'active'), member(1), member(2), member(0), member(3)],
        P1: [member(1, 'active'), member(2), member(3)],
    }, 8.0)
    assert check.ghosts(P0) == 2 and check.ghosts(P1) == 0
    assert check.without_active == []
    check.active_workers = active_workers([w0, w1], [P0, P1], 8.0)
    assert check.active_workers == {P0: [], P1: [0]}
    assert check.without_active_worker == [P0]

def test_leader_kill_duplicates_and_stalls() -> None:
    """
    A message processed before a leader's node was killed (or within the
    window after it) and again after it is the kill's duplicate; a
    partition that processes nothing after the kill pauses until the
    producer's end.
    """
    w0 = _run(0, _log(*((P0, i, i, 1 + i * 0.1) for i in range(6)),
                      (P1, 0, 100, 1.0)), 'final', 20, 0)
    w1 = _run(1, _log(*((P0, i, i, 12 + i * 0.1) for i in range(4, 8))), 'final', 20, 0)
    kill = LeaderKill(P0, 'r2', 3.0, [P0])
    groups = GroupCheck(2, {P0: [], P1: []}, 15.0)
    figures = analyse(_scenario(9), [w0, w1], ProducerLog(frozenset([*range(8), 100]), 0.0, 10.0),
                      leader_kills=[kill], groups=groups)
    [charged] = figures.leader_kills
    assert dict(charged.duplicates) == {P0: 2}
    assert charged.bound == {P0: 2 + 1, P1: 2 + 1}   # 8 and 1 messages over 10 s
    assert figures.graceful_duplicates == 0
    assert figures.stalls[P1] == (1.0, 9.0)           # nothing after 1 s until the end
    start, length = figures.stalls[P0]
    assert start == 1.5 and abs(length - 11.1) < 1e-9  # the failover's pause (to 12.6 s)
    goals = {g.name: g.ok for g in figures.goals}
    assert goals['duplicates, leader kill (r2)']
    assert not goals['partitions without an active member']
    assert not goals['partitions no worker consumes']
    assert 'leader kill: node r2' in table(figures)
