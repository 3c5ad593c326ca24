"""TOML loading with file-and-line error messages (tomllib is in the standard library).

tomllib is pure Python: the shipped packs (~800 KB) take ~0.2 s to parse, paid by every command
and every worker process. What a file parsed to is therefore kept as JSON (read ~20x faster),
named by the SHA-256 of the file's bytes, in the user's cache directory (``cache``). An edited
file has another hash and is parsed again.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from .cache import cache_file, store
from .paths import read_bytes

_CACHE_FORMAT = "toml-1"  # bump when what is cached changes


class DataFileError(ValueError):
    """A data file (pack, layouts, thresholds) that cannot be used, with where and why."""


def load_toml(path: Path) -> dict:
    try:
        raw = read_bytes(path)
    except OSError as exc:
        raise DataFileError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    cached = _cache_file(raw)
    if cached is not None:
        try:
            return json.loads(cached.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DataFileError(f"{path}: invalid TOML: not UTF-8 ({exc})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise DataFileError(f"{path}: invalid TOML: {exc}") from exc
    if cached is not None:
        _store(cached, data)
    return data


def _cache_file(raw: bytes) -> Path | None:
    return cache_file(f"{_CACHE_FORMAT}-{hashlib.sha256(raw).hexdigest()}.json")


def _store(target: Path, data: dict) -> None:
    try:
        text = json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError):
        return  # a TOML date or time: JSON cannot keep it, so this file is always parsed
    if json.loads(text) != data:
        return  # JSON would give back something else (e.g. a non-finite float)
    store(target, text.encode("utf-8"))
