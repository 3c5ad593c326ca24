"""TOML loading with file-and-line error messages (tomllib is in the standard library).

tomllib is pure Python: the shipped packs (~800 KB) take ~0.2 s to parse, paid by every command
and every worker process. What a file parsed to is therefore kept as JSON (read ~20x faster),
named by the SHA-256 of the file's bytes, in ``$REBALANCE_DOCTOR_CACHE`` or the user's cache
directory. An edited file has another hash and is parsed again; a cache that cannot be read or
written is ignored. ``REBALANCE_DOCTOR_CACHE=off`` turns it off.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CACHE_VARIABLE = "REBALANCE_DOCTOR_CACHE"
_CACHE_FORMAT = "toml-1"  # bump when what is cached changes


class DataFileError(ValueError):
    """A data file (pack, layouts, thresholds) that cannot be used, with where and why."""


def load_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
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


def _cache_dir() -> Path | None:
    setting = os.environ.get(CACHE_VARIABLE)
    if setting == "off":
        return None
    if setting:
        return Path(setting)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rebalance-doctor"


def _cache_file(raw: bytes) -> Path | None:
    directory = _cache_dir()
    if directory is None:
        return None
    digest = hashlib.sha256(raw).hexdigest()
    return directory / f"{_CACHE_FORMAT}-{digest}.json"


def _store(target: Path, data: dict) -> None:
    try:
        text = json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError):
        return  # a TOML date or time: JSON cannot keep it, so this file is always parsed
    if json.loads(text) != data:
        return  # JSON would give back something else (e.g. a non-finite float)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # Written aside then renamed: a concurrent reader never sees half a file.
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=target.name, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, target)
    except OSError:
        pass
