"""``python -m perf.codec``: :py:mod:`perf.codec.bench` run by the shared ``main()``."""

import sys

from perf.codec.bench import BENCHMARK
from perf.common.cli import main

sys.exit(main(BENCHMARK))
