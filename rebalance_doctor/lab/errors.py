"""What stops a lab run, with the exit code the project documents for it."""

from __future__ import annotations

USAGE = 2          # an unknown scenario, a release not on Maven Central, a port in use
INTERNAL = 4       # a scenario that could not finish (a process that never started, a deadline)
ENVIRONMENT = 5    # no Java, no Maven, the registry unreachable, a client library not installed


class LabError(Exception):
    """One line for the operator and the exit code it earns."""

    def __init__(self, message: str, code: int = INTERNAL):
        super().__init__(message)
        self.code = code
