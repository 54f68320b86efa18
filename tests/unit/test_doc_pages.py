"""
The documentation's pages as a reader finds them: every page in the
sidebar (a toctree), and the landing page in pieces a reader can scan.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / 'doc'

TOCTREE = re.compile(r'^\.\. toctree::\n((?:[ \t]+.*\n|\n)+)', re.MULTILINE)

def toctree_entries(text: str) -> list[str]:
    """The pages the toctrees of a page list (options left out)."""
    return [
        line.strip() for m in TOCTREE.finditer(text) for line in m.group(1).splitlines()
        if line.strip() and not line.strip().startswith(':')
    ]

def test_toctree_entries() -> None:
    text = '.. toctree::\n   :maxdepth: 2\n\n   quickstart\n   cli\n\nAfter\n'
    assert toctree_entries(text) == ['quickstart', 'cli']

def test_every_page_in_a_toctree() -> None:
    """
    Each page of doc/ is in the sidebar: listed by a toctree of a page,
    none ``:orphan:`` (group-tooling.rst was, and a reader found it only
    through links). Sphinx's own warning for a page in no toctree is
    silenced by ``:orphan:``, so this test refuses both.
    """
    pages = {p.stem for p in DOC.glob('*.rst')}
    listed = {entry for p in DOC.glob('*.rst') for entry in toctree_entries(p.read_text())}
    assert listed - pages == set(), 'toctree entries without a page'
    assert pages - listed - {'index'} == set(), 'pages in no toctree'
    orphans = sorted(p.name for p in DOC.glob('*.rst') if p.read_text().startswith(':orphan:'))
    assert orphans == []

MAX_PARAGRAPH_LINES = 8

def test_landing_page_scans() -> None:
    """
    The README's introduction, the landing page of the documentation
    (doc/index.rst includes it), has no paragraph longer than
    MAX_PARAGRAPH_LINES lines: its features were one paragraph of 22.
    A list item counts as a paragraph of its own.
    """
    text = (ROOT / 'README.rst').read_text().split('\nInstall\n', 1)[0]
    paragraphs: list[list[str]] = [[]]
    for line in text.splitlines():
        if not line.strip() or line.startswith('- '):
            paragraphs.append([])
        if line.strip():
            paragraphs[-1].append(line)
    long = [p[0] for p in paragraphs
            if len(p) > MAX_PARAGRAPH_LINES and not p[0].startswith(('..', '    '))]
    assert long == [], 'paragraphs longer than {} lines'.format(MAX_PARAGRAPH_LINES)
