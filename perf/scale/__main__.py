"""``python -m perf.scale``: :py:mod:`perf.scale.bench` run by the shared ``main()``."""

import sys

from perf.common.cli import main
from perf.scale.bench import BENCHMARK

sys.exit(main(BENCHMARK))
