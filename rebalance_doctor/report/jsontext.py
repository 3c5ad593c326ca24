"""JSON text as ``json.dumps(value, indent=2)`` writes it, written a piece at a time, lists given as
iterators included (the report of 50,000 rebalances is never one document nor one string).

Why not ``json.dump``: with an indent, the standard library encodes in pure Python (its C encoder
takes no indent before Python 3.13), through a generator per nesting level: 0.7 of the 2.2 CPU
seconds of the analysis of one group of 10,000 rebalances, and the whole text joined in memory
before it is written. This loop is the same grammar without the generators; ``tests/test_report.py``
checks the two agree byte for byte.
"""

from __future__ import annotations

from json.encoder import encode_basestring_ascii as _string  # the C function where there is one
from typing import Callable, Iterator

_INDENT = "  "
FLUSH_PARTS = 8192  # pieces held between two writes


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == float("inf"):
        return "Infinity"
    if value == -float("inf"):
        return "-Infinity"
    return float.__repr__(value)


def _key(key) -> str:
    if isinstance(key, str):
        return _string(key)
    if isinstance(key, float):
        return _string(_float(key))
    if key is True:
        return '"true"'
    if key is False:
        return '"false"'
    if key is None:
        return '"null"'
    if isinstance(key, int):
        return _string(int.__repr__(key))
    raise TypeError(f"keys must be str, int, float, bool or None, not {key.__class__.__name__}")


def write(value, write: Callable[[str], object]) -> None:
    """Write ``value`` as JSON text with an indent of 2 through ``write``; an iterator (a generator)
    is written as a list, its items made and written one at a time."""
    parts: list[str] = []
    out = parts.append

    def flush() -> None:
        if len(parts) >= FLUSH_PARTS:
            write("".join(parts))
            parts.clear()

    def encode(o, level: int) -> None:
        # The order of the tests is json.encoder's: str, None, True, False, int, float, containers.
        if isinstance(o, str):
            out(_string(o))
        elif o is None:
            out("null")
        elif o is True:
            out("true")
        elif o is False:
            out("false")
        elif isinstance(o, int):
            out(int.__repr__(o))
        elif isinstance(o, float):
            out(_float(o))
        elif isinstance(o, (list, tuple)):
            if not o:
                out("[]")
                return
            inner = "\n" + _INDENT * (level + 1)
            out("[")
            first = True
            for item in o:
                out(inner if first else "," + inner)
                first = False
                encode(item, level + 1)
            out("\n" + _INDENT * level + "]")
        elif isinstance(o, dict):
            if not o:
                out("{}")
                return
            inner = "\n" + _INDENT * (level + 1)
            out("{")
            first = True
            for key, item in o.items():
                out((inner if first else "," + inner) + _key(key) + ": ")
                first = False
                encode(item, level + 1)
            out("\n" + _INDENT * level + "}")
        elif isinstance(o, Iterator):
            inner = "\n" + _INDENT * (level + 1)
            first = True
            for item in o:
                out("[" + inner if first else "," + inner)
                first = False
                encode(item, level + 1)
                flush()
            out("[]" if first else "\n" + _INDENT * level + "]")
        else:
            raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")

    encode(value, 0)
    if parts:
        write("".join(parts))


def dumps(value) -> str:
    """``json.dumps(value, indent=2)``, faster (see the module docstring)."""
    pieces: list[str] = []
    write(value, pieces.append)
    return "".join(pieces)
