"""The Java/Scala type of each template argument, read at the log call in Kafka's source.

A template's ``{}`` is filled with ``String.valueOf`` of a source expression (``params`` in the
inventory): a ``MemberMetadata``, a Scala ``Option``, a ``SortedSet<TopicPartition>``, an
``Errors``... The realistic renderer (``values.py``) prints each argument the way its type
prints, so it needs that type. ``argtypes.toml`` holds it per class and expression:

* ``[[arg]]`` rows are read from Kafka's source by ``python -m rebalance_doctor.packgen.argtypes
  --refresh`` (it needs the git mirrors of apache/kafka and a fork with the 4.x tags): the
  declaration of the expression's root (a local, a parameter, a field) and the accessors after it;
* ``[[override]]`` rows are what a reading of the source found where that is not enough (Scala
  ``val x = ...`` without a type, chained calls); they win, and a refresh keeps them.

An expression without a row prints as its kind's default type (``values.DEFAULT_TYPES``).
"""

from __future__ import annotations

import argparse
import functools
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import regex

from ..core.packs import version_in_range
from ..core.toml import load_toml
from .inventory import VERSIONS, Row, load_rows

TABLE = Path(__file__).with_name("argtypes.toml")
MIRRORS = Path("/work/.mirror")
# Where each inventory release is read (commit or tag, in which mirror). 3.9.0's tag is in
# neither mirror: its release branch's 3.9.1 tag stands in (the log calls did not change).
SOURCES = {
    "2.4.0": ("apache+kafka", "2.4.0"), "2.8.0": ("apache+kafka", "2.8.0"), "3.0.0": ("apache+kafka", "3.0.0"),
    "3.3.1": ("apache+kafka", "3.3.1"), "3.6.0": ("apache+kafka", "3.6.0"), "3.9.0": ("aiven+inkless", "3.9.1"),
    "4.0.0": ("aiven+inkless", "4.0.0"), "4.1.0": ("aiven+inkless", "4.1.0"),
    "4.2.0": ("aiven+inkless", "a18251bae0b825c69794a50dffd4c3100cf5ca5b"),
}


@dataclass(frozen=True)
class ArgType:
    cls: str
    expr: str
    type: str
    kafka: str = ">=0"
    template: str | None = None     # only for this template (the class passes the name with other types elsewhere)


def normalise(expression: str) -> str:
    return " ".join(expression.split())


@functools.lru_cache(maxsize=1)
def _table() -> dict[tuple[str, str], list[ArgType]]:
    data = load_toml(TABLE) if TABLE.is_file() else {}
    table: dict[tuple[str, str], list[ArgType]] = defaultdict(list)
    # Overrides first: the first row whose range holds the version wins.
    for section in ("override", "arg"):
        for entry in data.get(section, []):
            table[(entry["class"], entry["expr"])].append(
                ArgType(entry["class"], entry["expr"], entry["type"], entry.get("kafka", ">=0"), entry.get("template")))
    return table


def type_of(row: Row, expression: str) -> str | None:
    """The type of ``expression`` at ``row``'s log call, or None when the table does not say."""
    for entry in _table().get((row.cls, normalise(expression)), []):
        if entry.template not in (None, row.template, row.variant_of, row.base_template):
            continue
        if version_in_range(row.version, entry.kafka):
            return entry.type
    return None


# ---------------------------------------------------------------------------------------------
# Reading the types from Kafka's source (a developer's command: it needs the mirrors).

_JAVA_DECL = (r"(?:final\s+)?(?P<type>[A-Z][\w.]*(?:<(?:[^<>;=()]|<[^<>;=()]*>)*>)?(?:\[\])?|int|long|short|boolean"
              r"|double|float|byte|char)\s+{name}\s*(?:[=;,):]|$)")
