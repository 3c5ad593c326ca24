"""TOML loading with file-and-line error messages (tomllib is in the standard library).

tomllib is pure Python: the shipped packs and layouts (1.2 MB with the client packs) take
~0.11 CPU-s to parse, paid by every command and every worker process; what a file parsed to
is therefore kept as JSON (read in ~0.01 s), named by the SHA-256 of the file's bytes and
sealed like every entry of the user's cache (``cache``): an edited data file has another hash
and is parsed again, and an entry edited by hand does not verify and is parsed again, with a
note.
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

from . import cache
from .paths import read_bytes

_CACHE_FORMAT = "toml-2"  # bump when what is cached changes (2: sealed)


class DataFileError(ValueError):
    """A data file (pack, layouts, thresholds) that cannot be used, with where and why."""


def load_toml(path: Path) -> dict:
    try:
        raw = read_bytes(path)
    except OSError as exc:
        raise DataFileError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    entry = cache.cache_file(f"{_CACHE_FORMAT}-{hashlib.sha256(raw).hexdigest()}.json")
    if entry is not None:
        sealed = cache.load(entry)
        if sealed is not None:
            try:
                return json.loads(sealed)
            except ValueError:
                pass  # sealed by us yet unreadable (a format of another version): parse again
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DataFileError(f"{path}: invalid TOML: not UTF-8 ({exc})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise DataFileError(f"{path}: invalid TOML: {exc}") from exc
    if entry is not None:
        _store(entry, data)
    return data


def _store(entry: Path, data: dict) -> None:
    try:
        text = json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError):
        return  # a TOML date or time: JSON cannot keep it, so this file is always parsed
    if json.loads(text) != data:
        return  # JSON would give back something else (e.g. a non-finite float)
    cache.store(entry, text.encode("utf-8"))
