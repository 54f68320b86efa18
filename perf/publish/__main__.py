"""``python -m perf.publish``: :py:mod:`perf.publish.bench` run by the shared ``main()``."""

import sys

from perf.common.cli import main
from perf.publish.bench import BENCHMARK

sys.exit(main(BENCHMARK))
