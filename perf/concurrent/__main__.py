"""``python -m perf.concurrent``: :py:mod:`perf.concurrent.bench` run by the shared ``main()``."""

import sys

from perf.common.cli import main
from perf.concurrent.bench import BENCHMARK

sys.exit(main(BENCHMARK))
