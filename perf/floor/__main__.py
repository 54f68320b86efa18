"""``python -m perf.floor``: :py:mod:`perf.floor.bench` run by the shared ``main()``."""

import sys

from perf.common.cli import main
from perf.floor.bench import BENCHMARK

sys.exit(main(BENCHMARK))
