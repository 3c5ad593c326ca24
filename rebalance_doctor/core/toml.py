"""TOML loading with file-and-line error messages (tomllib is in the standard library)."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class DataFileError(ValueError):
    """A data file (pack, layouts, thresholds) that cannot be used, with where and why."""


def load_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise DataFileError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise DataFileError(f"{path}: invalid TOML: {exc}") from exc
