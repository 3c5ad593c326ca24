"""Where the payload goes: the report console's width, and a pipe closed early (`| head`)."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from rich.console import Console

# Redirected output has no terminal width. Reports stay readable in 80 columns (they wrap, never
# drop a column), but a file or a CI log is read in a wider window: COLUMNS decides, else this.
PIPE_WIDTH = 120


@functools.cache
def _payload_console():
    from rich.console import Console  # rich only for the commands that print with it

    class _PayloadConsole(Console):
        """rich's Console ends the process with exit code 1 when stdout's reader goes away (its
        ``on_broken_pipe``): `analyze healthy/ | head` then exited 1, the code for "findings". Here
        the rest of the payload goes to /dev/null and the command ends with its own exit code."""

        def on_broken_pipe(self) -> None:
            self.quiet = True
            quiet_stdout()

    return _PayloadConsole


def report_console() -> Console:
    """The console the human report is printed on: the terminal's width, or COLUMNS, or 120."""
    _PayloadConsole = _payload_console()
    console = _PayloadConsole(highlight=False)
    if console.is_terminal:
        return console
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() and int(columns) >= 40 else PIPE_WIDTH
    return _PayloadConsole(highlight=False, width=width, file=_TrimmedLines(sys.stdout))


class _TrimmedLines:
    """A text stream that drops the blanks rich pads table cells with at the end of each line
    (a file or a pasted report should not carry them)."""

    def __init__(self, stream) -> None:
        self._stream = stream
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        if "\n" in self._pending:
            done, self._pending = self._pending.rsplit("\n", 1)
            self._stream.write("\n".join(line.rstrip(" ") for line in done.split("\n")) + "\n")
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._stream.write(self._pending)
            self._pending = ""
        self._stream.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._stream.fileno()


@contextlib.contextmanager
def payload() -> Iterator[None]:
    """Write the payload; when the reader goes away (`| head`, a closed pager), stop quietly.

    Later writes go to /dev/null, so nothing complains at exit and the command still ends with
    the exit code its result calls for.
    """
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        quiet_stdout()


def quiet_stdout() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)
