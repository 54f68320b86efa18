#!/usr/bin/env python3
"""
Plot the JSON results of the RbFly benchmarks (``--json`` of
``bench_publish.py``, ``bench_consume.py`` and ``bench_codec.py``), in the
style of the RbFly 0.10 performance report: one panel per scenario, one box
per implementation showing the rates of all rounds, the median written
above it.

Examples::

    python perf/plot.py perf/results/publish.json                   # -> perf/results/publish.png
    python perf/plot.py perf/results/*.json --format svg --output-dir doc/_static
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import JsonDict, log, read_json

COLOURS = {
    'rbfly': '#1f77b4',
    'rbfly-chunks': '#17becf',
    'rbfly-0.10': '#7f7f7f',
    'rstream': '#ff7f0e',
    'aiokafka': '#2ca02c',
    'proton': '#9467bd',
}

Panel = tuple[str, list[tuple[str, list[float]]]]   # title, (label, rates of the rounds)


def publish_panels(doc: JsonDict) -> list[Panel]:
    panels = []
    for res in doc['results'].values():
        title = '{} ({})'.format(res['scenario'], res['format'])
        if res['scenario'] == 'batch':
            title = 'batch of {} ({})'.format(res['batch'], res['format'])
        boxes = [
            (name, r['rates']) for name, r in res['implementations'].items()
            if r['status'] == 'ok'
        ]
        panels.append((title, boxes))
    return panels


def consume_panels(doc: JsonDict) -> list[Panel]:
    panels = []
    for variant, res in doc['results'].items():
        title = 'consume, {} chunks of ~{:,.0f}'.format(variant, res['chunk_mean'])
        boxes = [
            (name, r['rates']) for name, r in res['implementations'].items()
            if r['status'] == 'ok'
        ]
        panels.append((title, boxes))
    return panels


def codec_panels(doc: JsonDict) -> list[Panel]:
    panels = []
    for op in ('encode', 'decode'):
        boxes = [
            (name, r[op]['rates']) for name, r in doc['results'].items()
            if r['status'] == 'ok' and op in r
        ]
        panels.append(('AMQP 1.0 {}'.format(op), boxes))
    return panels


PANELS = {
    'publish': publish_panels,
    'consume': consume_panels,
    'amqp-codec': codec_panels,
}


def subtitle(doc: JsonDict) -> str:
    env = doc.get('env', {})
    parts = []
    broker = env.get('broker')
    if broker:
        parts.append('{} {}'.format(broker.get('product'), broker.get('version')))
    parts.append('Python {}'.format(env.get('python', {}).get('version', '?')))
    loop = env.get('loop', {}).get('name')
    if loop:
        parts.append(loop)
    parts.append(env.get('cpu', {}).get('model', '?'))
    parts.append('median of {} rounds'.format(doc.get('params', {}).get('rounds', '?')))
    parts.append(env.get('date', '?'))
    return ', '.join(parts)


def plot(doc: JsonDict, output: Path) -> Path:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    panels = PANELS[doc['benchmark']](doc)
    panels = [p for p in panels if p[1]]
    if not panels:
        raise ValueError('no results to plot')
    fig, axes = plt.subplots(
        1, len(panels), figsize=(4.2 * len(panels), 4.2), squeeze=False,
    )
    for ax, (title, boxes) in zip(axes[0], panels, strict=True):
        _panel(ax, title, boxes)
    fig.suptitle(subtitle(doc), fontsize=8)
    fig.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=120)
    plt.close(fig)
    return output


def _panel(ax: Any, title: str, boxes: Sequence[tuple[str, list[float]]]) -> None:
    import statistics

    labels = [name for name, _ in boxes]
    data = [rates for _, rates in boxes]
    parts = ax.boxplot(data, patch_artist=True, widths=0.6)
    ax.set_xticks(range(1, len(labels) + 1), labels, rotation=20, fontsize=8)
    for patch, name in zip(parts['boxes'], labels, strict=True):
        patch.set_facecolor(COLOURS.get(name, '#bcbd22'))
        patch.set_alpha(0.8)
    top = max(max(rates) for rates in data)
    for i, rates in enumerate(data, start=1):
        m = statistics.median(rates)
        ax.annotate(
            _short(m), (i, max(rates)), textcoords='offset points', xytext=(0, 4),
            ha='center', fontsize=8,
        )
    ax.set_ylim(0, top * 1.15)
    ax.set_title(title, fontsize=10)
    ax.set_ylabel('messages per second')
    ax.grid(axis='y', alpha=0.3)
    ax.yaxis.set_major_formatter(_formatter())


def _short(value: float) -> str:
    if value >= 1e6:
        return '{:.2f}M'.format(value / 1e6)
    if value >= 1e3:
        return '{:.0f}k'.format(value / 1e3)
    return '{:.0f}'.format(value)


def _formatter() -> Any:
    from matplotlib.ticker import FuncFormatter
    return FuncFormatter(lambda v, _: _short(v))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Plot RbFly benchmark results (JSON)')
    parser.add_argument('json', nargs='+', type=Path, help='result files')
    parser.add_argument(
        '--format', default='png', choices=('png', 'svg', 'pdf'), help='image format',
    )
    parser.add_argument(
        '--output-dir', type=Path,
        help='directory of the images (default: next to each JSON file)',
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    status = 0
    for path in args.json:
        try:
            doc = read_json(path)
            if doc.get('benchmark') not in PANELS:
                raise ValueError('unknown benchmark {!r}'.format(doc.get('benchmark')))
            out_dir = args.output_dir or path.parent
            out = plot(doc, out_dir / '{}.{}'.format(path.stem, args.format))
        except (OSError, ValueError, KeyError) as ex:
            log('{}: {}'.format(path, ex))
            status = 1
        else:
            log('{}: {}'.format(path, out))
    return status


if __name__ == '__main__':
    sys.exit(main())
