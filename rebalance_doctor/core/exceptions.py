"""Errors the library raises for the command line to turn into exit codes (cli/common.py).

Only the CLI maps errors to exit codes; below it, code raises what happened:

* ``UsageError`` (and the data-file, layout and time-zone errors, which are ValueErrors of
  their own): what the user asked for cannot be done as asked (exit code 2);
* ``EnvironmentMissing``: something the run needs is not installed or not reachable: an
  optional extra, a Java runtime, a Spark master, a temporary directory (exit code 5);
* ``OutputError``: an output cannot be written (``writers``): the user's path (2: a directory
  that does not exist, no permission, a read-only filesystem; another path is the fix) or the
  machine failing while it writes (5: a full disk or quota, an I/O error, no memory), by its errno.
"""

from __future__ import annotations

import errno


class UsageError(ValueError):
    """An option or argument that cannot be used as given."""


class EnvironmentMissing(RuntimeError):
    """Something the run needs is missing from this machine (exit code 5)."""


# Not EROFS: a read-only destination is a path the user chose, like one without permission (2).
_MACHINE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.ENOMEM}


def is_machine_error(exc: BaseException) -> bool:
    """An OSError that is the machine's (full disk, I/O error), not the path the user gave
    (missing, not permitted, read-only)."""
    return isinstance(exc, OSError) and exc.errno in _MACHINE_ERRNOS


class Terminated(BaseException):
    """The process was asked to stop by a signal (SIGTERM, SIGHUP): raised where the program is,
    like KeyboardInterrupt, so that every ``finally`` and ``except BaseException`` cleanup runs
    (temporary outputs, the workers and their directory); the CLI exits 128 + the signal."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum
