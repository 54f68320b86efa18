"""``python -m perf.instructions``: perf.instructions.bench run by the shared ``main()``."""

import sys

from perf.common.cli import main
from perf.instructions.bench import BENCHMARK

sys.exit(main(BENCHMARK))
