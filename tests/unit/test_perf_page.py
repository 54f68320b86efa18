"""
The performance report, ``doc/perf.rst``, holds no number without a result
behind it, and is what the committed results render
(:py:mod:`perf.report.page`).

What is a number here: any run of digits in the page's text. A figure (a
rate, a CPU time, a share, a ratio, a latency, a count of messages or
bytes measured) must be written by the template's filters from a result in
``doc/perf/results/``. What is left once those are taken out must be one
of the phrases of :py:data:`ALLOWED`, each with its reason: versions,
the parameters of a scenario (a message size, a batch size, a tick),
names of implementations, the numbered list of scenarios. Commands and
code (````...````, code blocks) and reST directives are not prose.
"""

import re
from pathlib import Path

import pytest

from perf.common import ROOT
from perf.common.results import source_info, tree_changes, tree_clean
from perf.report import page as rp
from perf.report import recovery as rr
from perf.report.page_helpers import REPORT_RESULTS, TemplateError

ALLOWED: tuple[tuple[str, str], ...] = (
    (r'RbFly 0\.10|rbfly-0\.10', 'the name of a peer: the original RbFly, release 0.10'),
    (r'RabbitMQ 3\.10|RabbitMQ 4\.x', 'versions of the broker named in prose'),
    (r'AMQP 1\.0', "the protocol's name"),
    (r'\b10-byte\b|\b10 bytes\b|\b1 KiB\b|\b16 KiB\b|\b512 KiB\b|\b50-message\b',
     'message and chunk sizes: parameters of a scenario'),
    (r'(?i)batch(es)? of (up to )?100\b|\b1, 10 and 100 publishers',
     'batch sizes and publisher counts: parameters of a scenario'),
    (r'one message in 100', 'how often the Java tool samples a latency, its parameter'),
    (r'\bp50\b|\bp95\b|\bp99(\.9)?\b', 'names of percentiles'),
    (r'\blz4\b', "a codec's name"),
    (r'\b1 ms\b|ticks of 1 ms', 'the harness\'s tick and the Java tool\'s batch delay, parameters'),
    (r'spin=0\.0005', "the option's value the benchmark's rbfly-spin line sets"),
    (r'\b1\.10x / 0\.64x\b|1\.10 times|0\.64 times|above 1x|below 1x|1x\b',
     "the verdict's legend explains how to read a cell, with an example"),
    (r'^\d\. ', 'the numbered list of scenarios'),
    (r'\b2 cores\b|\b2-core\b', "the machine's cores, as the environment table records them"),
    (r'\(a\)|\(b\)|\(c\)|\(d\)|\(e\)', 'letters, not numbers'),
    (r'\b1\.5 IQR\b', 'how box plots draw whiskers'),
    (r'more than 20x', 'when the CPU plot turns to a log scale (perf.report.plot)'),
    (r'100% is one core', 'what a CPU share means'),
    (r'three memory layouts', 'words'),
    (r'\b1\.5x\b', "a goal's threshold, set by the issue (perf.report.goals)"),
)


def prose(text: str) -> str:
    """The page's text without code, directives and table rules."""
    text = re.sub(r'``.*?``', '', text, flags=re.DOTALL)
    out = []
    in_block = False
    for line in text.splitlines():
        if in_block and (not line or line.startswith(' ')):
            continue
        in_block = False
        if line.startswith('.. '):
            in_block = True   # a directive and its indented body or options
            continue
        out.append(line)
    return '\n'.join(out)


def unsourced(text: str) -> list[str]:
    """The numbers of a page rendered with marks that no result wrote."""
    text = re.sub(re.escape(rp.MARK_OPEN) + '.*?' + re.escape(rp.MARK_CLOSE), '#', text,
                  flags=re.DOTALL)
    lines = prose(text).splitlines()
    found = []
    for n, line in enumerate(lines):
        rest = line
        for pattern, _ in ALLOWED:
            rest = re.sub(pattern, '', rest)
        if re.search(r'\d', rest):
            found.append('{}: {}'.format(n, line.strip()))
    return found


def test_every_number_has_a_result() -> None:
    """The committed results render the page with no number typed in by hand."""
    text = rp.render_text(mark=True)
    assert unsourced(text) == []


def test_page_is_what_the_results_render() -> None:
    """doc/perf.rst is the template rendered from doc/perf/results/, exactly."""
    page = rp.Page(rp.load_results(rp.RESULTS))
    text = page.render(rp.TEMPLATE.read_text(encoding='utf-8'))
    assert page.missing == []
    assert rp.PAGE.read_text(encoding='utf-8') == text, \
        'doc/perf.rst is out of date: python -m perf.report.page'


def test_typed_number_refused() -> None:
    """A number in the template that no result holds is an error, not a figure."""
    page = rp.Page({})
    with pytest.raises(TemplateError, match='not read from a result'):
        page.render('{{ 5122 | rate }} msg/s')


def test_unsourced_number_found() -> None:
    """The check finds a figure typed into the prose."""
    page = rp.Page({'r': rp.wrap({'rate': 5122.3}, 'r')}, mark=True)
    text = page.render("rbfly {{ r('r', 'rate') | rate }} msg/s, at 66 µs a message")
    assert unsourced(text) == ['0: rbfly # msg/s, at 66 µs a message']


def _result(clean: bool | None) -> dict[str, object]:
    source: dict[str, object] = {'commit': 'c94f80ad26f0', 'rbfly_changes': []}
    if clean is not None:
        source['clean'] = clean
    return {'env': {'source': source}, 'rate': 1000.0}


