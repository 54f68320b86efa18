"""
The unconfirmed messages of a publisher in runs of consecutive ids
(rbfly.streams.publishers._unconfirmed), held against a dictionary: they
must read as one, whatever the order the ids come and go in.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rbfly.streams.publishers._confirm import confirm, track
from rbfly.streams.publishers._unconfirmed import Unconfirmed

def test_runs_read_as_a_dictionary() -> None:
    """Batches kept in runs: membership, items in order, pop, len."""
    u = Unconfirmed()
    track(u, {}, ['a', 'b', 'c'], 1, None, None)
    track(u, {}, ['d', 'e'], 4, None, None)
    assert len(u) == u.count == 5
    assert list(u) == [1, 2, 3, 4, 5]
    assert u.items() == [(1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e')]
    assert 3 in u and 6 not in u and 0 not in u and 'x' not in u and -1 not in u
    assert u[4] == 'd' and u.get(9) is None and u.get(9, 'z') == 'z'
    assert u.pop(2) == 'b' and u.pop(2, None) is None
    assert 2 not in u and len(u) == 4
    with pytest.raises(KeyError):
        u.pop(2)
    with pytest.raises(KeyError):
        u[2]
    assert u == {1: 'a', 3: 'c', 4: 'd', 5: 'e'}
    u.clear()
    assert not u and u == {} and list(u) == []

def test_the_callers_list_is_copied() -> None:
    """A run copies the batch: the caller's list stays as it was."""
    u = Unconfirmed()
    batch = ['a', 'b']
    track(u, {}, batch, 10, None, None)
    assert confirm(u, {}, (10, 11)) == 2
    assert batch == ['a', 'b'] and not u

def test_none_messages_and_replacing() -> None:
    """A message may be None; setting a kept id replaces its message."""
    u = Unconfirmed()
    u[7] = None
    assert 7 in u and u[7] is None and len(u) == 1
    u[7] = 'x'
    assert u[7] == 'x' and len(u) == 1
    del u[7]
    assert not u
    with pytest.raises(KeyError):
        del u[7]

def test_bad_ids() -> None:
    """An id out of the range of publishing ids, or not an int: a clear error on setting."""
    u = Unconfirmed()
    for bad in (-1, 2 ** 64):
        with pytest.raises(ValueError, match='a publishing id is an int from 0 to 2\\*\\*64 - 1'):
            u[bad] = 'm'
        assert bad not in u and u.get(bad) is None
    for other in ('1', 1.0):
        with pytest.raises(TypeError, match='pid'):
            u[other] = 'm'  # type: ignore[index]
        assert other not in u
    u[2 ** 64 - 1] = 'last'
    assert u.items() == [(2 ** 64 - 1, 'last')]

def test_confirmed_runs_are_let_go() -> None:
    """
    A publisher's life: batches in order, confirmed in order; the runs
    confirmed are forgotten, and the messages with them.
    """
    u = Unconfirmed()
    pid = 1
    for _ in range(500):
        track(u, {}, ['m'] * 100, pid, None, None)
        assert confirm(u, {}, tuple(range(pid, pid + 100))) == 100
        pid += 100
    assert not u and u.items() == []
    track(u, {}, ['n'], pid, None, None)
    assert u.items() == [(pid, 'n')]

def test_ids_before_the_newest() -> None:
    """Ids before the newest kept (a message's own id): kept in order of the ids."""
    u = Unconfirmed()
    track(u, {}, ['a', 'b'], 100, None, None)
    track(u, {}, ['x', 'y', 'z'], 50, None, None)
    track(u, {}, ['p', 'q'], 101, None, None)  # over 101, then 102 after the newest
    assert u.items() == [(50, 'x'), (51, 'y'), (52, 'z'), (100, 'a'), (101, 'p'), (102, 'q')]
    assert confirm(u, {}, (51, 101, 100)) == 3
    assert list(u) == [50, 52, 102]

OPS = st.lists(
    st.one_of(
        st.tuples(st.just('run'), st.integers(0, 60), st.integers(0, 8)),
        st.tuples(st.just('put'), st.integers(0, 70), st.just(0)),
        st.tuples(st.just('pop'), st.integers(-2, 72), st.just(0)),
        st.tuples(st.just('confirm'), st.integers(0, 70), st.integers(1, 10)),
    ),
    max_size=60,
)

@settings(max_examples=300, deadline=None)
@given(OPS)
def test_as_a_dictionary(ops: list[tuple[str, int, int]]) -> None:
    """Any sequence of runs, sets, pops and confirmations: as a dictionary would."""
    u = Unconfirmed()
    model: dict[int, str] = {}
    for n, (op, pid, k) in enumerate(ops):
        if op == 'run':
            messages = ['r{}.{}'.format(n, i) for i in range(k)]
            track(u, {}, messages, pid, None, None)
            model.update(zip(range(pid, pid + k), messages, strict=True))
        elif op == 'put':
            u[pid] = model[pid] = 'p{}'.format(n)
        elif op == 'pop':
            assert u.pop(pid, None) == model.pop(pid, None)
        else:
            ids = tuple(range(pid, pid + k))
            forgotten = [model.pop(i) for i in ids if i in model]
            assert confirm(u, {}, ids) == sum(len(m) for m in forgotten)
        assert len(u) == len(model)
        assert u.items() == sorted(model.items())
    assert all((i in u) == (i in model) for i in range(-1, 75))

def test_the_last_id_and_one_before() -> None:
    """
    A message of id 2**64 - 1 (a message's own id), then one of a lower
    id: kept in order, and each confirmed (the end of a run of the last
    id must not wrap to 0).
    """
    u = Unconfirmed()
    track(u, {}, ['last'], 2 ** 64 - 1, None, None)
    track(u, {}, ['five'], 5, None, None)
    u[0] = 'zero'
    assert u.items() == [(0, 'zero'), (5, 'five'), (2 ** 64 - 1, 'last')]
    assert confirm(u, {}, (5,)) == 4
    assert confirm(u, {}, (0, 2 ** 64 - 1)) == 8
    assert not u

def test_reading_other_keys() -> None:
    """Reading with an object that is no id: as a dictionary would."""
    u = Unconfirmed()
    u[1] = 'a'
    assert u.get('x') is None and u.get(None, 'd') == 'd' and u.pop('x', 'd') == 'd'
    with pytest.raises(KeyError):
        u['x']
    with pytest.raises(KeyError):
        del u[-1]
