"""Standard streams the caller closed (`>&-`, `2>&-`), made /dev/null before anything uses them."""

from __future__ import annotations

import os
import sys

closed: list[str] = []


def reopen_closed_streams() -> None:
    """A standard stream closed by the caller (`>&-`, `2>&-`) becomes /dev/null: its file
    descriptor is not taken by the next file opened (an output would receive the report), and
    nothing ends in a traceback. Output that would go there is discarded, and said on stderr."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))
        if fd == 1:
            closed.append("stdout")


def say_if_stdout_was_closed() -> None:
    if "stdout" in closed:
        print("warning: standard output is closed: what would be printed there is discarded", file=sys.stderr)


reopen_closed_streams()