@pytest.mark.parametrize(('clean', 'marked'), [(True, False), (False, True), (None, False)])
def test_dirty_result_marked(clean: bool | None, marked: bool) -> None:
    """Every figure of a result from a modified tree carries the dagger."""
    page = rp.Page({'r': rp.wrap(_result(clean), 'r')})
    text = page.render("{{ r('r', 'rate') | rate }}")
    assert text == '1,000' + (rp.DIRTY_MARK if marked else '')


def test_dirty_result_of_old_layout() -> None:
    """Results before ``clean`` was recorded: listed rbfly/ changes mean modified."""
    env = {'source': {'commit': 'bac667e', 'rbfly_changes': [' M rbfly/streams/client.py']}}
    assert tree_clean(env) is False
    assert tree_clean({'commit': '1799cd4', 'dirty': True}) is False
    assert tree_clean({'date': '2026-11-22'}) is None


def test_source_info_says_clean() -> None:
    """A benchmark records whether the whole work tree was clean."""
    info = source_info()
    assert isinstance(info['clean'], bool)
    assert info['clean'] == (info['changes'] == [])


def test_missing_figure_noted() -> None:
    """A figure the results lack is written n/a and noted, not invented."""
    page = rp.Page({'r': rp.wrap({'x': 1}, 'r')})
    assert page.render("{{ r('r', 'y') | rate }}") == 'n/a'
    assert page.missing == ['r/y']


def test_template_path_exists() -> None:
    assert Path(rp.TEMPLATE).is_file()


def test_when_reads_its_text_only_when_written() -> None:
    """Words about a figure a result may lack: not read, not noted missing."""
    page = rp.Page({'r': rp.wrap({'x': 1}, 'r')})
    text = page.render("a{{ when(has('r', 'y'), r('r', 'y') | rate) }}"
                       "{{ when(not has('r', 'y'), ', not measured') }}")
    assert text == 'a, not measured'
    assert page.missing == []


def test_verdict_explains_blanks() -> None:
    """A peer not measured is a lettered blank, its reason under the table."""
    def entry(rate: float, cpu: float) -> dict[str, object]:
        return {'status': 'ok', 'median_rate': rate, 'cpu_us_per_msg': cpu}
    doc = {'env': {'broker': {'version': '4.3.0'}}, 'results': {'single/amqp': {
        'implementations': {
            'rbfly': entry(5000, 60), 'java': entry(4000, 90),
            'rbfly-0.10': {'status': 'skipped', 'reason': 'no such publisher'},
        }}}}
    page = rp.Page({'publish': rp.wrap(doc, 'publish')})
    text = page.render("{{ verdicts() }}")
    assert 'RabbitMQ 4.3.0' in text
    assert '0.80x / 1.50x' in text   # the Java client: 0.8 the rate at 1.5 the CPU
    assert '| (a) no such publisher.' in text
    assert '| (b) rstream was not in this run.' in text
    assert '| (c) aiokafka was not in this run.' in text
    assert "the fastest peer, the Java client, 4.0k at 90.0 µs" in text


def test_report_results_made_by_the_script() -> None:
    """The results the page says make perf-report makes are those it writes."""
    script = (ROOT / 'scripts' / 'perf-report.sh').read_text(encoding='utf-8')
    for name in REPORT_RESULTS:
        # pipelined-310, pipelined-4: one loop; publish-4 and the like: run4
        stem = name.rsplit('-', 1)[0] if name.startswith('pipelined-') or name.endswith('-4') \
            else name
        assert stem in script, name
        assert (rp.RESULTS / '{}.json'.format(name)).is_file(), name


def test_quick_result_marked() -> None:
    """Every figure of a quick run carries the double dagger."""
    doc = {**_result(True), 'params': {'quick': True}}
    page = rp.Page({'r': rp.wrap(doc, 'r')})
    assert page.render("{{ r('r', 'rate') | rate }}") == '1,000' + rp.QUICK_MARK


def test_report_outputs_are_no_change() -> None:
    """
    The results perf-report.sh writes while it runs leave the tree clean for
    the benchmarks after them; any other change does not.
    """
    # (the first line's leading blank as the git helper strips it)
    status = '\n'.join(['M doc/perf/results/pipelined-310.json', ' M doc/perf.rst',
                        'A  doc/perf/codec.png', ' M perf/publish/bench.py',
                        'M  rbfly/streams/client.py', ' M doc/usage.rst'])
    assert tree_changes(status) == [' M perf/publish/bench.py', 'M  rbfly/streams/client.py',
                                    ' M doc/usage.rst']


def test_tables_are_what_the_results_render(tmp_path: Path) -> None:
    """
    The tables the page includes (doc/perf/*.rst.inc) are what the committed
    results render, as scripts/perf-report.sh --render writes them.
    """
    from perf.report import tables as rt
    from perf.report import workloads as rw
    results = rp.RESULTS
    groups = rt.load_groups([results / '{}.json'.format(n) for n in ('codec', 'publish',
                                                                     'consume')])
    written = rt.write_report(groups, tmp_path)
    written += rw.write_tables(rp.load_plain(results / 'workloads.json'), tmp_path)
    (tmp_path / rr.OUTPUT).write_text(rr.render(rp.load_plain(results / 'recovery.json')))
    committed = sorted(p.name for p in (ROOT / 'doc' / 'perf').glob('*.rst.inc'))
    assert sorted(p.name for p in tmp_path.iterdir()) == committed
    for name in committed:
        assert (tmp_path / name).read_text() == (ROOT / 'doc' / 'perf' / name).read_text(), name
