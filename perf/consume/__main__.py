"""``python -m perf.consume``: :py:mod:`perf.consume.bench` run by the shared ``main()``."""

import sys

from perf.common.cli import main
from perf.consume.bench import BENCHMARK

sys.exit(main(BENCHMARK))