_SCALA_DECL = r"\b{name}\s*:\s*(?P<type>[\w.]+(?:\[(?:[^\[\]=]|\[[^\[\]=]*\])*\])?)\s*(?:[=,)]|$)"
_SCALA_UNTYPED = r"\b(?:val|var)\s+{name}\s*=|\b{name}\s*<-|\(?\b{name}\)?\s*=>|\bcase\s+{name}\b|\bcase\s+\w+\({name}\b"
_JAVA_UNTYPED = r"\bvar\s+{name}\s*=|\(?\b{name}\)?\s*->"
# Accessors after the root, by what they do to its type. First match wins.
_ACCESSORS: list[tuple[str, str]] = [
    (r"^\.(?:getMessage|message|errorMessage|description|getName|name|getSimpleName|memberId|groupId|"
     r"clientId|worker|fullyQualifiedMethodName|codeName|methodName)\(\)", "String"),
    (r"^\.(?:message|memberId|groupId|clientId|protocolName|protocolType)\b(?!\()", "String"),
    (r"^\.(?:size|numMembers|generationId|memberEpoch|groupEpoch|localEpoch|offset|delay|partition|epoch)"
     r"(?:\(\))?", "int"),
    (r"^\.toString\(\)", "@same"),
    (r"^\.get\(\)", "@optional-inner"),
    (r"^\.get\b(?!\()", "@option-inner"),
    (r"^\.orElse\([^)]*\)", "@optional-inner"),
    (r"^\.keySet(?:\(\))?", "@key-set"),
]


@functools.lru_cache(maxsize=None)
def source_lines(version: str, path: str) -> tuple[str, ...] | None:
    repo, ref = SOURCES[version]
    try:
        out = subprocess.run(["git", "-C", str(MIRRORS / repo / "repo"), "show", f"{ref}:{path}"],
                             capture_output=True, text=True, check=True).stdout
    except (subprocess.CalledProcessError, FileNotFoundError):
        return None
    return tuple(out.split("\n"))


# A method's first line: at a class body's indentation, a name and its opening parenthesis (Scala
# "def"), not a statement.
_METHOD_HEAD = regex.compile(r"^ {2,4}(?! )(?!(?:if|for|while|switch|return|catch|else|try|log|info|debug|warn|error|"
                             r"trace|throw|new|val|var|case|super|this)\b)(?:[\w@<>\[\], .?]+?\s)?"
                             r"(?:def\s+\w+|\w+\s*\()(?!.*;\s*$)")
_FIELD_INDENT = regex.compile(r"^(?:    |  )(?! )")


def declared_type(lines: tuple[str, ...], line_no: int, name: str, scala: bool) -> str | None:
    """The declared type of ``name`` at the log call: in the enclosing method (its locals, lambda and
    loop variables and parameters), else among the class's fields, else nearest anywhere in the file.
    None when the binding found states no type (a Scala ``val x = ...``, a lambda parameter)."""
    escaped = regex.escape(name)
    pattern = regex.compile((_SCALA_DECL if scala else _JAVA_DECL).replace("{name}", escaped))
    untyped = regex.compile((_SCALA_UNTYPED if scala else _JAVA_UNTYPED).replace("{name}", escaped))

    def at(i: int) -> tuple[bool, str | None]:
        text = lines[i].strip()
        if text.startswith(("//", "*", "/*", "import ")):
            return False, None
        m = pattern.search(text)
        if m:
            return True, m.group("type")
        if untyped.search(text):
            return True, None
        return False, None

    last = min(line_no, len(lines)) - 1
    head = last
    while head > 0 and not _METHOD_HEAD.match(lines[head]):
        head -= 1
    # The method's header may span lines (its parameters): read until its opening brace or '='.
    header_end = head
    while header_end < last and not regex.search(r"[{=]\s*$", lines[header_end]):
        header_end += 1
    for i in list(range(last, head - 1, -1)):
        found, t = at(i)
        if found:
            return t
    for i in range(len(lines)):
        if _FIELD_INDENT.match(lines[i]) and not (head <= i <= header_end):
            found, t = at(i)
            if found and t is not None:
                return t
    for i in list(range(head - 1, -1, -1)) + list(range(last + 1, len(lines))):
        found, t = at(i)
        if found:
            return t
    return None


