"""The user's cache directory: derived data that only saves start-up time.

What is kept there is named by a hash of everything it was derived from, so a changed input is
simply a file not found; a cache that cannot be read or written is ignored.
``$REBALANCE_DOCTOR_CACHE`` moves it (default ``$XDG_CACHE_HOME/rebalance-doctor`` or
``~/.cache/rebalance-doctor``); ``REBALANCE_DOCTOR_CACHE=off`` turns it off.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

CACHE_VARIABLE = "REBALANCE_DOCTOR_CACHE"


def cache_dir() -> Path | None:
    setting = os.environ.get(CACHE_VARIABLE)
    if setting == "off":
        return None
    if setting:
        return Path(setting)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rebalance-doctor"


def cache_file(name: str) -> Path | None:
    directory = cache_dir()
    return None if directory is None else directory / name


def store(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target``; failing to is not an error."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # Written aside then renamed: a concurrent reader never sees half a file.
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=target.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temporary, target)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        pass
