"""``python -m rbfly``: the command line (:py:mod:`rbfly.cli`)."""

import sys

from .cli import main

sys.exit(main())
