"""``python -m soak.consumer_group``: a run (:py:mod:`soak.consumer_group.controller`)."""

import sys

from soak.consumer_group.controller import main

sys.exit(main())
