"""`python -m rebalance_doctor.cli` runs the command line."""

from .app import main

main()
