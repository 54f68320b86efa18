"""``python -m perf.java_client``: :py:mod:`perf.java_client.bench` run by the shared ``main()``."""

import sys

from perf.common.cli import main
from perf.java_client.bench import BENCHMARK

sys.exit(main(BENCHMARK))
