"""``python -m perf.official``: :py:mod:`perf.official.bench` run by the shared ``main()``."""

import sys

from perf.common.cli import main
from perf.official.bench import BENCHMARK

sys.exit(main(BENCHMARK))
