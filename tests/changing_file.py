"""Run the command line with one input file changed under its reader, at a set point of the read.

    python tests/changing_file.py ACTION PATH AFTER_BYTES -- rebalance-doctor ARGS...

ACTION is ``TERM``, ``HUP`` or ``INT`` (that signal sent to the process group, as a CI cancel,
a closed terminal or Ctrl-C sends it; run it in a session of its own), ``truncate`` (logrotate's copytruncate: the file cut to 0 bytes in place) or
``replace`` (a rename rotation: PATH moved to PATH.1 and a new small file created at PATH).
The change is made once, from inside the read: when a stream the reader opened on PATH has given
AFTER_BYTES bytes (the reader reads 64 KiB chunks here, so the rest is still to come). No
sleeps: the point in the read is exact. Worker processes (--jobs) are forked and inherit the
hook; a marker file makes the change happen once across them.
"""

from __future__ import annotations

import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the tree under test

from rebalance_doctor.core import reader, sources

action, path, after = sys.argv[1], os.path.realpath(sys.argv[2]), int(sys.argv[3])
# Ctrl-C at a terminal: a run started from a background job (`nohup ... &`, as a CI runner may start the suite)
# inherits SIGINT ignored, and Python then keeps it ignored; the command line under test is run as at a terminal.
signal.signal(signal.SIGINT, signal.default_int_handler)
marker = path + ".changed"
reader.CHUNK_BYTES = 64 << 10   # many reads per file, so that the change lands in the middle
opened = sources.Source.open


def change() -> None:
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return
    if action in ("TERM", "HUP", "INT"):   # a CI cancel, a closed terminal, Ctrl-C: to the whole group
        os.killpg(os.getpgrp(), getattr(signal, "SIG" + action))
    elif action == "truncate":
        os.truncate(path, 0)
    else:
        os.rename(path, path + ".1")
        with open(path, "w") as new:
            new.write("[2024-05-01 13:45:12,345] INFO a line of the new file\n")


def open_watched(self):
    stream = opened(self)
    if self.path is None or os.path.realpath(self.path) != path:
        return stream
    read, given = stream.read, [0]

    def watched(size=-1):
        data = read(size)
        given[0] += len(data)
        if given[0] >= after:
            change()
        return data

    stream.read = watched
    return stream


sources.Source.open = open_watched
sys.argv = ["rebalance-doctor", *sys.argv[sys.argv.index("--") + 2:]]
from rebalance_doctor.cli.app import main  # noqa: E402

main()
