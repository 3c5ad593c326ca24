"""Where the shipped data lives (the repository's patterns/ directory)."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def patterns_dir() -> Path:
    """The shipped patterns/ directory: REBALANCE_DOCTOR_PATTERNS, else beside the package."""
    override = os.environ.get("REBALANCE_DOCTOR_PATTERNS")
    if override:
        return Path(override)
    for candidate in (PACKAGE_ROOT.parent / "patterns", PACKAGE_ROOT / "patterns"):
        if (candidate / "layouts.toml").is_file():
            return candidate
    raise FileNotFoundError(
        "cannot find the patterns/ directory; install rebalance-doctor from its source tree "
        "(pip install -e .) or set REBALANCE_DOCTOR_PATTERNS")
