"""
docs_layout.py - check the built documentation as a reader at 1280 px
sees it (run by scripts/docs.sh after the build; or by hand:
``python scripts/docs_layout.py doc/_build/html``).

With a Chromium (Debian's ``chromium``), each page is opened headless in a
window 1280 px wide, and a script in the page measures it:

- no code block is clipped: each ``<pre>`` is as wide as its text
  (``scrollWidth <= clientWidth``), so no line hides behind a scroll bar
  or the edge;
- every figure is readable: drawn at 0.8 of its own size or more (the
  report's figures are drawn as wide as the column, perf/report/plot.py),
  and a link to its image at full size (click to enlarge).

It also saves screenshots of the landing page and the quick start,
``<html>/_shots/*.png``, to look at. Without a browser it says so, and
checks what it can in the files: the theme is the responsive one
(Furo, no fixed-width column) and every figure links to its image.

Exit status 1 with the offending pages, blocks and figures listed.
"""

import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

WIDTH = 1280
MIN_SCALE = 0.8  # of a figure's own size: its 6.5-8 pt legends (120 dpi) stay 8.7 px or more
SHOTS = ('index', 'quickstart')

MEASURE = '''
<script>
window.addEventListener('load', () => {
  const found = {pre: [], img: [], blocks: []};
  for (const pre of document.querySelectorAll('article pre')) {
    found.blocks.push(pre.clientWidth);
    if (pre.scrollWidth > pre.clientWidth + 1) {
      const line = pre.textContent.split('\\n').reduce((a, b) => b.length > a.length ? b : a, '');
      found.pre.push({over: pre.scrollWidth - pre.clientWidth, line: line});
    }
  }
  for (const img of document.querySelectorAll('article figure img')) {
    const link = img.closest('a');
    found.img.push({src: img.getAttribute('src'), width: img.width,
                    natural: img.naturalWidth, link: link ? link.getAttribute('href') : null});
  }
  const out = document.createElement('script');
  out.type = 'application/json';
  out.id = 'layout-check';
  out.textContent = JSON.stringify(found);
  document.body.appendChild(out);
});
</script>
'''

def browser() -> str | None:
    for name in ('chromium', 'chromium-browser', 'google-chrome'):
        if path := shutil.which(name):
            return path
    return None

def _chromium(exe: str, *args: str) -> str:
    done = subprocess.run(
        [exe, '--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars',
         '--window-size={},1000'.format(WIDTH), *args],
        capture_output=True, text=True, timeout=120, check=False,
    )
    if done.returncode != 0:
        sys.exit('[docs] {} failed: {}'.format(exe, done.stderr[-500:]))
    return done.stdout

def measure(exe: str, page: Path) -> dict[str, list[dict[str, object]]]:
    """What the page's script found, the page opened at 1280 px."""
    html = page.read_text()
    with tempfile.NamedTemporaryFile(
            'w', suffix='.html', dir=page.parent, prefix='.layout-') as copy:
        copy.write(html.replace('</body>', MEASURE + '</body>'))
        copy.flush()
        dom = _chromium(exe, '--virtual-time-budget=10000', '--dump-dom',
                        Path(copy.name).as_uri())
    m = re.search(r'<script type="application/json" id="layout-check">(.*?)</script>', dom, re.S)
    if m is None:
        sys.exit('[docs] {}: the page did not report its layout'.format(page))
    result: dict[str, list[dict[str, object]]] = json.loads(m.group(1))
    return result

def check_browser(exe: str, html: Path) -> list[str]:
    problems = []
    blocks = figures = 0
    pages = sorted(p for p in html.glob('*.html') if p.name not in ('genindex.html', 'search.html'))
    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # a browser each
        measured = list(pool.map(lambda page: measure(exe, page), pages))
    for page, found in zip(pages, measured, strict=True):
        blocks += len(found['blocks'])
        figures += len(found['img'])
        if any(int(str(w)) < 500 for w in found['blocks']):
            problems.append('{}: a code block narrower than 500 px'.format(page.name))
        for pre in found['pre']:
            problems.append('{}: a code block is {} px too wide: {}'.format(
                page.name, pre['over'], str(pre['line']).strip()))
        for img in found['img']:
            natural = int(str(img['natural']))
            if int(str(img['width'])) < MIN_SCALE * natural:
                problems.append('{}: figure {} drawn {} px wide, {} px its own: its legends'
                                ' are too small to read'.format(
                                    page.name, img['src'], img['width'], natural))
            if not str(img['link'] or '').endswith('.png'):
                problems.append('{}: figure {} does not link to its full size'.format(
                    page.name, img['src']))
    shots = html / '_shots'
    shots.mkdir(exist_ok=True)
    for name in SHOTS:
        _chromium(exe, '--window-size={},1600'.format(WIDTH),
                  '--screenshot={}'.format(shots / (name + '.png')),
                  (html / (name + '.html')).as_uri())
    print('[docs] {} pages at {} px: {} code blocks, {} figures measured; screenshots in {}'
          .format(len(pages), WIDTH, blocks, figures, shots))
    return problems

def check_files(html: Path) -> list[str]:
    """Without a browser: the theme, and the figures' links."""
    problems = []
    index = (html / 'index.html').read_text()
    if 'furo' not in index:
        problems.append('index.html: not the Furo theme (responsive column)')
    for page in html.glob('*.html'):
        text = page.read_text()
        for m in re.finditer(r'<figure[^>]*>(.*?)</figure>', text, re.S):
            if 'class="reference external image-reference"' not in m.group(1) \
                    and 'image-reference' not in m.group(1):
                problems.append('{}: a figure without a link to its full size'.format(page.name))
    print('[docs] no browser (install Debian\'s chromium for the layout check at {} px);'
          ' checked the theme and the figures\' links only'.format(WIDTH))
    return problems

def main() -> None:
    html = Path(sys.argv[1] if len(sys.argv) > 1 else 'doc/_build/html').resolve()
    exe = browser()
    problems = check_browser(exe, html) if exe else check_files(html)
    if exe is None and os.environ.get('CI', '').lower() in ('1', 'true', 'yes'):
        # CI checks what a reader sees: a missing browser fails, not skips
        problems.append('no Chromium under CI=true: scripts/docs.sh installs it as root')
    if problems:
        sys.exit('[docs] at {} px:\n  {}'.format(WIDTH, '\n  '.join(problems)))

if __name__ == '__main__':
    main()
