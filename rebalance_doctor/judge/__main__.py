"""``python -m rebalance_doctor.judge``: the accuracy table (``judge.accuracy``'s command line)."""

import sys

from .accuracy import main

sys.exit(main())
