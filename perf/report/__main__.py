"""``python -m perf.report``: the report's tables (:py:mod:`perf.report.tables`)."""

import sys

from perf.report.tables import main

sys.exit(main())
