"""``python -m perf.serializers``: :py:mod:`perf.serializers.bench` run by the shared ``main()``."""

import sys

from perf.common.cli import main
from perf.serializers.bench import BENCHMARK

sys.exit(main(BENCHMARK))