def infer(row: Row, expression: str) -> str | None:
    lines = source_lines(row.version, row.file)
    if lines is None:
        return None
    expr = normalise(expression)
    m = regex.match(r"(?:this\.)?([A-Za-z_]\w*)", expr)
    if not m or "?" in expr or " " in expr:
        return None
    root_type = declared_type(lines, row.line, m.group(1), row.file.endswith(".scala"))
    if root_type is None:
        return None
    rest, current = expr[m.end():], root_type
    while rest:
        for pattern, effect in _ACCESSORS:
            found = regex.match(pattern, rest)
            if found:
                current = _apply(current, effect)
                rest = rest[found.end():]
                break
        else:
            return None
        if current is None:
            return None
    return current


def _apply(current: str, effect: str) -> str | None:
    if effect == "@same":
        return current
    if effect == "@optional-inner":
        m = regex.fullmatch(r"Optional<(.+)>", current)
        return m.group(1) if m else ("int" if current == "OptionalInt" else None)
    if effect == "@option-inner":
        m = regex.fullmatch(r"Option\[(.+)\]", current)
        return m.group(1) if m else None
    if effect == "@key-set":
        m = regex.fullmatch(r"(?:\w+\.)?(?:Hash|Linked|Tree|Sorted)?Map([<\[])(.+?),.*[>\]]", current)
        if not m:
            return None
        return f"Set<{m.group(2)}>" if m.group(1) == "<" else f"Set[{m.group(2)}]"
    return effect


def refresh(rows: list[Row]) -> str:
    """argtypes.toml with its [[arg]] rows read again from the source, its overrides kept. A class
    whose templates pass the same expression with different types gets a row per template."""
    from . import packgen  # the scope of the coverage: in-scope rows only

    data = packgen.settings()
    found: dict[tuple[str, str], dict[str, dict[str, list[str]]]] = defaultdict(lambda: defaultdict(dict))
    for row in rows:
        if not packgen.in_scope(row, data):
            continue
        for param in row.params:
            t = infer(row, param)
            if t is not None:
                found[(row.cls, normalise(param))][row.template].setdefault(t, []).append(row.version)
    keep = TABLE.read_text(encoding="utf-8").split(_GENERATED)[0] if TABLE.is_file() else ""
    out = [keep.rstrip("\n"), "", _GENERATED + " by `python -m rebalance_doctor.packgen.argtypes --refresh`;",
           "# do not edit below this line (add an [[override]] above instead).", ""]
    for (cls, expr), by_template in sorted(found.items()):
        kinds = {frozenset(t) for t in by_template.values()}
        if len(kinds) == 1:
            merged: dict[str, list[str]] = defaultdict(list)
            for types in by_template.values():
                for t, versions in types.items():
                    merged[t].extend(versions)
            out += _entries(cls, expr, None, merged)
        else:
            for template, types in sorted(by_template.items()):
                out += _entries(cls, expr, template, types)
    return "\n".join(out) + "\n"


_GENERATED = "# --- read from the source"


def _entries(cls: str, expr: str, template: str | None, types: dict[str, list[str]]) -> list[str]:
    out = []
    for t, versions in sorted(types.items(), key=lambda kv: min(VERSIONS.index(v) for v in kv[1])):
        out.append("[[arg]]")
        out.append(f"class = {_toml(cls)}\nexpr = {_toml(expr)}\ntype = {_toml(t)}")
        if template is not None:
            out.append(f"template = {_toml(template)}")
        if len(types) > 1:
            out.append(f'kafka = "{_range(sorted(set(versions), key=VERSIONS.index))}"')
    return out


def _range(versions: list[str]) -> str:
    from .packgen import kafka_range

    return kafka_range(versions)


def _toml(text: str) -> str:
    import json

    return json.dumps(text, ensure_ascii=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Read the template arguments' types from Kafka's source.")
    parser.add_argument("--refresh", action="store_true", help="rewrite the [[arg]] rows of argtypes.toml")
    args = parser.parse_args(argv)
    if not args.refresh:
        parser.print_help()
        return 0
    missing = [repo for repo, _ in set(SOURCES.values()) if not (MIRRORS / repo / "repo").is_dir()]
    if missing:
        print(f"cannot read Kafka's source: no git mirror at {', '.join(str(MIRRORS / m / 'repo') for m in missing)}",
              file=sys.stderr)
        return 2
    TABLE.write_text(refresh(load_rows()), encoding="utf-8")
    _table.cache_clear()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
