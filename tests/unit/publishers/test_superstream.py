"""
Routing of super stream messages: MurmurHash3 as the other clients use it
(checked against the mmh3 package, which rstream routes with), the
partition names of a new super stream, and ``batch`` over the partitions'
batch publishers.
"""

import gc
import typing as tp
import warnings

import mmh3
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rbfly.streams.metrics import Counters
from rbfly.streams.publishers.awaited import PublisherBatchFast, PublisherBatchLimit
from rbfly.streams.publishers.base import PublisherTrait
from rbfly.streams.publishers.superstream import (
    HASH_SEED,
    SuperStreamPublisher,
    hash_partition,
    murmur3_32,
    partition_names,
)

@pytest.mark.parametrize(('data', 'seed', 'expected'), [
    (b'', 0, 0),
    (b'', HASH_SEED, 3329588566),
    (b'a', HASH_SEED, 1086686554),
    (b'ab', HASH_SEED, 398604456),
    (b'abc', HASH_SEED, 3409700625),
    (b'abcd', HASH_SEED, 3421720556),
    (b'hello world', 0, 1586663183),
    ('zażółć'.encode(), HASH_SEED, 1911769601),
])
def test_murmur3_vectors(data: bytes, seed: int, expected: int) -> None:
    assert murmur3_32(data, seed) == expected

@given(st.binary(max_size=64), st.integers(0, 2 ** 32 - 1))
def test_murmur3_matches_mmh3(data: bytes, seed: int) -> None:
    assert murmur3_32(data, seed) == mmh3.hash(data, seed, signed=False)

@given(st.text(max_size=40))
def test_hash_partition_as_rstream(key: str) -> None:
    """rstream picks partition mmh3(key, 104729) % n, as Java and Go do."""
    partitions = ['p0', 'p1', 'p2', 'p3', 'p4']
    expected = partitions[mmh3.hash(key, HASH_SEED, signed=False) % 5]
    assert hash_partition(key, partitions) == expected

def test_partition_names() -> None:
    assert partition_names('inv', 3, None) == (['inv-0', 'inv-1', 'inv-2'], ['0', '1', '2'])
    assert partition_names('inv', None, ['eu', 'us']) == (['inv-eu', 'inv-us'], ['eu', 'us'])
    with pytest.raises(ValueError, match='a binding key for each of the 2 partitions'):
        partition_names('inv', 2, ['a'])
    with pytest.raises(ValueError, match='a binding key for each'):
        partition_names('inv', 2, ['a', ''])
    with pytest.raises(ValueError, match='number of partitions or the binding keys'):
        partition_names('inv', None, None)
    # both: a key may bind several partitions
    assert partition_names('inv', 3, ['x', 'x', 'y']) == (['inv-0', 'inv-1', 'inv-2'],
                                                          ['x', 'x', 'y'])
    with pytest.raises(ValueError, match='at least 1'):
        partition_names('inv', 0, None)
    with pytest.raises(ValueError, match='unique'):
        partition_names('inv', None, [])

class FakeHost:
    """What a publisher asks of its client: nothing in these tests (nothing is sent)."""
    counters = Counters()
    spin = 0.0

def super_stream(cls: type[PublisherTrait]) -> SuperStreamPublisher:
    """A super stream publisher of 3 partitions, hash routing, ``cls`` each."""
    host = tp.cast(tp.Any, FakeHost())
    partitions = ['p0', 'p1', 'p2']
    publishers = {p: cls(host, p, 1, 'n', 0) for p in partitions}
    return SuperStreamPublisher('s', partitions, publishers, str, None)

def test_batch_to_partitions() -> None:
    """``batch`` adds each message to the batch of its partition's publisher."""
    publisher = super_stream(PublisherBatchFast)
    for key in ('a', 'b', 'c', 'a'):
        publisher.batch(key)
    batches = {p: tp.cast(PublisherBatchFast, b)._data for p, b in publisher.publishers.items()}
    expected: dict[str, list[object]] = {p: [] for p in publisher.partitions}
    for key in ('a', 'b', 'c', 'a'):
        expected[hash_partition(key, publisher.partitions)].append(key)
    assert batches == expected

def test_batch_limit_refused() -> None:
    """
    The coroutine ``batch`` of PublisherBatchLimit, which a super stream
    publisher's ``batch`` cannot await, raises (it dropped the message
    with a RuntimeWarning, never awaited).
    """
    publisher = super_stream(PublisherBatchLimit)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        with pytest.raises(TypeError, match='the batch of PublisherBatchLimit is a coroutine'):
            publisher.batch('a', max_len=10)
        gc.collect()  # a coroutine never awaited warns when collected
