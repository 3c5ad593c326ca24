"""TOML loading with file-and-line error messages (tomllib is in the standard library).

Parsing is not cached: all the shipped packs and layouts parse in ~0.09 CPU-s, under what a
cache would be worth (a parsed-TOML cache kept as JSON, until issue 21, saved 0.08 s and could
be edited by hand to change results).
"""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from .paths import read_bytes


class DataFileError(ValueError):
    """A data file (pack, layouts, thresholds) that cannot be used, with where and why."""


def load_toml(path: Path) -> dict:
    try:
        raw = read_bytes(path)
    except OSError as exc:
        raise DataFileError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DataFileError(f"{path}: invalid TOML: not UTF-8 ({exc})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise DataFileError(f"{path}: invalid TOML: {exc}") from exc
