"""`python -m rebalance_doctor` runs the command line (as `python -m rebalance_doctor.cli` does)."""

from .cli.app import main

main()
