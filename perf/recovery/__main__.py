"""``python -m perf.recovery``: :py:mod:`perf.recovery.bench` run by the shared ``main()``."""

import sys

from perf.common.cli import main
from perf.recovery.bench import BENCHMARK

sys.exit(main(BENCHMARK))
