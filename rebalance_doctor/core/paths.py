"""Where the shipped data lives: patterns/ inside an installed wheel, or the source tree's."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def patterns_dir() -> Path:
    """The shipped patterns/ directory: REBALANCE_DOCTOR_PATTERNS, else the copy a wheel carries
    inside the package, else the source tree's (an editable install)."""
    override = os.environ.get("REBALANCE_DOCTOR_PATTERNS")
    if override:
        return Path(override)
    for candidate in (PACKAGE_ROOT / "patterns", PACKAGE_ROOT.parent / "patterns"):
        if (candidate / "layouts.toml").is_file():
            return candidate
    raise FileNotFoundError(
        "cannot find the patterns/ directory; install rebalance-doctor from its source tree "
        "(pip install -e .) or set REBALANCE_DOCTOR_PATTERNS")


def read_bytes(path: Path) -> bytes:
    """A file's bytes; also a data file of the package when it is imported from a zip.

    Spark executors import the package from the zip the driver ships (engines/shipping.py), so
    ``Path(__file__).with_name(...)`` names a member of that zip, not a file.
    """
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except NotADirectoryError:
        import zipfile  # only on executors: not worth its import time in every command

        for archive in Path(path).parents:
            if archive.is_file() and zipfile.is_zipfile(archive):
                member = Path(path).relative_to(archive).as_posix()
                with zipfile.ZipFile(archive) as opened:
                    try:
                        return opened.read(member)
                    except KeyError:
                        raise FileNotFoundError(2, "No such file or directory", str(path)) from None
        raise
