"""
The fuzz corpora replayed through the fuzz targets (``fuzz/targets.py``),
without a fuzzer: the seeds (``fuzz/corpus/TARGET``) and every input that
once broke a decoder's contract (``fuzz/regressions/TARGET``), so that a
fixed finding stays fixed. ``scripts/fuzz.sh`` runs the fuzzer itself.
"""

from pathlib import Path

import pytest

from fuzz.targets import TARGETS

FUZZ = Path(__file__).resolve().parents[2] / 'fuzz'

def inputs(kind: str) -> list[tuple[str, Path]]:
    """(target, input file) of every input of a kind of corpus."""
    return [
        (target, path)
        for target in TARGETS
        for path in sorted((FUZZ / kind / target).glob('*'))
        if path.is_file()
    ]

REGRESSIONS = inputs('regressions')
SEEDS = inputs('corpus')

def _id(item: tuple[str, Path]) -> str:
    return '{}/{}'.format(item[0], item[1].name[:16])

@pytest.mark.parametrize('target, path', REGRESSIONS, ids=[_id(i) for i in REGRESSIONS])
def test_regression(target: str, path: Path) -> None:
    """An input that once broke a decoder keeps to the contract."""
    TARGETS[target](path.read_bytes())

@pytest.mark.parametrize('target, path', SEEDS, ids=[_id(i) for i in SEEDS])
def test_seed(target: str, path: Path) -> None:
    """Each seed keeps to the contract."""
    TARGETS[target](path.read_bytes())

def test_every_target_has_seeds() -> None:
    """A target without seeds would start the fuzzer from nothing."""
    assert {target for target, _ in SEEDS} == set(TARGETS)
