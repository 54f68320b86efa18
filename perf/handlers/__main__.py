"""``python -m perf.handlers``: :py:mod:`perf.handlers.bench` run by the shared ``main()``."""

import sys

from perf.common.cli import main
from perf.handlers.bench import BENCHMARK

sys.exit(main(BENCHMARK))
