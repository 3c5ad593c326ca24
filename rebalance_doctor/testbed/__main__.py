"""``python -m rebalance_doctor.testbed``: record the real-client scenarios (``testbed.clientbed``)."""

from .clientbed import main

raise SystemExit(main())
