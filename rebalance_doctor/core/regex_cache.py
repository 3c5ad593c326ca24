"""Compiled pattern regexes, kept in the user's cache directory (``cache``).

``regex.compile`` parses a pattern in pure Python: the ~830 regexes of the shipped packs take
~0.45 s, paid by every command and, with ``--jobs N``, by every worker again; the layouts' ~80
another ~0.1 s. A compiled ``regex`` pattern pickles as its compiled code, and unpickling it
only builds the matcher (all of them in ~10 ms), so each set of regexes a load asks for is kept
as one pickle, named by the SHA-256 of the ``regex`` and Python versions, the flags and the
sources. The pickle carries its own SHA-256, and while it is read the only callable it may name
is ``regex``'s own pattern constructor: a file someone else put there cannot run anything else.
"""

from __future__ import annotations

import hashlib
import io
import pickle
import sys
from collections.abc import Iterable
from typing import AnyStr

import regex

from .cache import cache_file, store

_FORMAT = "regex-1"  # bump when what is cached changes
_CONSTRUCTOR = ("regex._regex", "compile")


def compiled_regexes(sources: Iterable[AnyStr], flags: int = 0) -> dict[AnyStr, "regex.Pattern"] | None:
    """Every source that compiles, compiled with ``flags``; None when there is no cache to keep
    them in. The sources are all text or all bytes.

    Without a cache the caller compiles on first use instead: most runs reach only some regexes.
    """
    wanted = sorted(set(sources))
    key = hashlib.sha256(f"{_FORMAT}\0{regex.__version__}\0{sys.version}\0{flags}\0".encode())
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
        payload = pickle.dumps(found, protocol=pickle.HIGHEST_PROTOCOL)
        store(target, hashlib.sha256(payload).digest() + payload)
    return found


class _PatternsOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) != _CONSTRUCTOR:
            raise pickle.UnpicklingError(f"{module}.{name} is not a compiled regex")
        return super().find_class(module, name)


def _read(target, wanted: list) -> dict | None:
    try:
        raw = target.read_bytes()
    except OSError:
        return None
    digest, payload = raw[:32], raw[32:]
    if hashlib.sha256(payload).digest() != digest:
        return None  # damaged: its compiled code must not reach the regex engine
    try:
        found = _PatternsOnly(io.BytesIO(payload)).load()
    except Exception:  # whatever a foreign or damaged pickle raises, the cure is to compile
        return None
    if not isinstance(found, dict) or not set(found) <= set(wanted) or not all(
            isinstance(p, regex.Pattern) and p.pattern == s for s, p in found.items()):
        return None
    return found
