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
