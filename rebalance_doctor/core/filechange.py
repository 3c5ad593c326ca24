"""Whether a file changed under its reader: cut short in place (logrotate's copytruncate) or
replaced by another file at its path (a rename rotation, an editor's save).

A file is planned by its ``Identity`` (device, inode, size) when it is found; the reader opens it
and, at the end of each read, ``check`` compares the planned identity with the file it holds open
and with what the path names now. Growth is what logs do and is never a change. The follow mode
asks the same question (``compare``) on every poll to decide to reopen a file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

SAME, GREW, SHRANK, REPLACED, REMOVED = "same", "grew", "shrank", "replaced", "removed"


@dataclass(frozen=True)
class Identity:
    """What a file was: the device and inode that name it, and its size then."""

    dev: int
    ino: int
    size: int

    @classmethod
    def of(cls, info: os.stat_result) -> "Identity":
        return cls(info.st_dev, info.st_ino, info.st_size)


def identity(path: str) -> Identity | None:
    """The file a path names now (following links); None when it names nothing."""
    try:
        return Identity.of(os.stat(path))
    except (OSError, ValueError):
        return None


def compare(before: Identity, now: Identity | None) -> str:
    """``SAME``, ``GREW``, ``SHRANK``, ``REPLACED`` (another file at the path) or ``REMOVED``."""
    if now is None:
        return REMOVED
    if (now.dev, now.ino) != (before.dev, before.ino):
        return REPLACED
    if now.size < before.size:
        return SHRANK
    return GREW if now.size > before.size else SAME


@dataclass(frozen=True)
class Change:
    """A change met while a piece of a file was read: ``lost`` bytes of it never read, said in
    ``message``; ``reason`` is the accounting's name for the loss."""

    reason: str      # SHRANK or REPLACED (input lost), REMOVED (a note: nothing was lost)
    lost: int
    message: str


def check(planned: Identity, path: str, held: Identity | None, reached: int, start: int = 0,
          end: int | None = None, first: bool = True) -> Change | None:
    """What changed while the bytes [start, end) of the file planned as ``planned`` were read
    (end None: to its planned end) through an open file now ``held`` (its ``fstat``), whose reads
    ``reached`` that offset. ``first``: this piece is the file's first (a replacement's new
    content is counted once per file, by it).

    - the file held is not the one planned (replaced before it was opened): none of the piece
      is the planned file's, all of it is lost;
    - the file held is now shorter than the piece's planned end and the reads stopped before
      it: the rest was cut away (copytruncate) before it could be read;
    - the path names another file now: what was read is the file as it was, and the new file's
      content was not read.
    """
    planned_end = planned.size if end is None else min(end, planned.size)
    want = max(0, planned_end - start)
    if held is None or (held.dev, held.ino) != (planned.dev, planned.ino):
        return Change(REPLACED, want, f"replaced before it was read: the file at this path is not the one "
                                      f"found ({want:,} bytes of it not read)")
    if held.size < planned_end and reached < planned_end:
        lost = planned_end - max(start, reached)
        return Change(SHRANK, lost, f"cut short while it was read (copytruncate?): {planned.size:,} bytes when "
                                    f"found, {held.size:,} at the end of the read; {lost:,} bytes not read")
    now = identity(path)
    change = compare(planned, now)
    if change == REMOVED:  # rotated away or deleted: every byte was read from the open file
        return Change(REMOVED, 0, "removed while it was read; what was read is the file as found, whole")
    if change == REPLACED and now is not None:
        lost = now.size if first else 0
        return Change(REPLACED, lost, f"replaced while it was read by another file ({now.size:,} bytes, not "
                                      f"read); what was read is the file as found")
    return None


__all__ = ["Change", "GREW", "Identity", "REMOVED", "REPLACED", "SAME", "SHRANK", "check", "compare", "identity"]
