"""Compiled pattern regexes, kept in the user's cache directory (``cache``).

``regex.compile`` parses a pattern in pure Python: the ~830 regexes of the shipped packs take
0.3 CPU-s, paid by every process that reaches them (with ``--jobs N`` every worker, when the
parent has not compiled them before forking). A compiled ``regex`` pattern pickles as its
compiled code, and unpickling builds the matcher (all of them in ~10 ms), so each set of
regexes a load asks for is kept as one pickle, named by the SHA-256 of the tool, ``regex`` and
Python versions, the flags and the sources.

Compiled code reaches the regex engine unchecked (a crafted one crashes it), so a pickle is
only loaded when its seal verifies (``cache.load``: an HMAC with a key only this user can read),
and even then the only callable it may name is ``regex``'s own pattern constructor, and every
pattern must come back with the source it was asked for.
"""

from __future__ import annotations

import hashlib
import io
import pickle
import sys
from collections.abc import Iterable
from typing import AnyStr

import regex

from .. import __version__
from .cache import cache_file, load, store

_FORMAT = "regex-2"  # bump when what is cached changes
_CONSTRUCTOR = ("regex._regex", "compile")


def compiled_regexes(sources: Iterable[AnyStr], flags: int = 0) -> dict[AnyStr, "regex.Pattern"] | None:
    """Every source that compiles, compiled with ``flags``; None when there is no cache to keep
    them in. The sources are all text or all bytes.

    Without a cache the caller compiles on first use instead: most runs reach only some regexes.
    """
    wanted = sorted(set(sources))
    key = hashlib.sha256(f"{_FORMAT}\0{__version__}\0{regex.__version__}\0{sys.version}\0{flags}\0".encode())
    for source in wanted:
        raw = b"s" + source.encode() if isinstance(source, str) else b"b" + source
        key.update(len(raw).to_bytes(8, "little") + raw)
    target = cache_file(f"{_FORMAT}-{key.hexdigest()}.pickle")
    if target is None:
        return None
    found = _read(target, wanted)
    if found is None:
        found = {}
        for source in wanted:
            try:
                found[source] = regex.compile(source, flags)
            except regex.error:
                pass  # left to the caller, which reports it where the regex is used
        store(target, pickle.dumps(found, protocol=pickle.HIGHEST_PROTOCOL))
    return found


class _PatternsOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) != _CONSTRUCTOR:
            raise pickle.UnpicklingError(f"{module}.{name} is not a compiled regex")
        return super().find_class(module, name)


def _read(target, wanted: list) -> dict | None:
    payload = load(target)  # None unless its seal verifies
    if payload is None:
        return None
    try:
        found = _PatternsOnly(io.BytesIO(payload)).load()
    except Exception:  # whatever a foreign or damaged pickle raises, the cure is to compile
        return None
    if not isinstance(found, dict) or not set(found) <= set(wanted) or not all(
            isinstance(p, regex.Pattern) and p.pattern == s for s, p in found.items()):
        return None
    return found
