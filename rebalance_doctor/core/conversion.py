"""Compile a log4j / log4j2 / logback conversion pattern (``[%d] %p %m (%c)%n``) into regexes.

A pattern yields two regexes: ``start`` matches the first line of a record up to where the
message begins (it tells record starts from continuation lines), and ``full`` matches a whole
joined record and captures ts, level, thread, logger, mdc and msg.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AnyStr

import regex

TS_ISO = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[,.]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?"
LOGGER = r"[A-Za-z_$][\w$]*(?:\.[\w$]+)+"
LEVEL = r"TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|SEVERE|FINE|CONFIG"

_NAMED_DATE_FORMATS = {
    "ISO8601": TS_ISO,
    "DEFAULT": TS_ISO,
    "ISO8601_BASIC": r"\d{8}T\d{6}[,.]\d+",
    "ABSOLUTE": r"\d\d:\d\d:\d\d[,.]\d+",
    "DATE": r"\d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d[,.]\d+",
    "UNIX_MILLIS": r"\d{13}",
    "UNIX": r"\d{10}",
}

# Conversion words grouped by what they render; aliases from log4j 1, log4j2 and logback.
_WORDS = {
    "date": ("d", "date"),
    "level": ("p", "le", "level"),
    "logger": ("c", "lo", "logger", "C", "class"),
    "thread": ("t", "thread", "tn", "threadName"),
    "message": ("m", "msg", "message"),
    "newline": ("n",),
    "mdc": ("X", "mdc", "MDC"),
    "ndc": ("x", "NDC", "ndc"),
    "line": ("L", "line"),
    "method": ("M", "method"),
    "file": ("F", "file"),
    "pid": ("pid", "PID", "processId"),
    "relative": ("r", "relative"),
    "throwable": ("ex", "exception", "throwable", "wEx", "xEx", "rEx", "xException"),
}
_WORD_KIND = {alias: kind for kind, aliases in _WORDS.items() for alias in aliases}
_TOKEN = regex.compile(
    r"%(?P<pad>-?\d*(?:\.-?\d+)?)(?P<word>[A-Za-z]+)(?:\{(?P<opt>[^}]*)\})*"
    r"|\$\{(?P<var>[^}]+)\}"
    r"|(?P<lit>[^%$]+|\$|%%)"
)
_WRAPPERS = regex.compile(r"%(?:clr|highlight|style|green|red|blue|yellow|magenta|cyan|faint)\(|\)\{[^}]*\}")


class ConversionError(ValueError):
    pass


@dataclass(frozen=True)
class CompiledPattern:
    start: str
    full: str
    time_only: bool


def _date_regex(option: str | None) -> tuple[str, bool]:
    if not option:
        return TS_ISO, False
    option = option.strip().strip("'\"")
    if option in _NAMED_DATE_FORMATS:
        return _NAMED_DATE_FORMATS[option], option == "ABSOLUTE"
    out, i = [], 0
    while i < len(option):
        ch = option[i]
        j = i
        while j < len(option) and option[j] == ch:
            j += 1
        run = j - i
        if ch == "'":
            end = option.find("'", i + 1)
            out.append(regex.escape(option[i + 1:end if end > 0 else None]))
            i = (end + 1) if end > 0 else len(option)
            continue
        if ch in "yMdHhmsSkK":
            out.append(r"\d{%d,%d}" % (1 if run < 3 else run, max(run, 4 if ch == "y" else 2)) if ch != "S"
                       else r"\d{1,9}")
            if ch == "M" and run >= 3:
                out[-1] = r"[A-Za-z]+"
        elif ch in "XZz":
            out.append(r"(?:Z|[+-]\d\d:?\d\d|[A-Z]{2,5})")
        elif ch in "aE":
            out.append(r"[A-Za-z]+")
        else:
            out.append(regex.escape(option[i:j]))
        i = j
    has_date = any(c in option for c in "yd")
    return "".join(out), not has_date


def compile_conversion(pattern: str, check: bool = True) -> CompiledPattern:
    """Turn a conversion pattern into start/full regex sources (compiled once to check them
    unless ``check`` is false: the caller then compiles them itself)."""
    text = _WRAPPERS.sub("", pattern).rstrip()
    if text.endswith("%n"):
        text = text[:-2]
    parts: list[str] = []
    seen_message = False
    start_parts: list[str] | None = None
    time_only = False
    used: set[str] = set()
    for m in _TOKEN.finditer(text):
        if m["lit"] is not None:
            lit = "%" if m["lit"] == "%%" else m["lit"]
            parts.append(_literal(lit))
            continue
        if m["var"] is not None:  # ${PID} and friends in Spring Boot patterns
            parts.append(_VAR)
            continue
        kind = _WORD_KIND.get(m["word"])
        if kind is None:
            parts.append(r"[^\n]*?")
            continue
        padded = bool(m["pad"])
        if kind == "date":
            rx, time_only = _date_regex(m["opt"])
            parts.append(_group("ts", rx, used))
        elif kind == "level":
            parts.extend([_group("level", LEVEL, used)] + ([_PAD] if padded else []))
        elif kind == "logger":
            parts.extend([_group("logger", r"[\w$.\[\]~]+" if padded else LOGGER, used)]
                         + ([_PAD] if padded else []))
        elif kind == "thread":
            # Padding spaces are part of the (lazy) thread and stripped from it: a " *" after
            # it could take the same spaces (regex_lint).
            parts.append(_group("thread", r"[^\n]*?", used))
        elif kind == "message":
            start_parts = list(parts)
            seen_message = True
            parts.append(_group("msg", r".*?", used))
        elif kind == "mdc":
            parts.append(_group("mdc", r"[^\n]*?", used))
        elif kind in ("line", "relative", "pid"):
            parts.append(_NUMBER)
        elif kind in ("method", "file"):
            parts.append(_VAR)
        elif kind == "ndc":
            # Empty in log4j 1 (""), "[]" in log4j2: never let it run on to a later " - ".
            parts.append(_NDC)
        elif kind in ("newline", "throwable"):
            continue
    if not seen_message or start_parts is None:
        raise ConversionError(f"layout {pattern!r} has no message conversion (%m)")
    if not any(p.startswith("(?P<ts>") for p in start_parts):
        # A layout whose timestamp follows the message cannot tell record starts apart.
        time_rx = next((p for p in parts if p.startswith("(?P<ts>")), None)
        if time_rx is None:
            raise ConversionError(f"layout {pattern!r} has no date conversion (%d)")
    start = "^" + "".join(_unambiguous(start_parts))
    full = "^" + "".join(_unambiguous(parts)) + r"(?P<rest>\n.*)?\Z"
    # The message is lazy only when something follows it on its line; otherwise take it all.
    if full.endswith(r"(?P<msg>.*?)(?P<rest>\n.*)?\Z"):
        full = full[: -len(r"(?P<msg>.*?)(?P<rest>\n.*)?\Z")] + r"(?P<msg>.*)\Z"
    else:
        full = full.replace(r"(?P<rest>\n.*)?\Z", r"(?=\n|\Z)(?P<rest>\n.*)?\Z")
    if check:
        checked_compile(pattern, start)
        checked_compile(pattern, full, regex.DOTALL)
    return CompiledPattern(start=start, full=full, time_only=time_only)


def checked_compile(pattern: str, source: AnyStr, flags: int = 0) -> "regex.Pattern[AnyStr]":
    """Compile a regex made from the conversion pattern ``pattern``, or say which layout broke."""
    try:
        return regex.compile(source, flags)
    except regex.error as exc:
        raise ConversionError(f"layout {pattern!r} compiles to an invalid regex: {exc}") from exc


_PAD = r" *"                       # the spaces a padded field (%-5p) may add
_VAR = r"\S*"                      # ${PID}, %M, %F: may be empty
_NUMBER = r"(?:\d+|\?)?"            # %L, %r, %pid
_NDC = r"(?:\[[^\]\n]*\])?"          # %x
_OPTIONAL = {_VAR: r"\S+", _NUMBER: r"(?:\d+|\?)", _NDC: r"\[[^\]\n]*\]"}  # each when not empty


def _unambiguous(parts: list[str]) -> list[str]:
    """The parts with no two repeats of spaces in a row: `` * +`` (padding, then a separator)
    or `` +\\S* +`` (an empty ${PID} between separators) try every split of a run of spaces,
    which on a padded line of a few KB takes seconds (regex_lint rejects both)."""
    parts = list(parts)
    out: list[str] = []
    for i, part in enumerate(parts):
        following = parts[i + 1] if i + 1 < len(parts) else ""
        if part == _PAD and following.startswith(" +"):
            continue  # the separator takes the padding too
        if part in _OPTIONAL and out and out[-1].endswith(" +") and following.startswith(" +"):
            out.append(f"(?:{_OPTIONAL[part]} +)?")  # the value with its separator, or neither
            parts[i + 1] = following[2:]
            continue
        out.append(part)
    return out


def _group(name: str, body: str, used: set[str]) -> str:
    if name in used:
        return f"(?:{body})"
    used.add(name)
    return f"(?P<{name}>{body})"


def _literal(text: str) -> str:
    out = []
    for chunk in regex.split(r"( +)", text):
        if not chunk:
            continue
        out.append(r" +" if chunk.startswith(" ") else regex.escape(chunk))
    return "".join(out)
