"""``python -m perf.workloads``: :py:mod:`perf.workloads.bench` run by the shared ``main()``."""

import sys

from perf.common.cli import main
from perf.workloads.bench import BENCHMARK

sys.exit(main(BENCHMARK))
